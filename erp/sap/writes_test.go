package sap

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// functionJSON is SAP's answer to the function import name: its complex
// result with Success.
func functionJSON(name string, success bool) string {
	typ := map[string]string{functionPost: "PostInvoiceExportParameters", functionRelease: "ReleaseInvoiceExportParameters"}[name]
	return fmt.Sprintf(`{"d":{%q:{"__metadata":{"type":"API_SUPPLIERINVOICE_PROCESS_SRV.%s"},"Success":%t}}}`, name, typ, success)
}

// entityJSON is a single-entity answer, {"d":{...}}.
func entityJSON(entity string) string { return `{"d":` + entity + `}` }

// invoiceKeyPath is the path of the invoice read by its key.
func invoiceKeyPath(id, fy string) string {
	return invPath + "A_SupplierInvoice(SupplierInvoice='" + id + "',FiscalYear='" + fy + "')"
}

// postingSAP answers Post with Success and every read of the invoice with
// it in status and block, by key or as a list.
func postingSAP(status, block string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writeJSON(w, 200, functionJSON(functionPost, true))
			return
		}
		if strings.HasSuffix(r.URL.Path, "A_SupplierInvoice") {
			writeJSON(w, 200, list(invoiceJSON("5105600102", "2026", status, block)))
			return
		}
		writeJSON(w, 200, entityJSON(invoiceJSON("5105600102", "2026", status, block)))
	}
}

// calls lists the requests the fake saw besides token fetches, as
// "METHOD path-below-the-service".
func calls(f *fakeSAP) []string {
	var out []string
	for _, r := range f.odata() {
		out = append(out, r.method+" "+strings.TrimPrefix(r.path, invPath))
	}
	return out
}

func TestPostInvoice(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("sap-message", `{"code":"M8/082","message":"Price variance: 8 %","severity":"warning","target":"",
"details":[{"code":"M8/082","message":"dup","severity":"warning","target":""},{"code":"MRM/001","message":"Document posted","severity":"info"}]}`)
		}
		postingSAP("5", "R")(w, r)
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
	// Post, then the invoice read back by its key.
	if want := []string{"POST Post", "GET A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"}; !slices.Equal(calls(f), want) {
		t.Errorf("requests: got %q, want %q", calls(f), want)
	}
	r := f.odata()[0]
	// Exactly the parameters SAP declares, Edm.String literals in quotes.
	if got, want := r.query, map[string][]string{"SupplierInvoice": {"'5105600102'"}, "FiscalYear": {"'2026'"}}; !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Post parameters: got %q, want %q", got, want)
	}
	if r.body != "" {
		t.Errorf("Post body: got %q, want none", r.body)
	}
	if got := r.header.Get("X-CSRF-Token"); got != "tok-1" {
		t.Errorf("token: got %q, want tok-1", got)
	}
	if got := r.header.Get("Cookie"); got != sessionCookie+"=sess-1" {
		t.Errorf("cookie: got %q, want %s=sess-1", got, sessionCookie)
	}
	// SAP's published specs declare no repeatability header: none is sent,
	// whatever the key.
	for _, h := range []string{"Repeatability-Request-ID", "RequestID", "RepeatabilityCreation"} {
		if got := r.header.Values(h); len(got) != 0 {
			t.Errorf("Post sent %s %q, which SAP's specs do not declare", h, got)
		}
	}
	if read := f.odata()[1]; len(read.query) != 0 {
		t.Errorf("read back: got query %v, want a plain read", read.query)
	}

	// The token is cached.
	c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "key-1")
	c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "key-2")
	c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	if n := f.fetchCount(); n != 1 {
		t.Errorf("token fetches after 4 writes: got %d, want 1", n)
	}
}

func TestPostInvoiceReadsFiscalYear(t *testing.T) {
	f := newFake(t, postingSAP("5", ""))
	got, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102"}, "")
	if err != nil {
		t.Fatalf("PostInvoice: got error %v, want nil", err)
	}
	if got.FiscalYear != "2026" || got.Messages != nil || got.PaymentBlock != "" {
		t.Errorf("posting: got %+v, want fiscal year 2026, no messages, no block", got)
	}
	if want := []string{"GET A_SupplierInvoice", "POST Post", "GET A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"}; !slices.Equal(calls(f), want) {
		t.Errorf("requests: got %q, want %q", calls(f), want)
	}
	if q := f.odata()[1].query["FiscalYear"]; !slices.Equal(q, []string{"'2026'"}) {
		t.Errorf("FiscalYear: got %q, want '2026'", q)
	}
}

