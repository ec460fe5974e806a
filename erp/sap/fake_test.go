package sap

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/retry"
)

// seen is one request the fake SAP received.
type seen struct {
	method string
	path   string
	query  map[string][]string
	header http.Header
	body   string
}

// fakeSAP scripts an SAP system: it serves the CSRF flow itself and hands
// every other request to handle.
type fakeSAP struct {
	t      *testing.T
	srv    *httptest.Server
	handle func(w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	requests []seen
	tokens   map[string]string // token -> session id it is bound to
	fetches  map[string]int    // service path -> token fetches
	// refuse is how many writes get 403 X-CSRF-Token: Required whatever
	// token they carry.
	refuse int
	// noToken makes token fetches answer without a token.
	noToken bool
}

const sessionCookie = "SAP_SESSIONID_ERP_100"

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *fakeSAP {
	t.Helper()
	f := &fakeSAP{t: t, handle: handle, tokens: map[string]string{}, fetches: map[string]int{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSAP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, seen{r.Method, r.URL.Path, r.URL.Query(), r.Header.Clone(), string(body)})
	f.mu.Unlock()

	if r.Method == http.MethodGet && r.Header.Get("X-CSRF-Token") == "Fetch" {
		f.mu.Lock()
		f.fetches[r.URL.Path]++
		if f.noToken {
			f.mu.Unlock()
			writeJSON(w, 200, `{}`)
			return
		}
		n := len(f.tokens) + 1
		tok := fmt.Sprintf("tok-%d", n)
		sess := fmt.Sprintf("sess-%d", n)
		f.tokens[tok] = sess
		f.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sess, Path: "/"})
		w.Header().Set("X-CSRF-Token", tok)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"d":{"EntitySets":[]}}`)
		return
	}
	if r.Method != http.MethodGet {
		f.mu.Lock()
		tok := r.Header.Get("X-CSRF-Token")
		sess, ok := f.tokens[tok]
		ck, err := r.Cookie(sessionCookie)
		valid := ok && err == nil && ck.Value == sess
		refuse := f.refuse > 0
		if refuse {
			f.refuse--
		}
		f.mu.Unlock()
		if !valid || refuse {
			w.Header().Set("X-CSRF-Token", "Required")
			writeJSON(w, http.StatusForbidden, `{"error":{"code":"/IWFND/CM_COS/001","message":{"lang":"en","value":"CSRF token validation failed"}}}`)
			return
		}
	}
	f.handle(w, r)
}

// odata returns the requests that were not token fetches.
func (f *fakeSAP) odata() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seen
	for _, s := range f.requests {
		if s.header.Get("X-CSRF-Token") != "Fetch" {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeSAP) fetchCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, v := range f.fetches {
		n += v
	}
	return n
}

// client returns a Client for the fake with a short attempt timeout.
func (f *fakeSAP) client(opts Options) *Client {
	f.t.Helper()
	if opts.Runner == nil {
		opts.Runner = retry.New(oneAttempt(2*time.Second), nil)
	}
	c, err := New(f.srv.URL, opts)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	return c
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// respond answers every OData request with the status and body.
func respond(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, status, body) }
}

const (
	invPath = "/sap/opu/odata/sap/API_SUPPLIERINVOICE_PROCESS_SRV/"
	poPath  = "/sap/opu/odata/sap/API_PURCHASEORDER_PROCESS_SRV/"
	mdPath  = "/sap/opu/odata/sap/API_MATERIAL_DOCUMENT_SRV/"
	bpPath  = "/sap/opu/odata/sap/API_BUSINESS_PARTNER/"
)

// ms is the /Date/ milliseconds of a UTC calendar date.
func ms(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).UnixMilli()
}

func day(y int, m time.Month, d int) time.Time {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func invoiceJSON(id, fy, status, block string) string {
	return fmt.Sprintf(`{"__metadata":{"type":"API_SUPPLIERINVOICE_PROCESS_SRV.A_SupplierInvoiceType"},
"SupplierInvoice":%q,"FiscalYear":%q,"CompanyCode":"1010",
"DocumentDate":"/Date(%d)/","PostingDate":"/Date(%d+0000)/",
"InvoicingParty":"100042","SupplierInvoiceIDByInvcgParty":"ACME-2026-0412","DocumentCurrency":"EUR",
"InvoiceGrossAmount":"1000.00","SupplierInvoiceStatus":%q,"PaymentBlockingReason":%q,
"to_SuplrInvcItemPurOrdRef":{"results":[{"SupplierInvoice":%q,"FiscalYear":%q,"SupplierInvoiceItem":"000001",
"PurchaseOrder":"4500018822","PurchaseOrderItem":"10","QuantityInPurchaseOrderUnit":"10.000",
"PurchaseOrderQuantityUnit":"EA","SupplierInvoiceItemAmount":"1000.00","DocumentCurrency":"EUR"}]}}`,
		id, fy, ms(2026, 11, 20), ms(2026, 11, 24), status, block, id, fy)
}

func list(entries ...string) string {
	return `{"d":{"results":[` + strings.Join(entries, ",") + `]}}`
}

// oneAttempt is a policy without retries or breakers, so that each test
// sees exactly what one exchange with the server gives.
func oneAttempt(timeout time.Duration) retry.Policy {
	return retry.Policy{AttemptTimeout: timeout, WriteTimeout: timeout, MaxAttempts: 1, Breaker: retry.BreakerSettings{Disabled: true}}
}
