package api_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
)

// notInARun are the catalogue's codes no agent's run meets as the answer
// to a call it could follow up in the same run, and why.
var notInARun = map[errmap.Code]string{
	errmap.InvalidRequest:       "the fix is other arguments, which no limit compares with the call refused",
	errmap.Unauthenticated:      "refused before the run is read",
	errmap.ScopeMissing:         "refused before the run is read",
	errmap.RateLimited:          "refused before the run is read; the same call after retry_after_s is the run's first",
	errmap.AuthUnavailable:      "refused before the run is read; the same call after retry_after_s is the run's first",
	errmap.IdempotencyKeyReused: "refused before the run is read",
	errmap.WriteInProgress:      "refused before the run is read; the same call after retry_after_s is the run's first",
	errmap.ERPOutcomeUnknown:    "a write's hold_and_recheck: hold_invoice, a create, then the same write, which the guard lets through after an unknown outcome",
	errmap.ERPConfiguration:     "stop_and_escalate: a person fixes the configuration; hand_over is budget-free and a create",
	errmap.ERPDataInvalid:       "stop_and_escalate: a person looks at the record in the ERP; hand_over is budget-free and a create",
	errmap.Internal:             "stop_and_escalate: hand_over is budget-free and a create",
	errmap.ApprovalDecided:      "a person's operation, part of no run",
	errmap.ApprovalSuperseded:   "a person's operation, part of no run",
	errmap.SegregationOfDuties:  "a person's operation, part of no run",
}

// walkStep is a call of a run and what the guard must do with it.
type walkStep struct {
	method, path string
	body         any
	// code is the named outcome the call must end with; "" for a success
	// that carries no code.
	code string
}

// walk is how an agent meets one code and follows its next_action.
type walk struct {
	code errmap.Code
	// meet are the calls up to and including the one answered with code.
	meet []walkStep
	// person is what a person does before the last call of meet, which
	// meets it; nil for nothing.
	person func(t *testing.T, s *stack)
	// change makes the thing a wait waits for arrive; nil for none.
	change func(t *testing.T, s *stack)
	// follow are the moves next_action asks for, and, for a wait, the
	// same call again after change.
	follow []walkStep
}

func walks() []walk {
	match := func(inv, code string) walkStep {
		return walkStep{"POST", "/invoices/" + inv + "/three-way-match", nil, code}
	}
	handOver := func(inv, code string) walkStep {
		return walkStep{"POST", "/handovers", map[string]any{"invoice_id": inv, "code": code, "summary": "Invoice " + inv + " needs a person: " + code + "."}, ""}
	}
	approve := func(inv, action string) walkStep {
		return walkStep{"POST", "/invoices/" + inv + "/approvals", map[string]any{"proposed_action": action, "justification": "As the match found."}, ""}
	}
	hold := func(inv string) walkStep {
		return walkStep{"POST", "/invoices/" + inv + "/hold", map[string]any{"reason": "Waiting as the gateway said."}, ""}
	}
	return []walk{
		{code: errmap.InvoiceNotFound, meet: []walkStep{{"GET", "/invoices/5105600999", nil, "INVOICE_NOT_FOUND"}},
			follow: []walkStep{{"GET", "/invoices/5105600099", nil, "INVOICE_NOT_FOUND"}, handOver("5105600999", "INVOICE_NOT_FOUND")}},
		{code: errmap.PONotFound, meet: []walkStep{{"GET", "/purchase-orders/4500019822", nil, "PO_NOT_FOUND"}},
			follow: []walkStep{{"GET", "/purchase-orders/4500018822", nil, ""}, handOver("5105600103", "PO_NOT_FOUND")}},
		{code: errmap.SupplierNotFound, meet: []walkStep{match("5105600104", "SUPPLIER_NOT_FOUND")},
			follow: []walkStep{{"GET", "/suppliers/100099", nil, "SUPPLIER_NOT_FOUND"}, handOver("5105600104", "SUPPLIER_NOT_FOUND")}},
		{code: errmap.GRMissing, meet: []walkStep{match("5105600105", "GR_MISSING")},
			follow: []walkStep{hold("5105600105"), match("5105600105", "")},
			change: func(t *testing.T, s *stack) {
				if _, err := s.sim.PostGoodsReceipt("4500018822", "20", decimal.NewFromInt(5)); err != nil {
					t.Fatal(err)
				}
				if rep, err := s.scheduler(t, time.Now().Add(48*time.Hour)).RunOnce(t.Context()); err != nil || rep.Released != 1 {
					t.Fatalf("re-check: %+v %v", rep, err)
				}
			}},
		{code: errmap.POClosed, meet: []walkStep{match("5105600106", "PO_CLOSED")}, follow: []walkStep{handOver("5105600106", "PO_CLOSED")}},
		{code: errmap.DuplicateInvoice, meet: []walkStep{match("5105600107", "DUPLICATE_INVOICE")},
			follow: []walkStep{handOver("5105600107", "DUPLICATE_INVOICE")}},
		{code: errmap.ApproverNotFound, meet: []walkStep{{"POST", "/invoices/5105600108/approvals",
			map[string]any{"proposed_action": "post_as_invoiced", "justification": "Matched."}, "APPROVER_NOT_FOUND"}},
			follow: []walkStep{handOver("5105600108", "APPROVER_NOT_FOUND")}},
		{code: errmap.ApprovalMissing, meet: []walkStep{{"POST", "/invoices/5105600101/post", map[string]any{}, "APPROVAL_MISSING"}},
			follow: []walkStep{approve("5105600101", "post_as_invoiced")}},
		{code: errmap.PeriodClosed, meet: []walkStep{approve("5105600109", "post_as_invoiced"),
			{"POST", "/invoices/5105600109/post", map[string]any{"approval_id": "A0000001"}, "PERIOD_CLOSED"}},
			follow: []walkStep{handOver("5105600109", "PERIOD_CLOSED")}},
		{code: errmap.ToleranceExceeded, meet: []walkStep{match("5105600102", "TOLERANCE_EXCEEDED")},
			follow: []walkStep{approve("5105600102", "accept_variance"), hold("5105600102"),
				{"POST", "/invoices/5105600102/post", map[string]any{"approval_id": "A0000001"}, ""}},
			change: func(t *testing.T, s *stack) { s.decide("A0000001", "approve", "m.keller") }},
		{code: errmap.ApprovalSentBack, meet: []walkStep{approve("5105600102", "accept_variance"), hold("5105600102"),
			{"GET", "/approvals/A0000001", nil, "APPROVAL_SENT_BACK"}},
			person: func(t *testing.T, s *stack) {
				s.sendBack("A0000001", "Which clause of the contract allows the 8 % surcharge?", "m.keller")
			},
			follow: []walkStep{{"POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
				"justification": "Clause 4.2 of the supply contract allows an 8 % raw material surcharge."}, ""},
				hold("5105600102"), {"POST", "/invoices/5105600102/post", map[string]any{"approval_id": "A0000002"}, ""}},
			change: func(t *testing.T, s *stack) { s.decide("A0000002", "approve", "m.keller") }},
		{code: errmap.LoopDetected, meet: []walkStep{{"GET", "/suppliers/100042", nil, ""}, {"GET", "/suppliers/100042", nil, "LOOP_DETECTED"}},
			follow: []walkStep{handOver("5105600101", "LOOP_DETECTED"), handOver("5105600101", "LOOP_DETECTED")}},
		{code: errmap.BudgetExhausted, meet: []walkStep{{"GET", "/invoices/5105600101", nil, ""}, match("5105600101", ""),
			{"POST", "/invoices/5105600101/post", map[string]any{}, "BUDGET_EXHAUSTED"}},
			follow: []walkStep{handOver("5105600101", "BUDGET_EXHAUSTED")}},
		{code: errmap.ERPUnavailable, meet: []walkStep{{"GET", "/suppliers/100042", nil, "ERP_UNAVAILABLE"}},
			follow: []walkStep{hold("5105600101"), {"GET", "/suppliers/100042", nil, ""}},
			change: func(t *testing.T, s *stack) { s.sim.ClearFaults(); s.clock.add(2 * time.Minute) }},
	}
}

