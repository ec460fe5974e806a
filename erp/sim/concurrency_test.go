package sim_test

import (
	"fmt"
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
	plain := make(chan answer, n)
	distinct := make(chan answer, n)
	distinctIDs := make(map[string]answer, n)
	var distinctMu sync.Mutex
	shared := make(chan answer, n)
	for i := range n {
		wg.Add(4)
		go func() {
			defer wg.Done()
			plain <- postFrom(t, e, tok, "5105600101", "")
		}()
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("distinct-%d", i)
			a := postFrom(t, e, tok, "5105600108", id)
			distinctMu.Lock()
			distinctIDs[id] = a
			distinctMu.Unlock()
			distinct <- a
		}()
		go func() {
			defer wg.Done()
			shared <- postFrom(t, e, tok, "5105600102", "shared")
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
	close(plain)
	close(distinct)
	close(shared)

	// Without a repeatability id, one Post posts and the others find
	// the invoice posted: SAP's M8/255.
	count := map[int]int{}
	for a := range plain {
		count[a.status]++
		if a.status == http.StatusBadRequest {
			if e := decodeError(t, reply{status: a.status, body: []byte(a.body)}); e.code != "M8/255" {
				t.Errorf("losing post: got %q, want M8/255: %s", e.code, a.body)
			}
		}
	}
	if count[http.StatusOK] != 1 || count[http.StatusBadRequest] != n-1 {
		t.Errorf("concurrent posts: got %v, want one 200 and %d 400", count, n-1)
	}
	// Distinct ids are distinct requests: one posts, the others find it
	// posted.
	count = map[int]int{}
	for a := range distinct {
		count[a.status]++
		if a.status == http.StatusBadRequest {
			if e := decodeError(t, reply{status: a.status, body: []byte(a.body)}); e.code != "M8/255" {
				t.Errorf("losing post with its own id: got %q, want M8/255: %s", e.code, a.body)
			}
		}
	}
	if count[http.StatusOK] != 1 || count[http.StatusBadRequest] != n-1 {
		t.Errorf("posts with distinct ids: got %v, want one 200 and %d 400", count, n-1)
	}
	// One shared id: every caller gets the first answer.
	seen := map[answer]int{}
	for a := range shared {
		seen[a]++
	}
	if len(seen) != 1 {
		t.Errorf("posts with a shared id: got %d different answers, want one", len(seen))
	}
	for a, c := range seen {
		if a.status != http.StatusOK || c != n {
			t.Errorf("shared answer: got status %d seen %d times, want 200 seen %d times", a.status, c, n)
		}
	}

	l := e.sim.Ledger()
	if len(l.Postings) != 3 {
		t.Errorf("postings: got %d, want 3 (one per invoice)", len(l.Postings))
	}
	// Each distinct id keeps its own first answer.
	for id, first := range distinctIDs {
		if again := postFrom(t, e, tok, "5105600108", id); again != first {
			t.Errorf("replay of %s: got %d %s, want %d %s", id, again.status, again.body, first.status, first.body)
		}
	}
	if n := len(e.sim.Ledger().Postings); n != 3 {
		t.Errorf("postings after replays: got %d, want 3", n)
	}
}

// answer is the status and body of a write.
type answer struct {
	status int
	body   string
}

// postFrom posts an invoice from a goroutine: it reports transport
// errors with t.Error and returns the answer.
func postFrom(t *testing.T, e *env, token, id, repeatID string) answer {
	h := map[string]string{"X-CSRF-Token": token}
	if repeatID != "" {
		h["Repeatability-Request-ID"] = repeatID
	}
	r, err := e.try(http.MethodPost, invSrv+postPath(id, "2026"), nil, h)
	if err != nil {
		t.Error(err)
	}
	return answer{r.status, string(r.body)}
}
