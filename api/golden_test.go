package api_test

import (
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

// TestGoldenSet walks every golden invoice through the gateway, over real
// HTTP to the simulated S/4HANA, and checks each outcome's full body.
func TestGoldenSet(t *testing.T) {
	s := newStack(t)
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string // "" for a success
		next   string
	}{
		{"clean_match", "POST", "/invoices/5105600101/three-way-match", nil, 200, "", ""},
		{"tolerance_exceeded", "POST", "/invoices/5105600102/three-way-match", nil, 200, "", ""},
		{"invoice_not_found", "GET", "/invoices/5105600999", nil, 404, "INVOICE_NOT_FOUND", "fix_input_and_retry"},
		{"po_not_found", "POST", "/invoices/5105600103/three-way-match", map[string]any{}, 404, "PO_NOT_FOUND", "fix_input_and_retry"},
		{"supplier_not_found", "POST", "/invoices/5105600104/three-way-match", nil, 404, "SUPPLIER_NOT_FOUND", "fix_input_and_retry"},
		{"gr_missing", "POST", "/invoices/5105600105/three-way-match", nil, 409, "GR_MISSING", "hold_and_recheck"},
		{"gr_missing_lookup", "GET", "/purchase-orders/4500018822/items/20/goods-receipts", nil, 409, "GR_MISSING", "hold_and_recheck"},
		{"po_closed", "POST", "/invoices/5105600106/three-way-match", nil, 409, "PO_CLOSED", "route_to_person"},
		{"duplicate_invoice", "POST", "/invoices/5105600107/three-way-match", nil, 409, "DUPLICATE_INVOICE", "route_to_person"},
		{"approver_not_found", "POST", "/invoices/5105600108/approvals",
			map[string]any{"proposed_action": "post_as_invoiced", "justification": "Matched PO 4500018840 and its goods receipt."},
			422, "APPROVER_NOT_FOUND", "route_to_person"},
		{"approval_missing", "POST", "/invoices/5105600101/post", map[string]any{}, 409, "APPROVAL_MISSING", "request_approval"},
		{"get_invoice", "GET", "/invoices/5105600101", nil, 200, "", ""},
		{"get_purchase_order", "GET", "/purchase-orders/4500018822", nil, 200, "", ""},
		{"get_supplier", "GET", "/suppliers/100042", nil, 200, "", ""},
		{"search_suppliers", "GET", "/suppliers?name=acme", nil, 200, "", ""},
		{"search_suppliers_none", "GET", "/suppliers?name=Globex", nil, 200, "", ""},
		{"get_goods_receipt", "GET", "/purchase-orders/4500018822/items/10/goods-receipts", nil, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.t = t
			r := s.do(tt.method, tt.path, tt.body)
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code, tt.next)
			} else if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			golden(t, tt.name, r)
		})
	}
	s.t = t

	t.Run("search_found_flag", func(t *testing.T) {
		s.t = t
		if m := s.do("GET", "/suppliers?name=Globex", nil).json(t); m["found"] != false || len(m["suppliers"].([]any)) != 0 {
			t.Errorf("no match: found %v suppliers %v, want false and []", m["found"], m["suppliers"])
		}
		if m := s.do("GET", "/suppliers?name=ACME", nil).json(t); m["found"] != true || len(m["suppliers"].([]any)) != 2 {
			t.Errorf("acme: found %v with %d suppliers, want true and 2", m["found"], len(m["suppliers"].([]any)))
		}
	})
	s.t = t

	t.Run("metrics_count_each_code", func(t *testing.T) {
		s.t = t
		for code, op := range map[string]string{
			"INVOICE_NOT_FOUND": "get_invoice", "PO_NOT_FOUND": "run_three_way_match",
			"SUPPLIER_NOT_FOUND": "run_three_way_match", "GR_MISSING": "get_goods_receipt",
			"PO_CLOSED": "run_three_way_match", "DUPLICATE_INVOICE": "run_three_way_match",
			"APPROVER_NOT_FOUND": "request_approval", "APPROVAL_MISSING": "post_invoice",
			"TOLERANCE_EXCEEDED": "run_three_way_match",
		} {
			if got := s.counter("erpgate_outcomes_total", map[string]string{"operation": op, "code": code}); got < 1 {
				t.Errorf("erpgate_outcomes_total{operation=%q,code=%q} = %v, want at least 1", op, code, got)
			}
		}
		if got := s.counter("erpgate_outcomes_total", map[string]string{"operation": "hand_over", "code": "PERIOD_CLOSED"}); got != 0 {
			t.Errorf("pre-registered counter = %v, want 0", got)
		}
	})
}