// TestNoNextActionIsRefusedByTheGuard walks the catalogue: for every code
// an agent's run can meet, it meets it in a run, follows its next_action
// once (and, for a wait, makes the awaited thing arrive and repeats the
// call), and checks that no move is refused by the gateway's own limits.
// A code of the catalogue with neither a walk nor a reason fails the test.
func TestNoNextActionIsRefusedByTheGuard(t *testing.T) {
	all := walks()
	for _, e := range errmap.Catalogue() {
		_, skip := notInARun[e.Code]
		if !skip && !slices.ContainsFunc(all, func(w walk) bool { return w.code == e.Code }) {
			t.Errorf("%s has no walk and no reason it is met outside a run", e.Code)
		}
	}
	for _, w := range all {
		t.Run(string(w.code), func(t *testing.T) {
			c := &clock{now: time.Now()}
			s := newStack(t, withOptions(func(o *api.Options) {
				o.Now = c.Now
				if w.code == errmap.BudgetExhausted {
					o.Runs.Budget = 2
				}
			}))
			s.clock = c
			if w.code == errmap.ERPUnavailable {
				if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServiceBusinessPartner, Kind: sim.FaultStatus, Status: 503, RetryAfterS: 30}); err != nil {
					t.Fatal(err)
				}
			}
			run := "X-Run-Id: walk-" + string(w.code)
			for i, st := range w.meet {
				if i == len(w.meet)-1 && w.person != nil {
					w.person(t, s)
				}
				s.walkCall(t, run, st, false)
			}
			for i, st := range w.follow {
				// A wait's last move is the call waited on: the awaited thing
				// arrives first.
				if i == len(w.follow)-1 && w.change != nil {
					w.change(t, s)
				}
				s.walkCall(t, run, st, true)
			}
		})
	}
}

// walkCall makes one call of the walk and checks its outcome; a follow-up
// move must not be refused by the run's limits.
func (s *stack) walkCall(t *testing.T, run string, st walkStep, follow bool) {
	t.Helper()
	r := s.do(st.method, st.path, st.body, run)
	var m map[string]any
	if len(r.body) > 0 {
		m = r.json(t)
	}
	code, _ := m["code"].(string)
	if r.status < 300 {
		code = ""
		if res, ok := m["result"].(string); ok && res != "MATCHED" {
			code = res
		}
	}
	what := fmt.Sprintf("%s %s", st.method, st.path)
	if follow {
		if d, _ := m["details"].(map[string]any); d != nil && d["limit"] != nil {
			t.Fatalf("%s, the move next_action asked for, was refused by limit %v: %s", what, d["limit"], r.body)
		}
	}
	if code != st.code {
		t.Fatalf("%s: %d %s, want code %q", what, r.status, r.body, st.code)
	}
}
