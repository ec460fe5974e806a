package sap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

func releaseJSON(status, block string) string {
	return fmt.Sprintf(`{"d":{"Release":{"__metadata":{"type":"API_SUPPLIERINVOICE_PROCESS_SRV.Release"},
"SupplierInvoice":"5105600102","FiscalYear":"2026","SupplierInvoiceStatus":%q,"PaymentBlockingReason":%q,
"PostingDate":"/Date(%d)/"}}}`, status, block, ms(2026, 11, 24))
}

func TestPostInvoice(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("sap-message", `{"code":"M8/082","message":"Price variance: 8 %","severity":"warning","target":"",
"details":[{"code":"M8/082","message":"dup","severity":"warning","target":""},{"code":"MRM/001","message":"Document posted","severity":"info"}]}`)
		writeJSON(w, 200, releaseJSON("5", "R"))
	})
	c := f.client(Options{})
	got, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "key-1")
	if err != nil {
		t.Fatalf("PostInvoice: got error %v, want nil", err)
	}
	same(t, "posting", got, erp.Posting{
		InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted, PostedAt: day(2026, 11, 24), PaymentBlock: "R",
		Messages: []erp.Message{{ID: "M8/082", Severity: "warning"}, {ID: "MRM/001", Severity: "info"}},
	})

	if n := f.fetchCount(); n != 1 {
		t.Errorf("token fetches: got %d, want 1", n)
	}
	f.mu.Lock()
	fetch := f.requests[0]
	f.mu.Unlock()
	if fetch.method != http.MethodGet || fetch.path != invPath {
		t.Errorf("fetch: got %s %s, want GET %s", fetch.method, fetch.path, invPath)
	}
	r := f.odata()[0]
	if r.method != http.MethodPost || r.path != invPath+"Release" {
		t.Errorf("release: got %s %s, want POST %sRelease", r.method, r.path, invPath)
	}
	if got := r.query["SupplierInvoice"]; !slices.Equal(got, []string{"'5105600102'"}) {
		t.Errorf("SupplierInvoice: got %q, want '5105600102'", got)
	}
	if got := r.query["FiscalYear"]; !slices.Equal(got, []string{"'2026'"}) {
		t.Errorf("FiscalYear: got %q, want '2026'", got)
	}
	if got := r.header.Get("X-CSRF-Token"); got != "tok-1" {
		t.Errorf("token: got %q, want tok-1", got)
	}
	if got := r.header.Get("Cookie"); got != sessionCookie+"=sess-1" {
		t.Errorf("cookie: got %q, want %s=sess-1", got, sessionCookie)
	}
	id := r.header.Get("Repeatability-Request-ID")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("Repeatability-Request-ID: got %q, want 32 hex characters", id)
	}

	// The same key gives the same id, another key another; the token is cached.
	c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "key-1")
	c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "key-2")
	c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	reqs := f.odata()
	if got := reqs[1].header.Get("Repeatability-Request-ID"); got != id {
		t.Errorf("same key: got id %q, want %q", got, id)
	}
	if got := reqs[2].header.Get("Repeatability-Request-ID"); got == id || got == "" {
		t.Errorf("other key: got id %q, want a different non-empty id", got)
	}
	// Without a key the write still gets an id of its own, so the ERP can
	// drop a repeat after a lost answer.
	if got := reqs[3].header.Get("Repeatability-Request-ID"); len(got) != 32 || got == id || got == reqs[2].header.Get("Repeatability-Request-ID") {
		t.Errorf("no key: got %q, want a fresh 32-character id", got)
	}
	if n := f.fetchCount(); n != 1 {
		t.Errorf("token fetches after 4 writes: got %d, want 1", n)
	}
}