// TestCleanInvoiceEndToEnd takes 5105600101 all the way: match, approval,
// post; and shows the post is not applied twice.
func TestCleanInvoiceEndToEnd(t *testing.T) {
	s := newStack(t)
	if m := s.do("POST", "/invoices/5105600101/three-way-match", nil).json(t); m["result"] != "MATCHED" {
		t.Fatalf("match result %v, want MATCHED", m["result"])
	}
	r := s.do("POST", "/invoices/5105600101/approvals",
		map[string]any{"proposed_action": "post_as_invoiced", "justification": "Three-way match within tolerance."})
	appr := r.json(t)
	if r.status != 200 || appr["status"] != "approved" || appr["approver"] != "auto" {
		t.Fatalf("approval %d %v by %v, want 200 approved by auto: %s", r.status, appr["status"], appr["approver"], r.body)
	}
	golden(t, "clean_approval", r)
	id := appr["approval_id"].(string)
	if got := s.do("GET", "/approvals/"+id, nil).json(t); got["status"] != "approved" {
		t.Errorf("get_approval status %v, want approved", got["status"])
	}
	r = s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": id})
	post := r.json(t)
	if r.status != 200 || post["status"] != "posted" || post["already_posted"] != false {
		t.Fatalf("post %d %v: %s", r.status, post["status"], r.body)
	}
	golden(t, "clean_post", r)
	if m := s.do("GET", "/invoices/5105600101", nil).json(t); m["status"] != "posted" {
		t.Errorf("invoice status after post %v, want posted", m["status"])
	}
	// A second post is answered from the ERP's state, not applied again.
	r = s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": id})
	if m := r.json(t); r.status != 200 || m["already_posted"] != true {
		t.Errorf("second post: %d already_posted %v, want 200 true", r.status, m["already_posted"])
	}
	if n := countPostings(s.sim.Ledger(), "5105600101"); n != 1 {
		t.Errorf("ledger has %d postings of 5105600101, want 1", n)
	}
}

// TestToleranceExceededNeedsAPerson shows the pending path: the fix for
// 5105600102 waits for a person's decision before it can be posted.
func TestToleranceExceededNeedsAPerson(t *testing.T) {
	s := newStack(t)
	m := s.do("POST", "/invoices/5105600102/three-way-match", nil).json(t)
	ex := m["exceeding"].([]any)
	if m["result"] != "TOLERANCE_EXCEEDED" || m["next_action"] != "request_approval" || len(ex) != 1 {
		t.Fatalf("match %v next %v exceeding %v", m["result"], m["next_action"], ex)
	}
	if v := ex[0].(map[string]any); v["kind"] != "price" || v["variance_amount"] != "1000.00" || v["variance_percent"] != "8.00" {
		t.Errorf("variance %v, want price 1000.00 8.00", v)
	}
	r := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Supplier raised the unit price by 8 % under the 2026 price list; accept the variance."})
	appr := r.json(t)
	if appr["status"] != "pending" || appr["approver"] != "ap_manager" {
		t.Fatalf("approval %v by %v, want pending by ap_manager", appr["status"], appr["approver"])
	}
	golden(t, "pending_approval", r)
	id := appr["approval_id"].(string)
	r = s.do("POST", "/invoices/5105600102/post", map[string]any{"approval_id": id})
	if d := wantError(t, r, 409, "APPROVAL_MISSING", "hold_and_recheck"); d["reason"] != "pending" || d["approval_id"] != id {
		t.Errorf("details %v, want reason pending and the approval id", d)
	}
	golden(t, "approval_pending", r)
	// The requester, an agent without a key, cannot decide its own
	// request, nor name a person to decide for it.
	r = s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": "approve", "reason": "Looks fine to me."})
	if d := wantError(t, r, 409, "SCOPE_MISSING", "route_to_person"); d["scope"] != "approve" {
		t.Errorf("details %v, want the approve scope", d)
	}
	s.decide(id, "approve", "m.keller")
	r = s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": "reject", "reason": "Second thoughts."}, as("j.doe"))
	if d := wantError(t, r, 409, "APPROVAL_DECIDED", "stop_and_escalate"); d["status"] != "approved" {
		t.Errorf("details %v, want status approved", d)
	}
	if got := s.do("GET", "/approvals/"+id, nil).json(t); got["status"] != "approved" || got["decided_at"] == nil ||
		got["decided_by"] != "m.keller" || got["requested_by"] != "anonymous" {
		t.Errorf("after the decision: %v", got)
	}
	r = s.do("POST", "/invoices/5105600102/post", map[string]any{"approval_id": id})
	post := r.json(t)
	if r.status != 200 || post["info_code"] != "TOLERANCE_EXCEEDED" || post["payment_block"] != "R" {
		t.Errorf("post %d info_code %v block %v, want 200 TOLERANCE_EXCEEDED R: %s", r.status, post["info_code"], post["payment_block"], r.body)
	}
}