// TestPostInvoiceQuotesTheKey: a quote in an id is doubled in the
// parameter and in the key of the read back.
func TestPostInvoiceQuotesTheKey(t *testing.T) {
	f := newFake(t, postingSAP("5", ""))
	if _, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "51'02", FiscalYear: "2026"}, ""); err != nil {
		t.Fatalf("PostInvoice: %v", err)
	}
	reqs := f.odata()
	if got := reqs[0].query["SupplierInvoice"]; !slices.Equal(got, []string{"'51''02'"}) {
		t.Errorf("SupplierInvoice: got %q, want '51''02'", got)
	}
	if want := invoiceKeyPath("51''02", "2026"); reqs[1].path != want {
		t.Errorf("read back: got %s, want %s", reqs[1].path, want)
	}
}

func TestPostInvoiceBadSAPMessageKeepsPosting(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("sap-message", `not json`)
		postingSAP("5", "")(w, r)
	})
	got, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	if err != nil || got.Status != erp.InvoicePosted {
		t.Fatalf("got %+v, %v, want a posted invoice and no error", got, err)
	}
}

// TestPostInvoiceAnswerForms: Post's result reads in the form SAP's API
// description gives, {"d":{"Post":{...}}}, and directly in "d". A 2xx
// answer that does not read so says nothing of the posting: it is settled
// by reading the invoice, and stays a malformed response when the invoice
// is not posted.
func TestPostInvoiceAnswerForms(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"named", functionJSON(functionPost, true), true},
		{"named, no metadata", `{"d":{"Post":{"Success":true}}}`, true},
		{"in d", `{"d":{"__metadata":{"type":"API_SUPPLIERINVOICE_PROCESS_SRV.PostInvoiceExportParameters"},"Success":true}}`, true},
		{"other letter case", `{"d":{"Post":{"success":true}}}`, true},
		{"no Success", `{"d":{"Post":{}}}`, false},
		{"Success null", `{"d":{"Post":{"Success":null}}}`, false},
		{"Success a string", `{"d":{"Post":{"Success":"true"}}}`, false},
		{"Post null", `{"d":{"Post":null}}`, false},
		{"Release's result", functionJSON(functionRelease, true), false},
		{"old Release answer", `{"d":{"Release":{"SupplierInvoice":"5105600102","SupplierInvoiceStatus":"5"}}}`, false},
		{"no d", `{}`, false},
	}
	for _, tt := range tests {
		for _, status := range []string{"5", "A"} {
			t.Run(tt.name+"/read back "+status, func(t *testing.T) {
				f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost {
						writeJSON(w, 200, tt.body)
						return
					}
					postingSAP(status, "")(w, r)
				})
				_, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
				if want := []string{"POST Post", "GET A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"}; !slices.Equal(calls(f), want) {
					t.Errorf("requests: got %q, want %q", calls(f), want)
				}
				var up *erp.UpstreamError
				switch {
				case status == "5":
					if err != nil {
						t.Fatalf("got %v, want the posting", err)
					}
				case tt.ok:
					if !errors.As(err, &up) || !up.Unconfirmed {
						t.Fatalf("got %v, want an unconfirmed posting", err)
					}
				default:
					if !errors.As(err, &up) || up.Text != "malformed response" || up.Status != 200 || !up.Write || up.Unconfirmed {
						t.Fatalf("got %v, want a malformed-response write UpstreamError, known not applied", err)
					}
				}
			})
		}
	}
}

