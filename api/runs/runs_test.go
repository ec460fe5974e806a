package runs_test

import (
	"context"
	"errors"
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

// TestStoresHandOutCopies holds both stores to copy semantics: an update
// that fails leaves the run as it was, and changing a state read from the
// store changes nothing stored.
func TestStoresHandOutCopies(t *testing.T) {
	rc := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rc.Close() })
	for name, store := range map[string]runs.Store{"memory": runs.NewMemory(nil), "redis": runs.NewRedis(rc, "copies:", nil)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := errmap.New(errmap.InvoiceNotFound, "not found", map[string]any{"invoice_id": "5105600999"})
			if err := store.Update(ctx, "r1", time.Hour, func(st *runs.State) error {
				b := e.Body()
				st.Calls = append(st.Calls, runs.Record{Seq: 1, Operation: "get_invoice", Digest: "d1", Code: string(e.Code), Error: &b})
				st.Used["5105600999"] = 1
				st.NotFound["get_invoice"] = 1
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			failed := errors.New("refused")
			err := store.Update(ctx, "r1", time.Hour, func(st *runs.State) error {
				st.Calls[0].Code = "changed"
				st.Calls = append(st.Calls, runs.Record{Seq: 2})
				st.Used["5105600999"] = 99
				st.NotFound["get_invoice"] = 2
				st.GRMissing["4500018822/10"] = true
				st.WaitUntil["d1"] = time.Now()
				return failed
			})
			if !errors.Is(err, failed) {
				t.Fatalf("update: %v, want fn's error", err)
			}
			read, err := store.Get(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			read.Calls[0].Code = "edited by a reader"
			read.Used["5105600999"] = 42
			read.GRMissing["x/1"] = true
			got, err := store.Get(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Calls) != 1 || got.Calls[0].Code != string(errmap.InvoiceNotFound) || got.Used["5105600999"] != 1 ||
				got.NotFound["get_invoice"] != 1 || len(got.GRMissing) != 0 || len(got.WaitUntil) != 0 {
				t.Errorf("stored run changed: %+v", got)
			}
			if got.Calls[0].Error == nil || got.Calls[0].Error.Details["invoice_id"] != "5105600999" {
				t.Errorf("recorded error %+v, want the not-found body", got.Calls[0].Error)
			}
		})
	}
}
