package api_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// chaosFaults injects every fault kind the simulator has, each into a few
// per cent of all OData requests, reads and writes alike.
func chaosFaults() []sim.FaultRule {
	const p = 0.03
	return []sim.FaultRule{
		{Service: sim.AnyService, Kind: sim.FaultStatus, Status: 500, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultStatus, Status: 502, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultStatus, Status: 503, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultStatus, Status: 504, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultStatus, Status: 429, RetryAfterS: 60, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultHTML500, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultMalformed, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultReset, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultHang, DelayMS: 400, Probability: p},
		{Service: sim.AnyService, Kind: sim.FaultLost, Probability: p},
	}
}

// TestChaos drives the golden set and concurrent posts through the gateway
// while the simulated ERP fails in every way it can, and checks that no
// write is applied twice, no posting is lost silently, and every answer is
// either a clean result or a five-field error.
func TestChaos(t *testing.T) {
	const rounds, posters = 20, 20
	total := 0
	codes := map[string]int{}
	var codesMu sync.Mutex
	count := func(r result) {
		codesMu.Lock()
		defer codesMu.Unlock()
		total++
		if r.status == 200 {
			codes["200"]++
		} else {
			codes[fmt.Sprint(r.json(t)["code"])]++
		}
	}
	start := time.Now()
	for round := 1; round <= rounds; round++ {
		s := newStack(t,
			withSim(func(o *sim.Options) { o.Seed = uint64(round); o.Faults = chaosFaults() }),
			withPolicy(func(p *retry.Policy) {
				p.AttemptTimeout = 150 * time.Millisecond
				p.CallTimeout = 2 * time.Second
				p.InitialInterval, p.MaxInterval = time.Millisecond, 5*time.Millisecond
				p.Breaker.OpenFor = 100 * time.Millisecond
			}))
		do := func(method, path string, body any, headers ...string) result {
			r := s.do(method, path, body, headers...)
			count(r)
			if r.status == 200 {
				checkCleanSuccess(t, method+" "+path, r)
			}
			return r
		}

		// The golden reads and matches, four at a time.
		var wg sync.WaitGroup
		paths := []string{"/invoices/5105600101", "/invoices/5105600999", "/purchase-orders/4500018822",
			"/suppliers/100042", "/suppliers?name=acme", "/purchase-orders/4500018822/items/20/goods-receipts"}
		for _, id := range []string{"101", "102", "103", "104", "105", "106", "107", "108", "109"} {
			paths = append(paths, "/invoices/5105600"+id)
		}
		sem := make(chan struct{}, 4)
		for _, p := range paths {
			wg.Add(2)
			go func() { defer wg.Done(); sem <- struct{}{}; do("GET", p, nil); <-sem }()
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				if strings.HasPrefix(p, "/invoices/") {
					do("POST", p+"/three-way-match", nil)
				} else {
					do("GET", p, nil)
				}
				<-sem
			}()
		}
		wg.Wait()

		// Approvals, asked until the ERP answers; the pending one is decided
		// by a person in the simulator.
		approvals := map[string]string{}
		for _, inv := range []string{"5105600101", "5105600102"} {
			action := map[string]string{"5105600101": "post_as_invoiced", "5105600102": "accept_variance"}[inv]
			for try := 0; try < 20 && approvals[inv] == ""; try++ {
				r := do("POST", "/invoices/"+inv+"/approvals", map[string]any{"proposed_action": action,
					"justification": "Matched against the purchase order and its goods receipt."}, "Idempotency-Key: appr-"+inv)
				if r.status == 200 {
					approvals[inv] = r.json(t)["approval_id"].(string)
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if approvals[inv] == "" {
				t.Fatalf("round %d: no approval for %s after 20 tries", round, inv)
			}
		}
		if a := s.do("GET", "/approvals/"+approvals["5105600102"], nil).json(t); a["status"] == "pending" {
			s.decide(approvals["5105600102"], "approve", "m.keller")
		}

		// Concurrent posts of both invoices, half with one shared key.
		type outcome struct{ invoice, code string }
		var (
			mu       sync.Mutex
			outcomes []outcome
		)
		for i := 0; i < posters; i++ {
			for _, inv := range []string{"5105600101", "5105600102"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					headers := []string{}
					if i%2 == 0 {
						headers = append(headers, "Idempotency-Key: post-"+inv)
					}
					r := do("POST", "/invoices/"+inv+"/post", map[string]any{"approval_id": approvals[inv]}, headers...)
					code := "200"
					if r.status != 200 {
						code = fmt.Sprint(r.json(t)["code"])
					}
					mu.Lock()
					outcomes = append(outcomes, outcome{inv, code})
					mu.Unlock()
				}()
			}
		}
		wg.Wait()

		s.sim.ClearFaults()
		ledger := s.sim.Ledger()
		for _, inv := range []string{"5105600101", "5105600102"} {
			posted := countPostings(ledger, inv)
			if posted > 1 {
				t.Errorf("round %d: %s posted %d times", round, inv, posted)
			}
			for _, o := range outcomes {
				if o.invoice != inv {
					continue
				}
				switch o.code {
				case "200":
					if posted != 1 {
						t.Errorf("round %d: %s answered %s but the ledger has %d postings", round, inv, o.code, posted)
					}
				case "ERP_UNAVAILABLE", "ERP_OUTCOME_UNKNOWN", "WRITE_IN_PROGRESS":
				default:
					t.Errorf("round %d: post %s answered %s, want posted, ERP_UNAVAILABLE, ERP_OUTCOME_UNKNOWN or WRITE_IN_PROGRESS", round, inv, o.code)
				}
			}
			// What the ERP holds agrees with the ledger once it is healthy
			// and the breaker has let a probe through.
			var status any
			for try := 0; try < 50 && status == nil; try++ {
				if r := s.do("GET", "/invoices/"+inv, nil); r.status == 200 {
					status = r.json(t)["status"]
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if (status == "posted") != (posted == 1) {
				t.Errorf("round %d: %s status %v with %d postings in the ledger", round, inv, status, posted)
			}
		}
	}
	t.Logf("chaos: %d calls in %d rounds in %v: %v", total, rounds, time.Since(start).Round(time.Millisecond), codes)
	if total < 1000 {
		t.Errorf("only %d calls, want at least 1000", total)
	}
}

// errorWords are fragments of failure text that must never appear in a
// success body.
var errorWords = []string{"error", "exception", "timed out", "unavailable", "rate limit", "retry after", "<html"}

func checkCleanSuccess(t *testing.T, where string, r result) {
	t.Helper()
	low := strings.ToLower(string(r.body))
	for _, w := range errorWords {
		if strings.Contains(low, w) {
			t.Errorf("%s: success body holds %q: %s", where, w, r.body)
		}
	}
}