// TestPostInvoiceNotPosted: Success false is a refusal without a message;
// Success with an invoice that reads back unposted is unconfirmed; a read
// back that fails leaves the Posting with what the call knew.
func TestPostInvoiceNotPosted(t *testing.T) {
	ctx := context.Background()
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026", PostingDate: day(2026, 11, 20), PaymentBlock: "H"}

	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			writeJSON(w, 200, functionJSON(functionPost, false))
			return
		}
		postingSAP("5", "")(w, r)
	})
	_, err := f.client(Options{}).PostInvoice(ctx, inv, "")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Write || up.Unconfirmed || up.Transient || up.Status != 200 || up.Keys["invoice_id"] != "5105600102" {
		t.Errorf("Success false: got %#v, want a confirmed, non-transient write UpstreamError", err)
	}
	if want := []string{"POST Post"}; !slices.Equal(calls(f), want) {
		t.Errorf("Success false: requests %q, want %q", calls(f), want)
	}

	for _, st := range []string{"A", "D", "2", "Q", ""} {
		f = newFake(t, postingSAP(st, ""))
		_, err = f.client(Options{}).PostInvoice(ctx, inv, "")
		if !errors.As(err, &up) || !up.Write || !up.Unconfirmed || up.Keys["invoice_id"] != "5105600102" {
			t.Errorf("read back in status %q: got %#v, want an unconfirmed write UpstreamError", st, err)
		}
	}

	f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("sap-message", `{"code":"M8/082","message":"Price variance","severity":"warning"}`)
			writeJSON(w, 200, functionJSON(functionPost, true))
			return
		}
		writeJSON(w, 503, `Service Unavailable`)
	})
	got, err := f.client(Options{}).PostInvoice(ctx, inv, "")
	if err != nil {
		t.Fatalf("read back failing: got %v, want the posting", err)
	}
	same(t, "posting without the read back", got, erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted,
		PostedAt: day(2026, 11, 20), PaymentBlock: "H", Messages: []erp.Message{{ID: "M8/082", Severity: "warning"}}})
}

// TestPostInvoiceLostAnswer: a Post whose connection breaks after it was
// sent is settled by reading the invoice: posted is success, with what the
// posting set. Not posted, it may still be posting: the invoice is read
// again until the Post's time is up, and then the posting is unconfirmed,
// never sent again.
func TestPostInvoiceLostAnswer(t *testing.T) {
	hijack := func(w http.ResponseWriter) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}
	for _, tt := range []struct {
		status string
		posted bool
	}{{"5", true}, {"A", false}} {
		t.Run(tt.status, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					hijack(w)
					return
				}
				postingSAP(tt.status, "R")(w, r)
			})
			got, err := f.client(Options{Runner: retry.New(stillClock(oneAttempt(2*time.Second)), nil)}).
				PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "k")
			if !tt.posted {
				cs := calls(f)
				if len(cs) < 3 || cs[0] != "POST Post" || slices.Contains(cs[1:], "POST Post") {
					t.Errorf("requests: got %q, want the Post once, then reads of the invoice", cs)
				}
				var re *retry.Error
				var up *erp.UpstreamError
				if !errors.As(err, &re) || !re.Unconfirmed || !errors.As(err, &up) || !up.Write {
					t.Fatalf("got %v, want an unconfirmed write", err)
				}
				return
			}
			if want := []string{"POST Post", "GET A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"}; !slices.Equal(calls(f), want) {
				t.Errorf("requests: got %q, want %q", calls(f), want)
			}
			if err != nil {
				t.Fatalf("got %v, want the posting", err)
			}
			same(t, "settled posting", got, erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted,
				PostedAt: day(2026, 11, 24), PaymentBlock: "R"})
		})
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
			f := newFake(t, postingSAP("5", ""))
			f.refuse = tt.refuse
			_, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "k")
			if tt.wantStatus == 0 && err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if tt.wantStatus != 0 {
				var up *erp.UpstreamError
				if !errors.As(err, &up) || up.Status != tt.wantStatus || up.Transient || !up.Write || !up.Config {
					t.Fatalf("got %v, want a non-transient write UpstreamError %d, a fault of configuration", err, tt.wantStatus)
				}
				if !slices.Equal(up.MessageIDs, []string{"/IWFND/CM_COS/001"}) {
					t.Errorf("message ids: got %q, want /IWFND/CM_COS/001", up.MessageIDs)
				}
			}
			if got := f.fetchCount(); got != tt.wantFetches {
				t.Errorf("fetches: got %d, want %d", got, tt.wantFetches)
			}
			var w []seen
			for _, r := range f.odata() {
				if r.method == http.MethodPost {
					w = append(w, r)
				}
			}
			if got := len(w); got != tt.wantWrites {
				t.Errorf("writes: got %d, want %d", got, tt.wantWrites)
			}
			if last := w[len(w)-1]; last.header.Get("X-CSRF-Token") != fmt.Sprintf("tok-%d", tt.wantFetches) {
				t.Errorf("last write token: got %q, want tok-%d", last.header.Get("X-CSRF-Token"), tt.wantFetches)
			}
		})
	}
}

