package api_test

import (
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// TestWhatTheAgentReceives shows, for every fault the ERP can have, what
// reaches the agent once the gateway's own retries are done. Each fault
// lasts for the whole call unless the row says otherwise.
func TestWhatTheAgentReceives(t *testing.T) {
	readPO := func(s *stack) result { return s.do("GET", "/purchase-orders/4500018822", nil) }
	hold := func(s *stack) result {
		return s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "Waiting for the goods receipt."})
	}
	post := func(s *stack) result {
		r := s.do("POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "post_as_invoiced",
			"justification": "Matched against the purchase order and its goods receipt."})
		return s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": r.json(s.t)["approval_id"]})
	}
	po, inv := erp.ServicePurchaseOrder, erp.ServiceSupplierInvoice
	tests := []struct {
		name     string
		rule     sim.FaultRule
		call     func(*stack) result
		status   int
		code     string // "" for a success
		attempts float64
		holds    int // holds the gateway recorded afterwards
		posted   int // postings of 5105600101 in the ledger afterwards
	}{
		{"latency within the attempt timeout", sim.FaultRule{Service: po, Kind: sim.FaultHang, DelayMS: 50, Count: -1}, readPO, 200, "", 0, 0, 0},
		{"hang past the timeout, read", sim.FaultRule{Service: po, Kind: sim.FaultHang, DelayMS: 2000, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"connection reset, read", sim.FaultRule{Service: po, Kind: sim.FaultReset, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		// A Post whose connection broke may be running at the ERP: it is
		// never sent again; the invoice read back does not show it posted.
		{"connection reset on Release, reconciled", sim.FaultRule{Service: inv, Kind: sim.FaultReset, Method: "POST", Path: "Post", Count: -1}, post, 502, "ERP_OUTCOME_UNKNOWN", 1, 0, 0},
		{"500 with an SAP envelope", sim.FaultRule{Service: po, Status: 500, Kind: sim.FaultStatus, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 1, 0, 0},
		{"502, read", sim.FaultRule{Service: po, Status: 502, Kind: sim.FaultStatus, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"503, read", sim.FaultRule{Service: po, Status: 503, Kind: sim.FaultStatus, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"504", sim.FaultRule{Service: po, Status: 504, Kind: sim.FaultStatus, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"429 with a Retry-After past the deadline", sim.FaultRule{Service: po, Status: 429, Kind: sim.FaultStatus, RetryAfterS: 60, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 1, 0, 0},
		{"429 with a short Retry-After, once", sim.FaultRule{Service: po, Status: 429, Kind: sim.FaultStatus, RetryAfterS: 1}, readPO, 200, "", 0, 0, 0},
		{"429 with a Retry-After date", sim.FaultRule{Service: po, Status: 429, Kind: sim.FaultStatus, RetryAfterS: 60, RetryAfterDate: true, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 1, 0, 0},
		{"HTML 500 Connection timed out", sim.FaultRule{Service: po, Kind: sim.FaultHTML500, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"malformed JSON, read", sim.FaultRule{Service: po, Kind: sim.FaultMalformed, Count: -1}, readPO, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"malformed JSON, twice", sim.FaultRule{Service: po, Kind: sim.FaultMalformed, Count: 2}, readPO, 200, "", 0, 0, 0},
		{"503 on the invoice read, hold", sim.FaultRule{Service: inv, Status: 503, Kind: sim.FaultStatus, Method: "GET", Count: -1}, hold, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"hold with the goods receipts read", sim.FaultRule{Service: erp.ServiceMaterialDocument, Kind: sim.FaultHang, DelayMS: 50, Count: -1}, hold, 200, "", 0, 1, 0},
		{"503 on Release", sim.FaultRule{Service: inv, Status: 503, Kind: sim.FaultStatus, Method: "POST", Path: "Post", Count: -1}, post, 503, "ERP_UNAVAILABLE", 3, 0, 0},
		{"Release answer lost once, settled by reading", sim.FaultRule{Service: inv, Kind: sim.FaultLost, Method: "POST", Path: "Post"}, post, 200, "", 0, 0, 1},
		{"Release answer lost, settled by reading", sim.FaultRule{Service: inv, Kind: sim.FaultLost, Method: "POST", Path: "Post", Count: -1}, post, 200, "", 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t, withPolicy(func(p *retry.Policy) { p.AttemptTimeout, p.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond }))
			if err := s.sim.InjectFault(tt.rule); err != nil {
				t.Fatal(err)
			}
			r := tt.call(s)
			if tt.code == "" {
				if r.status != tt.status {
					t.Fatalf("got %d %s, want %d", r.status, r.body, tt.status)
				}
			} else {
				d := wantError(t, r, tt.status, tt.code, "hold_and_recheck")
				if d["attempts"] != tt.attempts {
					t.Errorf("attempts %v, want %v: %s", d["attempts"], tt.attempts, r.body)
				}
				if tt.code == "ERP_UNAVAILABLE" && (d["retry_after_s"] == nil || r.header.Get("Retry-After") == "") {
					t.Errorf("no retry_after_s or Retry-After: %s", r.body)
				}
			}
			l := s.sim.Ledger()
			if n := s.counts().holds; n != tt.holds {
				t.Errorf("%d holds recorded, want %d", n, tt.holds)
			}
			if n := countPostings(l, "5105600101"); n != tt.posted {
				t.Errorf("5105600101 posted %d times, want %d", n, tt.posted)
			}
		})
	}
}