func TestPostInvoiceReadsFiscalYear(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, 200, list(invoiceJSON("5105600102", "2026", "A", "")))
			return
		}
		writeJSON(w, 200, releaseJSON("5", ""))
	})
	got, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102"}, "")
	if err != nil {
		t.Fatalf("PostInvoice: got error %v, want nil", err)
	}
	if got.FiscalYear != "2026" || got.Messages != nil || got.PaymentBlock != "" {
		t.Errorf("posting: got %+v, want fiscal year 2026, no messages, no block", got)
	}
	if q := f.odata()[1].query["FiscalYear"]; !slices.Equal(q, []string{"'2026'"}) {
		t.Errorf("FiscalYear: got %q, want '2026'", q)
	}
}

func TestPostInvoiceBadSAPMessageKeepsPosting(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("sap-message", `not json`)
		writeJSON(w, 200, releaseJSON("5", ""))
	})
	got, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	if err != nil || got.Status != erp.InvoicePosted {
		t.Fatalf("got %+v, %v, want a posted invoice and no error", got, err)
	}
}

func TestCSRFRefetchOnce(t *testing.T) {
	tests := []struct {
		name        string
		refuse      int
		wantFetches int
		wantWrites  int
		wantStatus  int // 0 for success
	}{
		{"valid token", 0, 1, 1, 0},
		{"refused once", 1, 2, 2, 0},
		{"refused twice", 2, 2, 2, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, respond(200, releaseJSON("5", "")))
			f.refuse = tt.refuse
			_, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "k")
			if tt.wantStatus == 0 && err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if tt.wantStatus != 0 {
				var up *erp.UpstreamError
				if !errors.As(err, &up) || up.Status != tt.wantStatus || up.Transient || !up.Write {
					t.Fatalf("got %v, want a non-transient write UpstreamError %d", err, tt.wantStatus)
				}
				if !slices.Equal(up.MessageIDs, []string{"/IWFND/CM_COS/001"}) {
					t.Errorf("message ids: got %q, want /IWFND/CM_COS/001", up.MessageIDs)
				}
			}
			if got := f.fetchCount(); got != tt.wantFetches {
				t.Errorf("fetches: got %d, want %d", got, tt.wantFetches)
			}
			if got := len(f.odata()); got != tt.wantWrites {
				t.Errorf("writes: got %d, want %d", got, tt.wantWrites)
			}
			w := f.odata()
			if last := w[len(w)-1]; last.header.Get("X-CSRF-Token") != fmt.Sprintf("tok-%d", tt.wantFetches) {
				t.Errorf("last write token: got %q, want tok-%d", last.header.Get("X-CSRF-Token"), tt.wantFetches)
			}
			if tt.refuse > 0 && w[0].header.Get("Repeatability-Request-ID") != w[1].header.Get("Repeatability-Request-ID") {
				t.Errorf("repeated write changed its Repeatability-Request-ID")
			}
		})
	}
}

func TestCSRFExpiredTokenIsRefetched(t *testing.T) {
	f := newFake(t, respond(200, releaseJSON("5", "")))
	c := f.client(Options{})
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	if _, err := c.PostInvoice(context.Background(), inv, ""); err != nil {
		t.Fatalf("first post: %v", err)
	}
	f.mu.Lock()
	f.tokens = map[string]string{"other": "x"} // every issued token expires
	f.mu.Unlock()
	if _, err := c.PostInvoice(context.Background(), inv, ""); err != nil {
		t.Fatalf("post after expiry: got %v, want nil", err)
	}
	if got := f.fetchCount(); got != 2 {
		t.Errorf("fetches: got %d, want 2", got)
	}
}

func TestCSRFTokenPerService(t *testing.T) {
	f := newFake(t, respond(200, releaseJSON("5", "")))
	c := f.client(Options{})
	c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	// The client posts only to the supplier invoice service; a write to
	// another service goes through the same path with its own token.
	other := func() {
		r := request{
			call:   retry.Call{Service: erp.ServicePurchaseOrder, Operation: "write", Write: true},
			method: http.MethodPost,
			url:    c.url(erp.ServicePurchaseOrder, "A_PurchaseOrder"),
		}
		if _, err := c.write(context.Background(), r, func(http.Header, []byte) error { return nil }); err != nil {
			t.Errorf("write to the purchase order service: %v", err)
		}
	}
	other()
	other()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fetches[invPath] != 1 || f.fetches[poPath] != 1 {
		t.Errorf("fetches: got %v, want one per service", f.fetches)
	}
}

