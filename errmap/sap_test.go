package errmap_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// These tests run every SAP signal of the design's evidence table from the
// wire, through the real erp/sap client, into Map: each message id in each
// envelope form, the warning header, and the transient failures.

// scripted answers every OData request with one canned response, after a
// real CSRF token fetch.
func scripted(t *testing.T, status int, header http.Header, body string) *sap.Client {
	return scriptedWith(t, retry.Policy{AttemptTimeout: 200 * time.Millisecond, MaxAttempts: 1,
		Breaker: retry.BreakerSettings{Disabled: true}}, status, header, body)
}

// scriptedWith is scripted under the given retry policy.
func scriptedWith(t *testing.T, policy retry.Policy, status int, header http.Header, body string) *sap.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-CSRF-Token") == "Fetch" {
			w.Header().Set("X-CSRF-Token", "tok-1")
			http.SetCookie(w, &http.Cookie{Name: "SAP_SESSIONID_ERP_100", Value: "s1"})
			return
		}
		if status == 0 {
			// Hang until the client gives up; the body is read first so the
			// server notices the client leaving.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		for k, v := range header {
			w.Header()[k] = v
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := sap.New(srv.URL, sap.Options{Runner: retry.New(policy, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func detail(code string) map[string]any {
	return map[string]any{"code": code, "message": "Text for " + code + " on host sapprd01", "severity": "error", "target": ""}
}

// envelope builds an SAP error body in one of the three forms.
func envelope(form, code string) string {
	var v any
	switch form {
	case "v2":
		v = map[string]any{"error": map[string]any{"code": code,
			"message":    map[string]any{"lang": "en", "value": "Text for " + code + " on host sapprd01"},
			"innererror": map[string]any{"transactionid": "0A1B2C3D", "errordetails": []any{detail(code)}}}}
	case "v2detail":
		v = map[string]any{"error": map[string]any{"code": "/IWBEP/CX_MGW_BUSI_EXCEPTION",
			"message":    map[string]any{"lang": "en", "value": "Business error"},
			"innererror": map[string]any{"transactionid": "0A1B2C3D", "errordetails": map[string]any{"errordetail": []any{detail(code)}}}}}
	case "v4":
		v = map[string]any{"error": map[string]any{"code": code, "message": "Text for " + code + " on host sapprd01",
			"details": []any{detail(code)}}}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

var forms = []string{"v2", "v2detail", "v4"}

func TestSAPMessageIDsOnPosting(t *testing.T) {
	rows := map[string]errmap.Code{
		"M8/108": errmap.DuplicateInvoice, "F5/117": errmap.DuplicateInvoice,
		"F5/201": errmap.PeriodClosed, "M7/053": errmap.PeriodClosed, "M8/535": errmap.PeriodClosed,
		"06/020": errmap.POClosed, "M8/081": errmap.GRMissing,
		"06/019": errmap.PONotFound, "06/011": errmap.PONotFound, "M8/311": errmap.PONotFound,
		"06/025": errmap.SupplierNotFound, "06/027": errmap.SupplierNotFound,
	}
	inv := erp.Invoice{ID: "5105600109", FiscalYear: "2025"}
	for id, want := range rows {
		for _, form := range forms {
			t.Run(id+"/"+form, func(t *testing.T) {
				c := scripted(t, http.StatusBadRequest, nil, envelope(form, id))
				_, err := c.PostInvoice(context.Background(), inv, "")
				e := errmap.Map(err)
				if e.Code != want {
					t.Fatalf("Map = %s, want %s (from %v)", e.Code, want, err)
				}
				body := string(e.Marshal())
				for _, leak := range []string{"sapprd01", "0A1B2C3D", id} {
					if strings.Contains(body, leak) {
						t.Errorf("body leaks %q: %s", leak, body)
					}
				}
			})
		}
	}
}

func TestSAPNotFoundOnReads(t *testing.T) {
	for _, form := range forms {
		c := scripted(t, http.StatusNotFound, nil, envelope(form, "/IWBEP/CM_MGW_RT/020"))
		ctx := context.Background()
		_, err := c.PurchaseOrder(ctx, "4500019822")
		if got := errmap.Map(err); got.Code != errmap.PONotFound || got.Details["po_id"] != "4500019822" {
			t.Errorf("%s: PO 404 = %s %v", form, got.Code, got.Details)
		}
		// The supplier is read with a filter, which SAP answers with an
		// empty list when nothing matches: a 404 is never the supplier's.
		_, err = c.Supplier(ctx, "100999")
		if got := errmap.Map(err); got.Code != errmap.ERPConfiguration || got.Details["service"] != "business_partner" {
			t.Errorf("%s: supplier list 404 = %s %v, want ERP_CONFIGURATION", form, got.Code, got.Details)
		}
		_, err = c.PostInvoice(ctx, erp.Invoice{ID: "5105600999", FiscalYear: "2026"}, "")
		if got := errmap.Map(err); got.Code != errmap.InvoiceNotFound || got.Details["invoice_id"] != "5105600999" {
			t.Errorf("%s: A_SupplierInvoice 404 = %s %v", form, got.Code, got.Details)
		}
	}
}

// TestSAPAlreadyPosted: SAP's M8/255 on a posting is no error to map: the
// invoice is posted, and the call settles as posted before.
func TestSAPAlreadyPosted(t *testing.T) {
	for _, form := range forms {
		c := scripted(t, http.StatusBadRequest, nil, envelope(form, "M8/255"))
		p, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600100", FiscalYear: "2026"}, "")
		if err != nil {
			t.Errorf("%s: got %v (%s), want the posting", form, err, errmap.Map(err).Code)
			continue
		}
		if !p.AlreadyPosted || p.Status != erp.InvoicePosted || p.InvoiceID != "5105600100" || p.FiscalYear != "2026" {
			t.Errorf("%s: posting %+v, want 5105600100/2026 posted before", form, p)
		}
		if got := errmap.Info(p.Messages, p.PaymentBlock); got != "" {
			t.Errorf("%s: info %q, want none", form, got)
		}
	}
}

func TestSAPWarningHeader(t *testing.T) {
	for _, id := range []string{"M8/081", "M8/082", "M8/083", "M8/194"} {
		h := http.Header{}
		h.Set("sap-message", fmt.Sprintf(`{"code":"%s","message":"Variance","severity":"warning","target":"","details":[]}`, id))
		c := scriptedPost(t, h, postAnswer(true), "5", "")
		p, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if got := errmap.Info(p.Messages, p.PaymentBlock); got != errmap.ToleranceExceeded {
			t.Errorf("warning %s = %q, want TOLERANCE_EXCEEDED", id, got)
		}
	}
	// A warning in the details of the header counts as well.
	h := http.Header{}
	h.Set("sap-message", `{"code":"F5/263","message":"Document posted","severity":"success","details":[{"code":"M8/082","message":"Price variance","severity":"warning"}]}`)
	p, err := scriptedPost(t, h, postAnswer(true), "5", "").PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	if err != nil || errmap.Info(p.Messages, p.PaymentBlock) != errmap.ToleranceExceeded {
		t.Errorf("warning in details: %v %v", err, p.Messages)
	}
	// The payment block the posting set is read back with the invoice.
	p, err = scriptedPost(t, nil, postAnswer(true), "5", "R").PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	if err != nil || errmap.Info(p.Messages, p.PaymentBlock) != errmap.ToleranceExceeded {
		t.Errorf("payment block R: %v block %q", err, p.PaymentBlock)
	}
	p, err = scriptedPost(t, nil, postAnswer(true), "5", "").PostInvoice(context.Background(), erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "")
	if err != nil || errmap.Info(p.Messages, p.PaymentBlock) != "" {
		t.Errorf("clean posting: %v info %q", err, errmap.Info(p.Messages, p.PaymentBlock))
	}
}

func TestSAPTransientFailures(t *testing.T) {
	retryAfter := http.Header{}
	retryAfter.Set("Retry-After", "5")
	html := http.Header{}
	html.Set("Content-Type", "text/html")
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		wait   any
	}{
		{"429 with Retry-After", 429, retryAfter, envelope("v2", "/IWBEP/CM_MGW_RT/429"), 5},
		{"502", 502, nil, envelope("v2", "/IWFND/CM_BEC/026"), 30},
		{"503", 503, nil, envelope("v4", "/IWFND/CM_BEC/026"), 30},
		{"504", 504, html, "<html><body>Gateway Timeout</body></html>", 30},
		{"HTML 500", 500, html, "<html><body><h1>500</h1>Connection timed out</body></html>", 30},
		{"quota fault", 429, nil, `{"fault":{"faultstring":"Rate limit quota violation. Quota limit exceeded.","detail":{"errorcode":"policies.ratelimit.QuotaViolation"}}}`, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scripted(t, tt.status, tt.header, tt.body).PurchaseOrder(context.Background(), "4500018822")
			e := errmap.Map(err)
			if e.Code != errmap.ERPUnavailable || !e.Retryable || e.Status != 503 {
				t.Fatalf("got %s retryable %v status %d, want ERP_UNAVAILABLE (from %v)", e.Code, e.Retryable, e.Status, err)
			}
			if e.Details["retry_after_s"] != tt.wait {
				t.Errorf("retry_after_s = %v, want %v", e.Details["retry_after_s"], tt.wait)
			}
			if b := string(e.Marshal()); strings.Contains(b, "Connection timed out") || strings.Contains(b, "quota") {
				t.Errorf("upstream text leaked: %s", b)
			}
		})
	}
}

func TestSAPTimeouts(t *testing.T) {
	// The full retry policy: lost answers are reconciled and repeated, and
	// the outcome stays unknown when nothing can settle it.
	c := scriptedWith(t, retry.Policy{AttemptTimeout: 100 * time.Millisecond, InitialInterval: time.Millisecond}, 0, nil, "")
	_, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "")
	if got := errmap.Map(err); got.Code != errmap.ERPOutcomeUnknown || got.Details["invoice_id"] != "5105600101" {
		t.Errorf("post timeout = %s %v, want ERP_OUTCOME_UNKNOWN for the invoice", got.Code, got.Details)
	}
	_, err = c.PurchaseOrder(context.Background(), "4500018822")
	if got := errmap.Map(err); got.Code != errmap.ERPUnavailable {
		t.Errorf("read timeout = %s, want ERP_UNAVAILABLE", got.Code)
	}
}

// answering is an SAP system, or whatever stands in its place, that
// answers every OData request but the CSRF token fetch with the status,
// content type and body; it counts the requests it answered so.
func answering(t *testing.T, status int, contentType, body string) (*sap.Client, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-CSRF-Token") == "Fetch" {
			w.Header().Set("X-CSRF-Token", "tok-1")
			http.SetCookie(w, &http.Cookie{Name: "SAP_SESSIONID_ERP_100", Value: "s1"})
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		n.Add(1)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "/sap/public/bc/icf/logon.html")
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := sap.New(srv.URL, sap.Options{Runner: retry.New(retry.Policy{AttemptTimeout: 2 * time.Second, MaxAttempts: 3,
		Breaker: retry.BreakerSettings{Disabled: true}, Budget: retry.BudgetSettings{Disabled: true},
		Sleep: func(context.Context, time.Duration) error { return nil }}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return c, &n
}

// answerBodies are the kinds of body answered in place of SAP's: SAP
// Gateway's own error, another server's JSON, a Web Dispatcher's HTML
// page, nothing.
var answerBodies = []struct {
	kind              erp.AnswerBody
	contentType, body string
}{
	{erp.BodySAPError, "application/json", envelope("v2", "/IWBEP/CM_MGW_RT/020")},
	{erp.BodyOtherJSON, "application/json", `{"timestamp":"2026-11-24T10:00:00Z","status":404,"error":"Not Found","path":"/sap/opu/odata/sap/"}`},
	{erp.BodyText, "text/html", `<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>` +
		`<p>SAP Web Dispatcher on sapprd01: no backend for the requested path.</p></body></html>`},
	{erp.BodyEmpty, "", ""},
}

// TestSAPAnswersThroughTheClient runs the table of answers from the wire,
// through the real erp/sap client and its retries, into Map: every read
// the gateway makes, for each status and kind of body, gets the code the
// table names, retried exactly when the table says the failure may pass.
// A proxy answering 404 with an HTML page to every request makes every
// read ERP_CONFIGURATION, none a NOT_FOUND; only SAP Gateway's own 404 on
// an entity is the entity's.
func TestSAPAnswersThroughTheClient(t *testing.T) {
	ctx := context.Background()
	reads := []struct {
		name string
		kind erp.CallKind
		svc  erp.Service
		read func(*sap.Client) error
	}{
		{"purchase order", erp.CallEntity, erp.ServicePurchaseOrder, func(c *sap.Client) error {
			_, err := c.PurchaseOrder(ctx, "4500019822")
			return err
		}},
		{"invoice", erp.CallList, erp.ServiceSupplierInvoice, func(c *sap.Client) error {
			_, err := c.Invoice(ctx, "5105600999")
			return err
		}},
		{"supplier", erp.CallList, erp.ServiceBusinessPartner, func(c *sap.Client) error {
			_, err := c.Supplier(ctx, "100999")
			return err
		}},
		{"supplier search", erp.CallList, erp.ServiceBusinessPartner, func(c *sap.Client) error {
			_, err := c.SearchSuppliers(ctx, "acme", 10)
			return err
		}},
		{"goods receipts", erp.CallList, erp.ServiceMaterialDocument, func(c *sap.Client) error {
			_, err := c.GoodsReceipts(ctx, "4500018822", "10")
			return err
		}},
		{"duplicate search", erp.CallList, erp.ServiceSupplierInvoice, func(c *sap.Client) error {
			_, err := c.InvoicesBySupplierRef(ctx, "100043", "INV-88120")
			return err
		}},
	}
	// want: per status, for SAP Gateway's error and for the other bodies,
	// the outcome of an entity read and of a list read (as in
	// TestAnswerTable: N not found, C configuration, U unavailable after
	// the retries, S unavailable at once, I internal).
	want := []struct {
		status     int
		sap, other string
	}{
		{302, "CC", "CC"},
		{400, "II", "CC"},
		{401, "CC", "CC"},
		{403, "CC", "CC"},
		{404, "NC", "CC"},
		{405, "CC", "CC"},
		{409, "II", "CC"},
		{429, "UU", "UU"},
		{500, "SS", "UU"},
		{501, "CC", "CC"},
		{502, "UU", "UU"},
		{503, "UU", "UU"},
		{504, "UU", "UU"},
	}
	for _, w := range want {
		for _, b := range answerBodies {
			cells := w.other
			if b.kind == erp.BodySAPError {
				cells = w.sap
			}
			t.Run(fmt.Sprintf("%d %s", w.status, b.kind), func(t *testing.T) {
				for _, rd := range reads {
					letter := cells[0]
					if rd.kind == erp.CallList {
						letter = cells[1]
					}
					c, n := answering(t, w.status, b.contentType, b.body)
					err := rd.read(c)
					e := errmap.Map(err)
					attempts := int32(1)
					switch letter {
					case 'N':
						var nf *erp.NotFoundError
						if e.Code != errmap.PONotFound || !errors.As(err, &nf) {
							t.Errorf("%s: %s (%v), want PO_NOT_FOUND", rd.name, e.Code, err)
						}
					case 'C':
						if e.Code != errmap.ERPConfiguration || e.Details["service"] != string(rd.svc) {
							t.Errorf("%s: %s %v, want ERP_CONFIGURATION of %s", rd.name, e.Code, e.Details, rd.svc)
						}
					case 'U':
						attempts = 3
						if e.Code != errmap.ERPUnavailable || e.Details["attempts"] != 3 {
							t.Errorf("%s: %s %v, want ERP_UNAVAILABLE after 3 attempts", rd.name, e.Code, e.Details)
						}
					case 'S':
						if e.Code != errmap.ERPUnavailable || e.Details["attempts"] != 1 {
							t.Errorf("%s: %s %v, want ERP_UNAVAILABLE after 1 attempt", rd.name, e.Code, e.Details)
						}
					case 'I':
						if e.Code != errmap.Internal {
							t.Errorf("%s: %s, want INTERNAL", rd.name, e.Code)
						}
					}
					if got := n.Load(); got != attempts {
						t.Errorf("%s: %d requests, want %d", rd.name, got, attempts)
					}
					if body := string(e.Marshal()); strings.Contains(body, "sapprd01") || strings.Contains(body, "127.0.0.1") {
						t.Errorf("%s: body leaks the host: %s", rd.name, body)
					}
				}
			})
		}
	}
}

// TestSAPPostAnswersThroughTheClient: the function import Post answered
// by something other than SAP Gateway's business logic is a fault of
// configuration, never a business outcome; SAP Gateway's own 404 on it
// is the invoice's.
func TestSAPPostAnswersThroughTheClient(t *testing.T) {
	inv := erp.Invoice{ID: "5105600999", FiscalYear: "2026"}
	tests := []struct {
		status int
		body   erp.AnswerBody
		want   errmap.Code
	}{
		{302, erp.BodyText, errmap.ERPConfiguration},
		{400, erp.BodyText, errmap.ERPConfiguration},
		{400, erp.BodyOtherJSON, errmap.ERPConfiguration},
		{400, erp.BodySAPError, errmap.Internal},
		{404, erp.BodySAPError, errmap.InvoiceNotFound},
		{405, erp.BodySAPError, errmap.ERPConfiguration},
		{405, erp.BodyText, errmap.ERPConfiguration},
		{500, erp.BodySAPError, errmap.ERPUnavailable},
		{501, erp.BodySAPError, errmap.ERPConfiguration},
		{501, erp.BodyEmpty, errmap.ERPConfiguration},
	}
	for _, tt := range tests {
		for _, b := range answerBodies {
			if b.kind != tt.body {
				continue
			}
			c, n := answering(t, tt.status, b.contentType, b.body)
			_, err := c.PostInvoice(context.Background(), inv, "")
			e := errmap.Map(err)
			if e.Code != tt.want {
				t.Errorf("%d %s: %s (%v), want %s", tt.status, tt.body, e.Code, err, tt.want)
			}
			if e.Code == errmap.ERPConfiguration && e.Details["service"] != "supplier_invoice" {
				t.Errorf("%d %s: details %v, want service supplier_invoice", tt.status, tt.body, e.Details)
			}
			if got := n.Load(); got != 1 {
				t.Errorf("%d %s: %d requests, want the Post once", tt.status, tt.body, got)
			}
		}
	}
}
