package runs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/errmap"
)

// TestUpdateIsAtomic has two stores (two replicas) admit calls of one run
// at once: every call is counted exactly once and the budget is never
// overdrawn.
func TestUpdateIsAtomic(t *testing.T) {
	addr := redistest.Addr(t)
	stores := map[string][2]runs.Store{}
	mem := runs.NewMemory(nil)
	stores["memory"] = [2]runs.Store{mem, mem}
	var pair [2]runs.Store
	for i := range pair {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rc.Close() })
		pair[i] = runs.NewRedis(rc, "atomic:", nil)
	}
	stores["redis"] = pair
	for name, ss := range stores {
		t.Run(name, func(t *testing.T) {
			const perReplica, budget = 40, 50
			var wg sync.WaitGroup
			refused := make([]int, 2)
			for i, st := range ss {
				g := runs.NewGuard(st, runs.Limits{Budget: budget}, nil, nil)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; n < perReplica; n++ {
						c := runs.Call{Operation: "get_invoice", InvoiceID: "5105600101", Digest: name + string(rune('a'+i)) + time.Now().String()}
						_, refusal, err := g.Admit(context.Background(), "r1", c)
						if err != nil {
							t.Error(err)
							return
						}
						if refusal != nil {
							refused[i]++
						}
					}
				}()
			}
			wg.Wait()
			st, err := ss[0].Get(context.Background(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Calls) != 2*perReplica || st.Used["5105600101"] != budget || refused[0]+refused[1] != 2*perReplica-budget {
				t.Errorf("calls %d used %d refused %d, want %d, %d, %d", len(st.Calls), st.Used["5105600101"],
					refused[0]+refused[1], 2*perReplica, budget, 2*perReplica-budget)
			}
		})
	}
}

func TestFinishRoutesTheSecondNotFound(t *testing.T) {
	g := runs.NewGuard(runs.NewMemory(nil), runs.Limits{}, nil, nil)
	ctx := context.Background()
	c := runs.Call{Operation: "get_purchase_order", Digest: "a"}
	seq, _, _ := g.Admit(ctx, "r", c)
	e1 := notFound()
	_ = g.Finish(ctx, "r", seq, c, "", e1)
	if e1.NextAction != "fix_input_and_retry" {
		t.Errorf("first not-found next_action %s", e1.NextAction)
	}
	c.Digest = "b"
	seq, _, _ = g.Admit(ctx, "r", c)
	e2 := notFound()
	_ = g.Finish(ctx, "r", seq, c, "", e2)
	if e2.NextAction != "route_to_person" || e2.Details["queue"] != "ap_queue" {
		t.Errorf("second not-found: %s %v", e2.NextAction, e2.Details)
	}
	st, _ := g.Get(ctx, "r")
	if st.Calls[1].Error == nil || st.Calls[1].Error.NextAction != "route_to_person" {
		t.Errorf("history keeps %+v, want the routed error", st.Calls[1].Error)
	}
}

func notFound() *errmap.Error {
	return errmap.New(errmap.PONotFound, "Purchase order 4500019822 was not found.", map[string]any{"po_id": "4500019822"})
}