func TestCSRFConcurrentWritesShareOneFetch(t *testing.T) {
	f := newFake(t, respond(200, releaseJSON("5", "")))
	c := f.client(Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent post: got %v, want nil", err)
		}
	}
	if got := f.fetchCount(); got != 1 {
		t.Errorf("fetches: got %d, want 1", got)
	}
}

func TestCSRFWithoutCookieJar(t *testing.T) {
	f := newFake(t, respond(200, releaseJSON("5", "")))
	c := f.client(Options{HTTPClient: &http.Client{}})
	if _, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, ""); err != nil {
		t.Fatalf("PostInvoice without a jar: got %v, want nil", err)
	}
}

func TestCSRFFetchWithoutToken(t *testing.T) {
	f := newFake(t, respond(200, releaseJSON("5", "")))
	f.noToken = true
	_, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || up.Operation != "fetch csrf token" || up.Write || up.Status != 200 {
		t.Fatalf("got %v, want a read UpstreamError from the token fetch", err)
	}
	if n := len(f.odata()); n != 0 {
		t.Errorf("writes: got %d, want 0", n)
	}
}

// alreadyPostedJSON is SAP's answer to a Release of a posted invoice.
const alreadyPostedJSON = `{"error":{"code":"M8/255","message":{"lang":"en","value":"Document 5105600102 2026 has already been posted"},
"innererror":{"transactionid":"7F3A9C2B11D04E0F","errordetails":[
{"code":"M8/255","message":"Document 5105600102 2026 has already been posted","severity":"error","target":""}]}}}`

func TestPostInvoiceAlreadyPosted(t *testing.T) {
	tests := []struct {
		name string
		read func(w http.ResponseWriter) // the answer to the read back
		want erp.Posting
	}{
		{"read back", func(w http.ResponseWriter) { writeJSON(w, 200, list(invoiceJSON("5105600102", "2026", "5", "R"))) },
			erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted, PostedAt: day(2026, 11, 24),
				PaymentBlock: "R", AlreadyPosted: true}},
		// Without the read, the Posting holds what the call knew.
		{"read fails", func(w http.ResponseWriter) { writeJSON(w, 503, `Service Unavailable`) },
			erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted, PostedAt: day(2026, 11, 20),
				AlreadyPosted: true}},
		{"read finds another fiscal year", func(w http.ResponseWriter) {
			writeJSON(w, 200, list(invoiceJSON("5105600102", "2027", "5", "R")))
		}, erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted, PostedAt: day(2026, 11, 20),
			AlreadyPosted: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					tt.read(w)
					return
				}
				writeJSON(w, 400, alreadyPostedJSON)
			})
			inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026", PostingDate: day(2026, 11, 20)}
			got, err := f.client(Options{}).PostInvoice(context.Background(), inv, "key-1")
			if err != nil {
				t.Fatalf("PostInvoice: got error %v, want the posting", err)
			}
			same(t, "posting", got, tt.want)
			// One Release, then one read: nothing is repeated.
			var calls []string
			for _, r := range f.odata() {
				calls = append(calls, r.method+" "+strings.TrimPrefix(r.path, invPath))
			}
			if want := []string{"POST Release", "GET A_SupplierInvoice"}; !slices.Equal(calls, want) {
				t.Errorf("requests: got %q, want %q", calls, want)
			}
		})
	}
}

func TestPostInvoiceOtherRefusalIsAnError(t *testing.T) {
	f := newFake(t, respond(400, v2Object))
	_, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.HasMessage("F5/201") || !up.Write {
		t.Fatalf("got %v, want the ERP's refusal as an UpstreamError", err)
	}
	if n := len(f.odata()); n != 1 {
		t.Errorf("requests: got %d, want the Release alone", n)
	}
}
