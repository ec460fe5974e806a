package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t, sim.Options{})
	invTok, procTok := e.token(invSrv), e.token(procSrv)
	const n = 16
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	ids := make(chan string, 3*n)
	for i := range n {
		wg.Add(4)
		go func() {
			defer wg.Done()
			r, err := e.try(http.MethodPost, invSrv+releasePath("5105600101", "2026"), nil, map[string]string{"X-CSRF-Token": invTok})
			if err != nil {
				t.Error(err)
			}
			statuses <- r.status
		}()
		go func() {
			defer wg.Done()
			ids <- approve(t, e, procTok, "13500.00", fmt.Sprintf("distinct-%d", i))
		}()
		go func() {
			defer wg.Done()
			ids <- "shared " + approve(t, e, procTok, "500.00", "shared")
		}()
		go func() {
			defer wg.Done()
			r, err := e.try(http.MethodGet, invSrv+"/A_SupplierInvoice"+q("$filter", "InvoicingParty eq '100042'", "$expand", "to_SuplrInvcItemPurOrdRef"), nil, nil)
			if err != nil || r.status != http.StatusOK {
				t.Errorf("concurrent read: got %d %v", r.status, err)
			}
			e.sim.Ledger()
		}()
	}
	wg.Wait()
	close(statuses)
	close(ids)

	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[http.StatusOK] != 1 || count[http.StatusBadRequest] != n-1 {
		t.Errorf("concurrent releases: got %v, want one 200 and %d 400", count, n-1)
	}
	seen := map[string]int{}
	for id := range ids {
		seen[id]++
	}
	l := e.sim.Ledger()
	if len(l.Postings) != 1 {
		t.Errorf("postings: got %d, want 1", len(l.Postings))
	}
	if len(l.Approvals) != n+1 {
		t.Errorf("approvals: got %d, want %d (one per distinct id plus one shared)", len(l.Approvals), n+1)
	}
	shared := 0
	for id, c := range seen {
		if c != 1 && c != n {
			t.Errorf("approval answer %q seen %d times", id, c)
		}
		if c == n {
			shared++
		}
	}
	if shared != 1 || len(seen) != n+1 {
		t.Errorf("answers: got %v, want %d distinct and one shared", seen, n)
	}
}

// approve posts an approval request from a goroutine: it reports problems
// with t.Error and returns the answer's status and approval id.
func approve(t *testing.T, e *env, token, amt, repeatID string) string {
	r, err := e.try(http.MethodPost, procSrv+"/ApprovalSet", approvalBody("5105600102", "2026", amt),
		map[string]string{"X-CSRF-Token": token, "Repeatability-Request-ID": repeatID})
	if err != nil {
		t.Error(err)
		return "error"
	}
	var v struct{ D struct{ ApprovalID string } }
	if err := json.Unmarshal(r.body, &v); err != nil || r.status != http.StatusCreated {
		t.Errorf("approval %s: got %d %v: %s", repeatID, r.status, err, r.body)
	}
	return v.D.ApprovalID
}