func TestCSRFExpiredTokenIsRefetched(t *testing.T) {
	f := newFake(t, postingSAP("5", ""))
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
	f := newFake(t, postingSAP("5", ""))
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
	f := newFake(t, postingSAP("5", ""))
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
	f := newFake(t, postingSAP("5", ""))
	c := f.client(Options{HTTPClient: &http.Client{}})
	if _, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, ""); err != nil {
		t.Fatalf("PostInvoice without a jar: got %v, want nil", err)
	}
}

// TestCSRFFetchWithoutToken: a system that hands out no token gets the
// write without one; should it still ask for a token, after a second
// fetch, the write is a fault of configuration naming the service, not
// something to retry.
func TestCSRFFetchWithoutToken(t *testing.T) {
	f := newFake(t, postingSAP("5", ""))
	f.noToken = true
	_, err := f.client(Options{}).PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Config || up.Status != http.StatusForbidden || !up.Write || up.Service != erp.ServiceSupplierInvoice {
		t.Fatalf("got %v, want a write UpstreamError 403 of configuration", err)
	}
	if Classify(err, true) != retry.Permanent {
		t.Errorf("classified %v, want permanent", Classify(err, true))
	}
	if e := errmap.Map(err); e.Code != errmap.ERPConfiguration || e.Details["service"] != string(erp.ServiceSupplierInvoice) {
		t.Errorf("mapped to %s %v, want ERP_CONFIGURATION naming the service", e.Code, e.Details)
	}
	if n := f.fetchCount(); n != 2 {
		t.Errorf("fetches: got %d, want 2", n)
	}
	w := f.odata()
	if len(w) != 2 {
		t.Fatalf("writes: got %d, want 2", len(w))
	}
	for _, r := range w {
		if r.method != http.MethodPost || r.header.Values("X-CSRF-Token") != nil {
			t.Errorf("write %s %s sent X-CSRF-Token %q, want none", r.method, r.path, r.header.Values("X-CSRF-Token"))
		}
	}
}

// alreadyPostedJSON is SAP's answer to a Post of a posted invoice.
const alreadyPostedJSON = `{"error":{"code":"M8/255","message":{"lang":"en","value":"Document 5105600102 2026 has already been posted"},
"innererror":{"transactionid":"7F3A9C2B11D04E0F","errordetails":[
{"code":"M8/255","message":"Document 5105600102 2026 has already been posted","severity":"error","target":""}]}}}`

