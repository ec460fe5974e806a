package sim_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
)

// postResult reads the answer of Post, {"d":{"Post":{...}}}, and wants it
// to be SAP's PostInvoiceExportParameters: the type and Success true, and
// nothing else.
func postResult(t *testing.T, r reply) {
	t.Helper()
	var v struct {
		D map[string]map[string]json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("Post answer: %v: %s", err, r.body)
	}
	res, ok := v.D["Post"]
	if len(v.D) != 1 || !ok {
		t.Fatalf(`Post answer: want {"d":{"Post":{...}}}, got %s`, r.body)
	}
	var meta struct{ Type string }
	if err := json.Unmarshal(res["__metadata"], &meta); err != nil || meta.Type != "API_SUPPLIERINVOICE_PROCESS_SRV.PostInvoiceExportParameters" {
		t.Errorf("Post answer type: got %s, want API_SUPPLIERINVOICE_PROCESS_SRV.PostInvoiceExportParameters", res["__metadata"])
	}
	if string(res["Success"]) != "true" || len(res) != 2 {
		t.Errorf("Post answer: got %s, want __metadata and Success true only", r.body)
	}
}

func TestPostCheckOrder(t *testing.T) {
	tests := []struct {
		id, fy  string
		status  int
		code    string // error code; "" on success
		block   string
		warning string
	}{
		{id: "5105600101", fy: "2026", status: 200},
		{id: "5105600102", fy: "2026", status: 200, block: "R", warning: "M8/082"},
		{id: "5105600100", fy: "2026", status: 400, code: "M8/255"},
		{id: "5105600107", fy: "2026", status: 400, code: "M8/108"},
		{id: "5105600109", fy: "2025", status: 400, code: "F5/201"},
		{id: "5105600106", fy: "2026", status: 400, code: "06/020"},
		{id: "5105600105", fy: "2026", status: 400, code: "M8/081"},
		{id: "5105600103", fy: "2026", status: 400, code: "06/019"},
		{id: "5105600104", fy: "2026", status: 400, code: "06/025"},
		{id: "5105600108", fy: "2026", status: 200},
		{id: "5105600199", fy: "2026", status: 404, code: "/IWBEP/CM_MGW_RT/020"},
		{id: "5105600109", fy: "2026", status: 404, code: "/IWBEP/CM_MGW_RT/020"},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+tt.fy, func(t *testing.T) {
			e := newEnv(t, sim.Options{})
			r := e.postInvoice(tt.id, tt.fy)
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
				if n := len(e.sim.Ledger().Postings); n != 0 {
					t.Errorf("postings after error: got %d, want 0", n)
				}
				return
			}
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d: %s", r.status, tt.status, r.body)
			}
			postResult(t, r)
			var msg struct{ Code, Message, Severity, Target string }
			if h := r.header.Get("sap-message"); h != "" {
				if err := json.Unmarshal([]byte(h), &msg); err != nil {
					t.Fatalf("sap-message %q: %v", h, err)
				}
			}
			if msg.Code != tt.warning || (tt.warning != "" && (msg.Severity != "warning" || msg.Message == "")) {
				t.Errorf("sap-message: got %+v, want code %q severity warning", msg, tt.warning)
			}
			inv := entity(t, e.get(invSrv+"/A_SupplierInvoice(SupplierInvoice='"+tt.id+"',FiscalYear='"+tt.fy+"')"))
			if inv["SupplierInvoiceStatus"] != "5" || inv["PaymentBlockingReason"] != tt.block {
				t.Errorf("invoice after Post: got status %v block %v, want 5 and %q", inv["SupplierInvoiceStatus"], inv["PaymentBlockingReason"], tt.block)
			}
			l := e.sim.Ledger().Postings
			if len(l) != 1 || l[0].InvoiceID != tt.id || l[0].FiscalYear != tt.fy || l[0].PaymentBlock != tt.block || !l[0].PostedAt.Equal(clock) {
				t.Errorf("postings: got %+v, want one for %s block %q at %v", l, tt.id, tt.block, clock)
			}
			wantError(t, e.postInvoice(tt.id, tt.fy), http.StatusBadRequest, "M8/255")
		})
	}
}

// TestPostSAPMessages: a Post that cannot post answers with SAP's own
// message, in every envelope form, as the code and as the detail, with a
// text that names the document.
func TestPostSAPMessages(t *testing.T) {
	tests := []struct {
		name, id, code, message string
	}{
		{"already posted", "5105600100", "M8/255", "Document 5105600100 2026 has already been posted"},
		{"vendor unknown", "5105600104", "06/025", "Vendor 100999 not created (please check your input)"},
		{"duplicate", "5105600107", "M8/108", "Check if invoice already entered under accounting doc. no. 5105600100 2026"},
	}
	for _, form := range []string{sim.EnvelopeV2, sim.EnvelopeV2Detail, sim.EnvelopeV4} {
		for _, tt := range tests {
			t.Run(form+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, sim.Options{Envelope: form})
				r := e.postInvoice(tt.id, "2026")
				if r.status != http.StatusBadRequest {
					t.Fatalf("status: got %d, want 400: %s", r.status, r.body)
				}
				got := decodeError(t, r)
				if got.code != tt.code || !slices.Contains(got.details, tt.code+":error") {
					t.Errorf("codes: got %q details %q, want %q with detail %s:error", got.code, got.details, tt.code, tt.code)
				}
				if got.message != tt.message {
					t.Errorf("message: got %q, want %q", got.message, tt.message)
				}
				if strings.Contains(string(r.body), "ZERPGATE") {
					t.Errorf("answer names a made-up message class: %s", r.body)
				}
			})
		}
	}
	// A second Post of an invoice posted by the first is M8/255.
	e := newEnv(t, sim.Options{})
	if r := e.postInvoice("5105600101", "2026"); r.status != http.StatusOK {
		t.Fatalf("first post: got %d: %s", r.status, r.body)
	}
	got := wantError(t, e.postInvoice("5105600101", "2026"), http.StatusBadRequest, "M8/255")
	if got.message != "Document 5105600101 2026 has already been posted" {
		t.Errorf("message: got %q", got.message)
	}
}