func TestApprovalMissingReasons(t *testing.T) {
	s := newStack(t)
	approve := func(invoice, action string) string {
		r := s.do("POST", "/invoices/"+invoice+"/approvals", map[string]any{"proposed_action": action,
			"justification": "Reviewed against the purchase order and receipts."})
		if r.status != 200 {
			t.Fatalf("request_approval %s: %d %s", invoice, r.status, r.body)
		}
		return r.json(t)["approval_id"].(string)
	}
	other := approve("5105600109", "post_as_invoiced")
	pending := approve("5105600102", "accept_variance")
	s.decide(pending, "reject", "m.keller")
	tests := []struct {
		name, invoice string
		body          map[string]any
		reason        string
	}{
		{"absent", "5105600101", map[string]any{}, "absent"},
		{"unknown", "5105600101", map[string]any{"approval_id": "A9999999"}, "unknown"},
		{"other_invoice", "5105600101", map[string]any{"approval_id": other}, "other_invoice"},
		{"rejected", "5105600102", map[string]any{"approval_id": pending}, "rejected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.t = t
			d := wantError(t, s.do("POST", "/invoices/"+tt.invoice+"/post", tt.body), 409, "APPROVAL_MISSING", "request_approval")
			if d["reason"] != tt.reason || d["invoice_id"] != tt.invoice {
				t.Errorf("details %v, want reason %s for invoice %s", d, tt.reason, tt.invoice)
			}
		})
	}
	s.t = t
	d := wantError(t, s.do("GET", "/approvals/A9999999", nil), 409, "APPROVAL_MISSING", "request_approval")
	if d["approval_id"] != "A9999999" || d["reason"] != "unknown" {
		t.Errorf("get_approval unknown: details %v", d)
	}
	if n := len(s.sim.Ledger().Postings); n != 0 {
		t.Errorf("ledger has %d postings after refused posts, want 0", n)
	}
}

func TestPeriodClosedAndDuplicateOnPost(t *testing.T) {
	s := newStack(t)
	for _, tt := range []struct {
		invoice, code, next, queue string
	}{
		{"5105600109", "PERIOD_CLOSED", "stop_and_escalate", "finance"},
		{"5105600107", "DUPLICATE_INVOICE", "route_to_person", "ap_team"},
	} {
		t.Run(tt.code, func(t *testing.T) {
			s.t = t
			r := s.do("POST", "/invoices/"+tt.invoice+"/approvals", map[string]any{"proposed_action": "post_as_invoiced",
				"justification": "Matched against PO and goods receipt."})
			id := r.json(t)["approval_id"].(string)
			r = s.do("POST", "/invoices/"+tt.invoice+"/post", map[string]any{"approval_id": id})
			d := wantError(t, r, 409, tt.code, tt.next)
			if d["queue"] != tt.queue || d["invoice_id"] != tt.invoice {
				t.Errorf("details %v, want queue %s and invoice_id %s", d, tt.queue, tt.invoice)
			}
			golden(t, "post_"+tt.invoice, r)
		})
	}
	s.t = t
	if n := len(s.sim.Ledger().Postings); n != 0 {
		t.Errorf("ledger has %d postings, want 0", n)
	}
}

func countPostings(l sim.Ledger, invoice string) int {
	n := 0
	for _, p := range l.Postings {
		if p.InvoiceID == invoice {
			n++
		}
	}
	return n
}

// TestRefusalsAreNotKeptUnderAKey shows that a key's answer is kept only
// when the call wrote or settled something: a post refused while its
// approval is pending posts with the same key and arguments once a person
// approved, and a body refused for a misspelt field is accepted with the
// same key once it is fixed. A success is then replayed.
func TestRefusalsAreNotKeptUnderAKey(t *testing.T) {
	s := newStack(t)
	appr := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Supplier raised the unit price by 8 % under the 2026 price list; accept the variance."}).json(t)
	id := appr["approval_id"].(string)
	body := map[string]any{"approval_id": id}
	wantError(t, s.do("POST", "/invoices/5105600102/post", body, "Idempotency-Key: post-102"), 409, "APPROVAL_MISSING", "hold_and_recheck")
	s.decide(id, "approve", "m.keller")
	r := s.do("POST", "/invoices/5105600102/post", body, "Idempotency-Key: post-102")
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" || r.json(t)["status"] != "posted" {
		t.Fatalf("post after the approval, same key: %d replayed=%q %s", r.status, r.header.Get("Idempotent-Replayed"), r.body)
	}
	again := s.do("POST", "/invoices/5105600102/post", body, "Idempotency-Key: post-102")
	if string(again.body) != string(r.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the success is not replayed: %d replayed=%q %s", again.status, again.header.Get("Idempotent-Replayed"), again.body)
	}

	wantError(t, s.do("POST", "/invoices/5105600105/hold", map[string]any{"REASON": "waiting for goods"}, "Idempotency-Key: hold-105"),
		400, "INVALID_REQUEST", "fix_input_and_retry")
	if r := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "waiting for goods"}, "Idempotency-Key: hold-105"); r.status != 200 {
		t.Errorf("fixed hold, same key: %d %s, want 200", r.status, r.body)
	}
	if n := s.counts(); n.holds != 1 {
		t.Errorf("records %+v, want 1 hold", n)
	}
}
