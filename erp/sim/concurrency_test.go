package sim_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t, sim.Options{})
	tok := e.token(invSrv)
	const n = 16
	var wg sync.WaitGroup
	posts := map[string]chan answer{"5105600101": make(chan answer, n), "5105600108": make(chan answer, n)}
	for range n {
		for id, ch := range posts {
			wg.Go(func() { ch <- postFrom(t, e, tok, id) })
		}
		wg.Go(func() {
			r, err := e.try(http.MethodGet, invSrv+"/A_SupplierInvoice"+q("$filter", "InvoicingParty eq '100042'", "$expand", "to_SuplrInvcItemPurOrdRef"), nil, nil)
			if err != nil || r.status != http.StatusOK {
				t.Errorf("concurrent read: got %d %v", r.status, err)
			}
			e.sim.Ledger()
		})
	}
	wg.Wait()

	// Of concurrent Posts of one invoice, one posts and the others find
	// the invoice posted: SAP's M8/255.
	for id, ch := range posts {
		close(ch)
		count := map[int]int{}
		for a := range ch {
			count[a.status]++
			if a.status == http.StatusBadRequest {
				if e := decodeError(t, reply{status: a.status, body: []byte(a.body)}); e.code != "M8/255" {
					t.Errorf("%s: losing post: got %q, want M8/255: %s", id, e.code, a.body)
				}
			}
		}
		if count[http.StatusOK] != 1 || count[http.StatusBadRequest] != n-1 {
			t.Errorf("%s: concurrent posts: got %v, want one 200 and %d 400", id, count, n-1)
		}
	}
	if l := e.sim.Ledger(); len(l.Postings) != 2 {
		t.Errorf("postings: got %d, want 2 (one per invoice)", len(l.Postings))
	}
}

// answer is the status and body of a write.
type answer struct {
	status int
	body   string
}

// postFrom posts an invoice from a goroutine: it reports transport
// errors with t.Error and returns the answer.
func postFrom(t *testing.T, e *env, token, id string) answer {
	r, err := e.try(http.MethodPost, invSrv+postPath(id, "2026"), nil, map[string]string{"X-CSRF-Token": token})
	if err != nil {
		t.Error(err)
	}
	return answer{r.status, string(r.body)}
}