func TestPostOpenPeriodOption(t *testing.T) {
	e := newEnv(t, sim.Options{ClosedBefore: time.Date(2025, time.December, 1, 0, 0, 0, 0, time.UTC)})
	if r := e.postInvoice("5105600109", "2025"); r.status != http.StatusOK {
		t.Fatalf("post with December 2025 open: got %d, want 200: %s", r.status, r.body)
	}
	e = newEnv(t, sim.Options{ClosedBefore: time.Date(2027, time.January, 1, 0, 0, 0, 0, time.UTC)})
	got := wantError(t, e.postInvoice("5105600101", "2026"), http.StatusBadRequest, "F5/201")
	if got.message != "Posting period 011 2026 is not open" {
		t.Errorf("message: got %q", got.message)
	}
}

// TestPostParameters: Post takes SupplierInvoice and FiscalYear, both
// Edm.String literals within their MaxLength; a missing or invalid one is
// a 400 with an SAP envelope, and nothing is posted.
func TestPostParameters(t *testing.T) {
	e := newEnv(t, sim.Options{})
	for _, rel := range []string{
		"/Post",
		"/Post?SupplierInvoice='5105600101'",
		"/Post?FiscalYear='2026'",
		"/Post?SupplierInvoice='5105600101&FiscalYear='2026'",
		"/Post?SupplierInvoice=5105600101&FiscalYear='2026'",
		"/Post?SupplierInvoice='5105600101'&FiscalYear=2026",
		"/Post?SupplierInvoice='05105600101'&FiscalYear='2026'",
		"/Post?SupplierInvoice='5105600101'&FiscalYear='02026'",
		"/Post?SupplierInvoice='5105600101'&FiscalYear=",
		"/Post?SupplierInvoice='5105'6'&FiscalYear='2026'",
		"/Post?SupplierInvoice='5105600101'&SupplierInvoice='5105600102'&FiscalYear='2026'",
	} {
		t.Run(rel, func(t *testing.T) {
			wantError(t, e.post(invSrv, rel, nil), http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001")
		})
	}
	if n := len(e.sim.Ledger().Postings); n != 0 {
		t.Errorf("postings after refused calls: got %d, want 0", n)
	}
	// A quote inside the literal is doubled; such an id does not exist,
	// nor does an invoice of the empty fiscal year.
	wantError(t, e.post(invSrv, "/Post?SupplierInvoice='51''05'&FiscalYear='2026'", nil), http.StatusNotFound, "/IWBEP/CM_MGW_RT/020")
	wantError(t, e.post(invSrv, "/Post?SupplierInvoice='5105600101'&FiscalYear=''", nil), http.StatusNotFound, "/IWBEP/CM_MGW_RT/020")
	// Custom query options beside the declared parameters are ignored.
	r := e.post(invSrv, postPath("5105600101", "2026")+"&sap-client=100&Extra=1", nil)
	if r.status != http.StatusOK {
		t.Fatalf("post with custom query options: got %d: %s", r.status, r.body)
	}
	postResult(t, r)

	wantError(t, e.get(invSrv+"/Post"), http.StatusMethodNotAllowed, "/IWBEP/CM_MGW_RT/003")
	wantError(t, e.post(invSrv, "/A_SupplierInvoice", map[string]string{}), http.StatusMethodNotAllowed, "/IWBEP/CM_MGW_RT/003")
	wantError(t, e.do(http.MethodDelete, invSrv+"/A_SupplierInvoice(SupplierInvoice='5105600101',FiscalYear='2026')", nil, map[string]string{"X-CSRF-Token": e.token(invSrv)}), http.StatusMethodNotAllowed, "/IWBEP/CM_MGW_RT/003")
}

// TestARepeatIsAnsweredByTheDocument: SAP's published services declare no
// repeatability header, and the simulator honours none: a Post sent twice
// is answered by the invoice's state, M8/255 the second time, whatever
// header it carries, and posts once.
func TestARepeatIsAnsweredByTheDocument(t *testing.T) {
	e := newEnv(t, sim.Options{})
	h := map[string]string{"X-CSRF-Token": e.token(invSrv), "Repeatability-Request-ID": "post-102"}
	first := e.do(http.MethodPost, invSrv+postPath("5105600102", "2026"), nil, h)
	if first.status != http.StatusOK || first.header.Get("Repeatability-Result") != "" {
		t.Fatalf("first post: %d %v %s", first.status, first.header, first.body)
	}
	wantError(t, e.do(http.MethodPost, invSrv+postPath("5105600102", "2026"), nil, h), http.StatusBadRequest, "M8/255")
	if n := len(e.sim.Ledger().Postings); n != 1 {
		t.Errorf("postings: got %d, want 1", n)
	}
}
