package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

func credential(t *testing.T, name, key string, scopes ...string) api.Credential {
	t.Helper()
	sum := sha256.Sum256([]byte(key))
	c, err := api.ParseCredential(name + ":" + hex.EncodeToString(sum[:]) + ":" + strings.Join(scopes, "+"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// panicky is an ERP whose every read panics, standing in for a bug.
type panicky struct{ erp.Client }

func (panicky) Invoice(context.Context, string) (erp.Invoice, error) { panic("nil map in handler") }

// panickyRead answers the invoice and panics on the supplier read the
// three-way match makes after it, in a goroutine of its own.
type panickyRead struct{ erp.Client }

func (panickyRead) Invoice(_ context.Context, id string) (erp.Invoice, error) {
	return erp.Invoice{ID: id, SupplierID: "100042", Currency: "EUR", Status: erp.InvoiceParked}, nil
}

func (panickyRead) Supplier(context.Context, string) (erp.Supplier, error) {
	panic("nil map in a read")
}

// TestEveryCodeThroughHTTP triggers every error code of the catalogue
// through the HTTP API and fails if one is left out.
func TestEveryCodeThroughHTTP(t *testing.T) {
	seen := map[string]bool{}
	check := func(t *testing.T, r result, status int, code, next string) map[string]any {
		t.Helper()
		d := wantError(t, r, status, code, next)
		seen[code] = true
		return d
	}
	approval := map[string]any{"proposed_action": "post_as_invoiced", "justification": "Matched against PO and goods receipt."}

	t.Run("golden outcomes", func(t *testing.T) {
		s := newStack(t)
		check(t, s.do("GET", "/invoices/5105600999", nil), 404, "INVOICE_NOT_FOUND", "fix_input_and_retry")
		check(t, s.do("GET", "/purchase-orders/4500019822", nil), 404, "PO_NOT_FOUND", "fix_input_and_retry")
		check(t, s.do("GET", "/suppliers/100999", nil), 404, "SUPPLIER_NOT_FOUND", "fix_input_and_retry")
		check(t, s.do("POST", "/invoices/5105600105/three-way-match", nil), 409, "GR_MISSING", "hold_and_recheck")
		check(t, s.do("POST", "/invoices/5105600106/three-way-match", nil), 409, "PO_CLOSED", "route_to_person")
		check(t, s.do("POST", "/invoices/5105600107/three-way-match", nil), 409, "DUPLICATE_INVOICE", "route_to_person")
		check(t, s.do("POST", "/invoices/5105600108/approvals", approval), 422, "APPROVER_NOT_FOUND", "route_to_person")
		check(t, s.do("POST", "/invoices/5105600101/post", nil), 409, "APPROVAL_MISSING", "request_approval")
		id := s.do("POST", "/invoices/5105600109/approvals", approval).json(t)["approval_id"]
		check(t, s.do("POST", "/invoices/5105600109/post", map[string]any{"approval_id": id}), 409, "PERIOD_CLOSED", "stop_and_escalate")
		if m := s.do("POST", "/invoices/5105600102/three-way-match", nil).json(t); m["result"] == "TOLERANCE_EXCEEDED" {
			seen["TOLERANCE_EXCEEDED"] = true
		}
	})

	t.Run("INVALID_REQUEST", func(t *testing.T) {
		s := newStack(t)
		d := check(t, s.do("GET", "/invoices/51056", nil), 400, "INVALID_REQUEST", "fix_input_and_retry")
		if d["field"] != "invoice_id" {
			t.Errorf("details %v, want field invoice_id", d)
		}
	})

	t.Run("UNAUTHENTICATED and SCOPE_MISSING", func(t *testing.T) {
		s := newStack(t, withOptions(func(o *api.Options) {
			o.Credentials = []api.Credential{credential(t, "reader", "r-key-1", "read"), credential(t, "agent", "w-key-1", "read", "write")}
		}))
		check(t, s.do("GET", "/invoices/5105600101", nil), 401, "UNAUTHENTICATED", "stop_and_escalate")
		check(t, s.do("GET", "/invoices/5105600101", nil, "Authorization: Bearer wrong"), 401, "UNAUTHENTICATED", "stop_and_escalate")
		if r := s.do("GET", "/invoices/5105600101", nil, "Authorization: Bearer r-key-1"); r.status != 200 {
			t.Errorf("reader get_invoice: %d %s", r.status, r.body)
		}
		d := check(t, s.do("POST", "/invoices/5105600101/post", map[string]any{}, "X-API-Key: r-key-1"), 409, "SCOPE_MISSING", "route_to_person")
		if d["scope"] != "write" {
			t.Errorf("details %v, want scope write", d)
		}
		check(t, s.do("POST", "/invoices/5105600101/post", map[string]any{}, "X-API-Key: w-key-1"), 409, "APPROVAL_MISSING", "request_approval")
	})

	t.Run("ERP_UNAVAILABLE", func(t *testing.T) {
		s := newStack(t, withPolicy(func(p *retry.Policy) { p.Breaker.MinRequests = 5 }))
		// A transient failure the retries absorb never reaches the agent.
		if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 502, Count: 2}); err != nil {
			t.Fatal(err)
		}
		if r := s.do("GET", "/purchase-orders/4500018822", nil); r.status != 200 {
			t.Errorf("two 502s then success: %d, want 200", r.status)
		}
		// A Retry-After longer than the call's deadline is not waited out:
		// the agent hears at once how long to wait.
		if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 503, RetryAfterS: 40, Count: -1}); err != nil {
			t.Fatal(err)
		}
		r := s.do("GET", "/purchase-orders/4500018822", nil)
		d := check(t, r, 503, "ERP_UNAVAILABLE", "hold_and_recheck")
		if d["retry_after_s"] != float64(40) || d["attempts"] != float64(1) || r.header.Get("Retry-After") != "40" {
			t.Errorf("details %v Retry-After %q, want retry_after_s 40 attempts 1", d, r.header.Get("Retry-After"))
		}
		if r.json(t)["retryable"] != true {
			t.Error("ERP_UNAVAILABLE not retryable")
		}
		// Without a hint the gateway retries itself and reports its attempts.
		s.sim.ClearFaults()
		if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultHTML500, Count: 3}); err != nil {
			t.Fatal(err)
		}
		d = check(t, s.do("GET", "/purchase-orders/4500018822", nil), 503, "ERP_UNAVAILABLE", "hold_and_recheck")
		if d["attempts"] != float64(3) || d["service"] != "purchase_order" {
			t.Errorf("details %v, want 3 attempts on purchase_order", d)
		}
		// Nine in ten attempts failing open the breaker: a call then fails
		// at once, without reaching the ERP, and says when the probe goes
		// through.
		if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 503, Count: -1}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4 && d["attempts"] != float64(0); i++ {
			d = check(t, s.do("GET", "/purchase-orders/4500018822", nil), 503, "ERP_UNAVAILABLE", "hold_and_recheck")
		}
		if d["breaker"] != "open" || d["attempts"] != float64(0) {
			t.Errorf("details %v, want breaker open and no attempt", d)
		}
	})

	t.Run("ERP_CONFIGURATION", func(t *testing.T) {
		s := newStack(t)
		// SAP refuses the gateway's user: a person must fix the setup, and
		// no retry is spent on it.
		if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 403, Count: -1}); err != nil {
			t.Fatal(err)
		}
		d := check(t, s.do("GET", "/purchase-orders/4500018822", nil), 502, "ERP_CONFIGURATION", "stop_and_escalate")
		if d["service"] != "purchase_order" {
			t.Errorf("details %v, want service purchase_order", d)
		}
		// Credentials refused: the message names the service, never a host.
		s.sim.ClearFaults()
		if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultStatus, Status: 401,
			IncludeFetch: true, Count: -1}); err != nil {
			t.Fatal(err)
		}
		r := s.do("GET", "/invoices/5105600101", nil)
		d = check(t, r, 502, "ERP_CONFIGURATION", "stop_and_escalate")
		if d["service"] != "supplier_invoice" || strings.Contains(string(r.body), "127.0.0.1") {
			t.Errorf("details %v body %s, want service supplier_invoice and no host", d, r.body)
		}
	})

	t.Run("ERP_DATA_INVALID", func(t *testing.T) {
		// The ERP's answer for one purchase order does not fit what SAP's
		// $metadata declares: a boolean of its items comes as a string.
		s := newStack(t)
		bad, reads := corruptingERP(t, s.simURL, "A_PurchaseOrder('4500018822')",
			regexp.MustCompile(`"IsFinallyInvoiced":(true|false)`), `"IsFinallyInvoiced":"no"`)
		s.simURL = bad
		s.startGateway(api.Options{Metrics: api.NewMetrics(), Records: s.records},
			retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond})
		r := s.do("GET", "/purchase-orders/4500018822", nil)
		d := check(t, r, 502, "ERP_DATA_INVALID", "stop_and_escalate")
		if d["service"] != "purchase_order" || d["entity"] != "purchase_order" || d["po_id"] != "4500018822" {
			t.Errorf("details %v, want service and entity purchase_order, po_id 4500018822", d)
		}
		// No retry mends bad data: the order was read once.
		if n := reads.Load(); n != 1 {
			t.Errorf("the purchase order was read %d times, want once", n)
		}
		if strings.Contains(string(r.body), "127.0.0.1") || strings.Contains(string(r.body), `"no"`) {
			t.Errorf("body names the host or the ERP's data: %s", r.body)
		}
		// Other records of the same service read as they are.
		if r := s.do("GET", "/purchase-orders/4500018823", nil); r.status != 200 {
			t.Errorf("another purchase order: %d %s", r.status, r.body)
		}
	})

	t.Run("loop limits", func(t *testing.T) {
		s := newStack(t, withOptions(func(o *api.Options) { o.Runs.Budget = 3 }))
		run := "X-Run-Id: run-42"
		s.do("GET", "/invoices/5105600105", nil, run)
		d := check(t, s.do("GET", "/invoices/5105600105", nil, run), 409, "LOOP_DETECTED", "route_to_person")
		if d["run_id"] != "run-42" || d["operation"] != "get_invoice" {
			t.Errorf("details %v", d)
		}
		s.do("POST", "/invoices/5105600105/three-way-match", nil, run)
		d = check(t, s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "waiting for goods"}, run),
			409, "BUDGET_EXHAUSTED", "route_to_person")
		if d["budget"] != float64(3) || d["invoice_id"] != "5105600105" {
			t.Errorf("details %v", d)
		}
		// The handover stays possible after the budget is spent.
		r := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600105", "code": "GR_MISSING",
			"summary": "Goods receipt for PO 4500018822 item 20 has not arrived."}, run)
		if r.status != 200 {
			t.Errorf("hand_over after budget: %d %s", r.status, r.body)
		}
		// Another run is not affected.
		if r := s.do("GET", "/invoices/5105600105", nil, "X-Run-Id: run-43"); r.status != 200 {
			t.Errorf("other run: %d", r.status)
		}
	})

	t.Run("IDEMPOTENCY_KEY_REUSED", func(t *testing.T) {
		s := newStack(t)
		first := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "waiting for goods"}, "Idempotency-Key: k-1")
		if first.status != 200 {
			t.Fatalf("first hold: %d %s", first.status, first.body)
		}
		check(t, s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "other reason"}, "Idempotency-Key: k-1"),
			409, "IDEMPOTENCY_KEY_REUSED", "fix_input_and_retry")
	})

	t.Run("WRITE_IN_PROGRESS", func(t *testing.T) {
		s := newStack(t, withOptions(func(o *api.Options) { o.WriteWait = 50 * time.Millisecond }))
		l := records.InvoiceLease{InvoiceID: "5105600105", Holder: "another call", Operation: "post_invoice"}
		if c, err := s.records.ClaimInvoice(t.Context(), l, time.Now(), time.Minute); err != nil || !c.Claimed {
			t.Fatalf("lease: %+v %v", c, err)
		}
		d := check(t, s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "waiting for goods"}),
			409, "WRITE_IN_PROGRESS", "hold_and_recheck")
		if d["operation"] != "post_invoice" || d["retry_after_s"] != float64(5) {
			t.Errorf("details %v, want operation post_invoice and retry_after_s 5", d)
		}
	})

	t.Run("APPROVAL_DECIDED and SEGREGATION_OF_DUTIES", func(t *testing.T) {
		// A clerk whose key may both request and decide, beside the people.
		s := newStack(t, withOptions(func(o *api.Options) {
			o.Credentials = append(demoPeople(t), credential(t, "clerk", demoKey("clerk"), "read", "write", "approve"))
		}))
		r := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
			"justification": "Unit price 8 % over the PO; supplier cites a surcharge."}, as("clerk"))
		id := r.json(t)["approval_id"].(string)
		d := check(t, s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": "approve",
			"reason": "Fine by me."}, as("clerk")), 409, "SEGREGATION_OF_DUTIES", "route_to_person")
		if d["approval_id"] != id || d["approver"] != "ap_manager" || d["reason"] != "same_requester" {
			t.Errorf("details %v", d)
		}
		s.decide(id, "reject", "m.keller")
		d = check(t, s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": "approve",
			"reason": "Overruled."}, as("j.doe")), 409, "APPROVAL_DECIDED", "stop_and_escalate")
		if d["status"] != "rejected" || d["reason"] != "not_pending" {
			t.Errorf("details %v", d)
		}
	})

	t.Run("APPROVAL_SUPERSEDED", func(t *testing.T) {
		s := newStack(t)
		first := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
			"justification": "Unit price 8 % over the PO; supplier cites a surcharge."}).json(t)["approval_id"].(string)
		second := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "correct_amount",
			"corrected_amount": "12500.00", "justification": "Correct the invoice to the PO price."}).json(t)["approval_id"].(string)
		d := check(t, s.do("POST", "/approvals/"+first+"/decision", map[string]any{"decision": "approve",
			"reason": "Fine by me."}, as("m.keller")), 409, "APPROVAL_SUPERSEDED", "fix_input_and_retry")
		if d["approval_id"] != first || d["superseded_by"] != second || d["status"] != "superseded" {
			t.Errorf("details %v", d)
		}
	})

	t.Run("APPROVAL_SENT_BACK", func(t *testing.T) {
		s := newStack(t)
		id := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
			"justification": "Unit price 8 % over the PO; supplier cites a surcharge."}).json(t)["approval_id"].(string)
		s.sendBack(id, "Which clause of the contract allows the surcharge?", "m.keller")
		d := check(t, s.do("GET", "/approvals/"+id, nil), 409, "APPROVAL_SENT_BACK", "request_approval")
		if d["approval_id"] != id || d["question"] != "Which clause of the contract allows the surcharge?" || d["asked_by"] != "m.keller" {
			t.Errorf("details %v", d)
		}
	})

	t.Run("ERP_OUTCOME_UNKNOWN", func(t *testing.T) {
		// Every Release loses its connection after it was sent, and every
		// read that would settle it fails: no one can say whether the
		// invoice was posted.
		s := newStack(t)
		r := s.do("POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "post_as_invoiced",
			"justification": "Matched against the purchase order and its goods receipt."})
		id := r.json(t)["approval_id"].(string)
		for _, rule := range []sim.FaultRule{
			{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultReset, Method: "POST", Path: "Post", Count: -1},
			// The post's own first read of the invoice passes.
			{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultStatus, Status: 503, Method: "GET", Schedule: "." + strings.Repeat("x", 40)},
		} {
			if err := s.sim.InjectFault(rule); err != nil {
				t.Fatal(err)
			}
		}
		d := check(t, s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": id}), 502,
			"ERP_OUTCOME_UNKNOWN", "hold_and_recheck")
		// The Post is sent once: it may still be running at the ERP.
		if d["invoice_id"] != "5105600101" || d["attempts"] != float64(1) {
			t.Errorf("details %v, want invoice_id and 1 attempt", d)
		}
	})

	t.Run("AUTH_UNAVAILABLE", func(t *testing.T) {
		iss := newTestIssuer(t)
		iss.keysDown.Store(true)
		s := newOAuthStack(t, iss)
		r := s.do("GET", "/invoices/5105600101", nil, "Authorization: Bearer "+iss.sign(t, iss.claims("agent-app", "read"), nil))
		d := check(t, r, 503, "AUTH_UNAVAILABLE", "hold_and_recheck")
		if d["retry_after_s"] == nil || r.header.Get("Retry-After") == "" || r.header.Get("WWW-Authenticate") != "" {
			t.Errorf("details %v, Retry-After %q, WWW-Authenticate %q", d, r.header.Get("Retry-After"), r.header.Get("WWW-Authenticate"))
		}
	})

	t.Run("RATE_LIMITED", func(t *testing.T) {
		s := newStack(t, withOptions(func(o *api.Options) { o.RateLimit = 1 }))
		s.do("GET", "/suppliers/100042", nil)
		d := check(t, s.do("GET", "/suppliers/100043", nil), 429, "RATE_LIMITED", "hold_and_recheck")
		if d["retry_after_s"] == nil {
			t.Errorf("details %v, want retry_after_s", d)
		}
	})

	t.Run("INTERNAL", func(t *testing.T) {
		srv, err := api.NewServer(api.Options{ERP: panicky{}, Records: testRecords(t)})
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(srv)
		defer gw.Close()
		s := &stack{t: t, gw: gw, client: &http.Client{Transport: newContractTransport(t, gw.URL, "127.0.0.1:1")}}
		r := s.do("GET", "/invoices/5105600101", nil)
		check(t, r, 500, "INTERNAL", "stop_and_escalate")
		if strings.Contains(string(r.body), "nil map") {
			t.Errorf("panic value leaked: %s", r.body)
		}

		// A panic in one of the match's concurrent reads is answered the
		// same way, and the process lives on.
		srv, err = api.NewServer(api.Options{ERP: panickyRead{}, Records: testRecords(t)})
		if err != nil {
			t.Fatal(err)
		}
		gw2 := httptest.NewServer(srv)
		defer gw2.Close()
		s = &stack{t: t, gw: gw2, client: &http.Client{Transport: newContractTransport(t, gw2.URL, "127.0.0.1:1")}}
		for range 2 {
			r = s.do("POST", "/invoices/5105600101/three-way-match", nil)
			check(t, r, 500, "INTERNAL", "stop_and_escalate")
			if strings.Contains(string(r.body), "nil map") || strings.Contains(string(r.body), "goroutine") {
				t.Errorf("panic leaked: %s", r.body)
			}
		}
	})

	for _, e := range errmap.Catalogue() {
		if !seen[string(e.Code)] {
			t.Errorf("no test triggers %s through the HTTP API", e.Code)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	s := newStack(t)
	big := `{"reason":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `"}`
	tests := []struct {
		name    string
		method  string
		path    string
		body    any
		headers []string
		status  int
		field   string
	}{
		{"malformed JSON", "POST", "/invoices/5105600101/hold", `{"reason":`, nil, 400, ""},
		{"not an object", "POST", "/invoices/5105600101/hold", `["reason"]`, nil, 400, ""},
		{"unknown field", "POST", "/invoices/5105600101/hold", `{"reason":"waiting","colour":"red"}`, nil, 400, "colour"},
		{"wrong type", "POST", "/invoices/5105600101/hold", `{"reason":42}`, nil, 400, "reason"},
		{"trailing data", "POST", "/invoices/5105600101/hold", `{"reason":"waiting"} {}`, nil, 400, ""},
		{"empty body", "POST", "/invoices/5105600101/hold", "", nil, 400, ""},
		{"not JSON content type", "POST", "/invoices/5105600101/hold", `{"reason":"waiting"}`, []string{"Content-Type: text/plain"}, 415, ""},
		{"oversize body", "POST", "/invoices/5105600101/hold", big, nil, 413, ""},
		{"invoice id too short", "GET", "/invoices/123", nil, nil, 400, "invoice_id"},
		{"invoice id letters", "GET", "/invoices/51056001ab", nil, nil, 400, "invoice_id"},
		{"injection in id", "GET", "/invoices/" + pathEscape("5105600101' or '1'='1"), nil, nil, 400, "invoice_id"},
		{"traversal in id", "GET", "/suppliers/" + pathEscape("../../etc/passwd"), nil, nil, 400, "supplier_id"},
		{"po id wrong form", "GET", "/purchase-orders/45000", nil, nil, 400, "po_id"},
		{"item wrong form", "GET", "/purchase-orders/4500018822/items/abc/goods-receipts", nil, nil, 400, "item"},
		{"search without name", "GET", "/suppliers", nil, nil, 400, "name"},
		{"search bad limit", "GET", "/suppliers?name=acme&limit=500", nil, nil, 400, "limit"},
		{"search unknown param", "GET", "/suppliers?name=acme&sort=x", nil, nil, 400, "sort"},
		{"rate limit text as reason", "POST", "/invoices/5105600101/hold", map[string]any{"reason": "Rate limit exceeded, retry after 30s"}, nil, 400, "reason"},
		{"unknown as justification", "POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "accept_variance", "justification": "unknown"}, nil, 400, "justification"},
		{"N/A as summary", "POST", "/handovers", map[string]any{"invoice_id": "5105600101", "queue": "ap_queue", "summary": "N/A"}, nil, 400, "summary"},
		{"error as evidence", "POST", "/handovers", map[string]any{"invoice_id": "5105600101", "queue": "ap_queue", "summary": "Price differs from PO.", "evidence": []string{"error"}}, nil, 400, "evidence"},
		{"timeout as reason", "POST", "/invoices/5105600101/hold", map[string]any{"reason": "timeout"}, nil, 400, "reason"},
		{"empty reason", "POST", "/invoices/5105600101/hold", map[string]any{"reason": ""}, nil, 400, "reason"},
		{"unknown action", "POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "delete_invoice", "justification": "Because."}, nil, 400, "proposed_action"},
		{"correct_amount without amount", "POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "correct_amount", "justification": "Price per contract."}, nil, 400, "corrected_amount"},
		{"bad amount", "POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "correct_amount", "justification": "Price per contract.", "corrected_amount": "12,500"}, nil, 400, "corrected_amount"},
		{"recheck in the past", "POST", "/invoices/5105600101/hold", map[string]any{"reason": "waiting", "recheck_at": "2001-01-01T00:00:00Z"}, nil, 400, "recheck_at"},
		{"unknown queue", "POST", "/handovers", map[string]any{"invoice_id": "5105600101", "queue": "ceo", "summary": "Price differs."}, nil, 400, "queue"},
		{"unknown code", "POST", "/handovers", map[string]any{"invoice_id": "5105600101", "code": "NOPE", "summary": "Price differs."}, nil, 400, "code"},
		{"bad idempotency key", "POST", "/invoices/5105600101/hold", map[string]any{"reason": "waiting"}, []string{"Idempotency-Key: has space"}, 400, "Idempotency-Key"},
		{"two different keys", "POST", "/invoices/5105600101/hold", map[string]any{"reason": "waiting", "idempotency_key": "a"}, []string{"Idempotency-Key: b"}, 400, "idempotency_key"},
		{"unknown route", "GET", "/invoices", nil, nil, 404, ""},
		{"unknown deep route", "GET", "/admin/config", nil, nil, 404, ""},
		{"wrong method", "DELETE", "/invoices/5105600101", nil, nil, 405, ""},
		{"wrong method on a match", "GET", "/invoices/5105600101/three-way-match", nil, nil, 405, ""},
		{"wrong method on write", "GET", "/invoices/5105600101/post", nil, nil, 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.t = t
			r := s.do(tt.method, tt.path, tt.body, tt.headers...)
			d := wantError(t, r, tt.status, "INVALID_REQUEST", "fix_input_and_retry")
			if tt.status == 405 && r.header.Get("Allow") == "" {
				t.Errorf("405 without an Allow header")
			}
			if tt.field != "" && d["field"] != tt.field {
				t.Errorf("details.field = %v, want %s", d["field"], tt.field)
			}
		})
	}
	s.t = t
	if n := s.counts(); n != (recordCounts{}) || len(s.sim.Ledger().Postings) != 0 {
		t.Errorf("refused requests wrote records %+v or postings %d", n, len(s.sim.Ledger().Postings))
	}
}

func TestIdempotentReplay(t *testing.T) {
	s := newStack(t)
	body := map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": "PO 4500018830 is finally invoiced.",
		"evidence": []string{"PO item 10 delivered and finally invoiced"}}
	first := s.do("POST", "/handovers", body, "Idempotency-Key: ho-1")
	if first.status != 200 || first.json(t)["queue"] != "procurement" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	// The key may also come in the body; the same key and arguments replay.
	body["idempotency_key"] = "ho-1"
	again := s.do("POST", "/handovers", body)
	if again.status != 200 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay %d %q replayed=%q, want the first body again", again.status, again.body, again.header.Get("Idempotent-Replayed"))
	}
	// Concurrent calls with one key apply the write once.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "waiting for goods"}, "Idempotency-Key: hold-1"); r.status != 200 {
				t.Errorf("concurrent hold: %d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	if n := s.counts(); n.handovers != 1 || n.holds != 1 {
		t.Errorf("records %+v, want 1 handover and 1 hold", n)
	}
}

func TestServiceEndpoints(t *testing.T) {
	s := newStack(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := s.do("GET", p, nil); r.status != 200 {
			t.Errorf("%s: %d", p, r.status)
		}
	}
	r := s.do("GET", "/invoices/5105600101", nil, "X-Request-Id: req-abc.1", "X-Run-Id: run-7")
	if r.header.Get("X-Request-Id") != "req-abc.1" || r.header.Get("X-Run-Id") != "run-7" {
		t.Errorf("ids not echoed: %q %q", r.header.Get("X-Request-Id"), r.header.Get("X-Run-Id"))
	}
	r = s.do("GET", "/invoices/5105600101", nil, "X-Request-Id: <script>")
	if id := r.header.Get("X-Request-Id"); id == "" || strings.Contains(id, "<") {
		t.Errorf("a malformed request id must be replaced, got %q", id)
	}
	s.do("GET", "/invoices/5105600999", nil)
	r = s.do("GET", "/metrics", nil)
	text := string(r.body)
	for _, want := range []string{
		`erpgate_outcomes_total{code="INVOICE_NOT_FOUND",operation="get_invoice"} 1`,
		`erpgate_outcomes_total{code="PERIOD_CLOSED",operation="post_invoice"} 0`,
		`erpgate_request_duration_seconds_bucket{operation="get_invoice"`,
		`erpgate_erp_attempts_total{result="ok",service="supplier_invoice"}`,
		`erpgate_http_requests_total{operation="get_invoice",status="404"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestReadyReportsTheBreakers(t *testing.T) {
	s := newStack(t, withPolicy(func(p *retry.Policy) { p.MaxAttempts = 1; p.Breaker.MinRequests, p.Breaker.FailureRatio = 2, 0.6 }))
	s.do("GET", "/purchase-orders/4500018822", nil)
	m := s.do("GET", "/readyz", nil).json(t)
	if m["status"] != "ready" || m["breakers"].(map[string]any)["purchase_order"] != "closed" {
		t.Errorf("/readyz %v, want ready with the purchase_order breaker closed", m)
	}
	if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 503, Count: -1}); err != nil {
		t.Fatal(err)
	}
	s.do("GET", "/purchase-orders/4500018822", nil)
	s.do("GET", "/purchase-orders/4500018823", nil)
	r := s.do("GET", "/readyz", nil)
	m = r.json(t)
	if r.status != 200 || m["status"] != "degraded" || m["breakers"].(map[string]any)["purchase_order"] != "open" {
		t.Errorf("/readyz %d %v, want 200 degraded with the purchase_order breaker open", r.status, m)
	}
}

func TestReadyReportsFailure(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) {
		o.Ready = func(context.Context) error { return fmt.Errorf("breaker open: %w", context.DeadlineExceeded) }
	}))
	wantError(t, s.do("GET", "/readyz", nil), 503, "ERP_UNAVAILABLE", "hold_and_recheck")
}

// corruptingERP stands between the gateway and the ERP at erpURL: the
// answers to reads whose path contains path have every match of re
// replaced with repl, and reads counts them. It returns its URL.
func corruptingERP(t *testing.T, erpURL, path string, re *regexp.Regexp, repl string) (string, *atomic.Int32) {
	t.Helper()
	target, err := url.Parse(erpURL)
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	director := proxy.Director
	proxy.Director = func(r *http.Request) {
		director(r)
		// Uncompressed, so that the answer can be rewritten.
		r.Header.Del("Accept-Encoding")
	}
	proxy.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, path) || req.Header.Get("X-CSRF-Token") == "Fetch" {
			return nil
		}
		reads.Add(1)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if !re.Match(body) {
			t.Errorf("the answer to %s has nothing to corrupt: %s", req.URL.Path, body)
		}
		body = re.ReplaceAll(body, []byte(repl))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL, &reads
}