func TestPostInvoiceAlreadyPosted(t *testing.T) {
	tests := []struct {
		name string
		read func(w http.ResponseWriter) // the answer to the read back
		want erp.Posting
	}{
		{"read back", func(w http.ResponseWriter) {
			writeJSON(w, 200, entityJSON(invoiceJSON("5105600102", "2026", "5", "R")))
		},
			erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted, PostedAt: day(2026, 11, 24),
				PaymentBlock: "R", AlreadyPosted: true}},
		// Without the read, the Posting holds what the call knew.
		{"read fails", func(w http.ResponseWriter) { writeJSON(w, 503, `Service Unavailable`) },
			erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted, PostedAt: day(2026, 11, 20),
				AlreadyPosted: true}},
		{"read finds it not posted", func(w http.ResponseWriter) {
			writeJSON(w, 200, entityJSON(invoiceJSON("5105600102", "2026", "A", "R")))
		}, erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoicePosted, PostedAt: day(2026, 11, 20),
			AlreadyPosted: true}},
		{"read finds it reversed since", func(w http.ResponseWriter) {
			writeJSON(w, 200, entityJSON(strings.Replace(invoiceJSON("5105600102", "2026", "5", ""), `"PaymentBlockingReason"`,
				`"ReverseDocument":"5105600177","PaymentBlockingReason"`, 1)))
		}, erp.Posting{InvoiceID: "5105600102", FiscalYear: "2026", Status: erp.InvoiceReversed, PostedAt: day(2026, 11, 24),
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
			// One Post, then one read: nothing is repeated.
			if want := []string{"POST Post", "GET A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"}; !slices.Equal(calls(f), want) {
				t.Errorf("requests: got %q, want %q", calls(f), want)
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
		t.Errorf("requests: got %d, want the Post alone", n)
	}
}

// notBlockedJSON is SAP's answer to a Release of an invoice without a
// payment block.
const notBlockedJSON = `{"error":{"code":"M8/382","message":{"lang":"en","value":"Invoice 5105600102 2026 is not blocked for payment"},
"innererror":{"errordetails":[{"code":"M8/382","message":"Invoice 5105600102 2026 is not blocked for payment","severity":"error"}]}}}`

func TestReleasePaymentBlock(t *testing.T) {
	ctx := context.Background()
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	for _, shift := range []bool{false, true} {
		f := newFake(t, respond(200, functionJSON(functionRelease, true)))
		if err := f.client(Options{}).ReleasePaymentBlock(ctx, inv, shift, "rel-1"); err != nil {
			t.Fatalf("ReleasePaymentBlock(shift %v): got %v, want nil", shift, err)
		}
		reqs := f.odata()
		if len(reqs) != 1 || reqs[0].method != http.MethodPost || reqs[0].path != invPath+"Release" {
			t.Fatalf("requests: got %+v, want POST Release alone", reqs)
		}
		// All three parameters SAP declares: two Edm.String literals and
		// an Edm.Boolean literal.
		want := map[string][]string{"SupplierInvoice": {"'5105600102'"}, "FiscalYear": {"'2026'"},
			"DiscountDaysHaveToBeShifted": {fmt.Sprint(shift)}}
		if !maps.EqualFunc(reqs[0].query, want, slices.Equal) {
			t.Errorf("Release parameters: got %q, want %q", reqs[0].query, want)
		}
		if got := reqs[0].header.Values("Repeatability-Request-ID"); got != nil {
			t.Errorf("Repeatability-Request-ID: got %q, want none", got)
		}
	}

	// Not blocked for payment: nothing to lift.
	f := newFake(t, respond(400, notBlockedJSON))
	if err := f.client(Options{}).ReleasePaymentBlock(ctx, inv, false, ""); err != nil {
		t.Errorf("M8/382: got %v, want nil", err)
	}
	f = newFake(t, respond(200, functionJSON(functionRelease, false)))
	var up *erp.UpstreamError
	if err := f.client(Options{}).ReleasePaymentBlock(ctx, inv, false, ""); !errors.As(err, &up) || !up.Write || up.Unconfirmed {
		t.Errorf("Success false: got %v, want a write UpstreamError", err)
	}
	f = newFake(t, respond(400, alreadyPostedJSON))
	if err := f.client(Options{}).ReleasePaymentBlock(ctx, inv, false, ""); !errors.As(err, &up) || !up.HasMessage(msgAlreadyPosted) {
		t.Errorf("another refusal: got %v, want it as an UpstreamError", err)
	}

	// A lost answer is settled by reading the invoice: no block is success.
	for _, tt := range []struct {
		block string
		ok    bool
	}{{"", true}, {"R", false}} {
		f = newFake(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			writeJSON(w, 200, entityJSON(invoiceJSON("5105600102", "2026", "5", tt.block)))
		})
		err := f.client(Options{Runner: retry.New(stillClock(oneAttempt(2*time.Second)), nil)}).ReleasePaymentBlock(ctx, inv, false, "")
		if (err == nil) != tt.ok {
			t.Errorf("lost answer, block %q after: got %v, want success %v", tt.block, err, tt.ok)
		}
		if cs := calls(f); len(cs) < 2 || cs[0] != "POST Release" || slices.Contains(cs[1:], "POST Release") ||
			cs[1] != "GET A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')" {
			t.Errorf("lost answer: requests %q, want the Release once, then reads of the invoice", cs)
		}
	}
}
