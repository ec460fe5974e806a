package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sim"
)

// replicas starts two gateways over one simulated ERP and one records
// database, as two replicas behind a load balancer: on SQLite they share
// the store, on PostgreSQL each opens its own. opts apply to both.
func replicas(t *testing.T, engine string, opts ...stackOption) (*stack, *stack) {
	t.Helper()
	var first, second records.Store
	switch engine {
	case "sqlite":
		first, _ = recordstest.SQLite(t)
		second = first
	case "postgres":
		var u string
		first, u = recordstest.Postgres(t)
		var err error
		if second, err = records.Open(t.Context(), u, records.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { second.Close() })
	default:
		t.Fatalf("engine %q", engine)
	}
	s := newStack(t, append(opts, withOptions(func(o *api.Options) { o.Records = first }))...)
	return s, s.twin(append(opts, withOptions(func(o *api.Options) { o.Records = second }))...)
}

// slowPosts makes every Post in the simulated ERP take d, so that
// concurrent posts overlap, and returns a count of the Posts the ERP got.
func slowPosts(t *testing.T, s *stack, d time.Duration) func() int {
	t.Helper()
	rule := sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultHang, Method: http.MethodPost, Path: "Post",
		DelayMS: int(d.Milliseconds()), Count: -1}
	if err := s.sim.InjectFault(rule); err != nil {
		t.Fatal(err)
	}
	return func() int {
		for _, st := range s.sim.FaultStats() {
			if st.Path == "Post" {
				return st.Matched
			}
		}
		t.Fatal("the slow-post rule is gone")
		return 0
	}
}

// approved requests an approval of the invoice that the routing grants at
// once.
func approved(t *testing.T, s *stack, invoice string) string {
	t.Helper()
	r := s.do("POST", "/invoices/"+invoice+"/approvals", map[string]any{"proposed_action": "post_as_invoiced",
		"justification": "Matched against the purchase order and its goods receipt."})
	if r.status != 200 || r.json(t)["status"] != "approved" {
		t.Fatalf("approval: %d %s", r.status, r.body)
	}
	return r.json(t)["approval_id"].(string)
}

// TestConcurrentPosts fires eight posts of one invoice at once, over one
// gateway and over two replicas on SQLite and PostgreSQL, without a key,
// with a key each and with one key for all: exactly one Post reaches the
// ERP and every call gets the settled answer; with keys, a later replay
// gets it again.
func TestConcurrentPosts(t *testing.T) {
	const posters = 8
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, gateways := range []int{1, 2} {
			for _, keys := range []string{"none", "each", "one"} {
				t.Run(fmt.Sprintf("%s/%d gateways/keys %s", engine, gateways, keys), func(t *testing.T) {
					a, b := replicas(t, engine)
					if gateways == 1 {
						b = a
					}
					posts := slowPosts(t, a, 100*time.Millisecond)
					appr := approved(t, a, "5105600101")
					keyOf := func(i int) []string {
						switch keys {
						case "each":
							return []string{fmt.Sprintf("Idempotency-Key: post-%d", i)}
						case "one":
							return []string{"Idempotency-Key: post"}
						}
						return nil
					}
					answers := make([]result, posters)
					var wg sync.WaitGroup
					start := make(chan struct{})
					for i := range posters {
						wg.Go(func() {
							<-start
							gw := []*stack{a, b}[i%2]
							answers[i] = gw.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": appr}, keyOf(i)...)
						})
					}
					began := time.Now()
					close(start)
					wg.Wait()
					t.Logf("%d posts settled in %v with %d Post at the ERP (each Post takes 100 ms there)",
						posters, time.Since(began).Round(time.Millisecond), posts())

					if n := posts(); n != 1 {
						t.Errorf("the ERP got %d Posts, want 1", n)
					}
					if n := countPostings(a.sim.Ledger(), "5105600101"); n != 1 {
						t.Errorf("the ledger has %d postings, want 1", n)
					}
					byThisCall := 0
					for i, r := range answers {
						if r.status != 200 {
							t.Errorf("post %d: %d %s, want 200", i, r.status, r.body)
							continue
						}
						var p struct {
							Status        string `json:"status"`
							AlreadyPosted bool   `json:"already_posted"`
						}
						if err := json.Unmarshal(r.body, &p); err != nil || p.Status != "posted" {
							t.Errorf("post %d: %s, want posted", i, r.body)
						}
						if !p.AlreadyPosted {
							byThisCall++
						}
					}
					// One call posted; the others found it posted, except
					// that the calls of one key all share its answer.
					if want := map[string]int{"none": 1, "each": 1, "one": posters}[keys]; byThisCall != want {
						t.Errorf("%d answers say this call posted, want %d", byThisCall, want)
					}
					if keys == "none" {
						return
					}
					for i := range posters {
						again := []*stack{a, b}[(i+1)%2].do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": appr}, keyOf(i)...)
						if again.status != 200 || string(again.body) != string(answers[i].body) || again.header.Get("Idempotent-Replayed") != "true" {
							t.Errorf("replay %d: %d %s (replayed %q), want the first answer %s", i, again.status, again.body,
								again.header.Get("Idempotent-Replayed"), answers[i].body)
						}
					}
					if n := posts(); n != 1 {
						t.Errorf("after the replays the ERP got %d Posts, want 1", n)
					}
				})
			}
		}
	}
}

// TestWriteInProgress: a write that waits longer than WriteWait for
// another write of its invoice, or for a call with its key, is
// WRITE_IN_PROGRESS with retry_after_s, runs nothing and keeps nothing for
// its key; repeated once the first call has ended, it gets the settled
// answer.
func TestWriteInProgress(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			a, b := replicas(t, engine, withOptions(func(o *api.Options) { o.WriteWait = 100 * time.Millisecond }))
			posts := slowPosts(t, a, 2*time.Second)
			appr := approved(t, a, "5105600101")
			body := map[string]any{"approval_id": appr}

			first := make(chan result)
			go func() { first <- a.do("POST", "/invoices/5105600101/post", body, "Idempotency-Key: first") }()
			// Wait until the first post is at the ERP.
			for deadline := time.Now().Add(5 * time.Second); posts() == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the first post never reached the ERP")
				}
			}

			busy := []struct {
				name    string
				path    string
				body    any
				headers []string
				reason  string
			}{
				{"post with another key", "/invoices/5105600101/post", body, []string{"Idempotency-Key: second"}, "invoice_in_flight"},
				{"post without a key", "/invoices/5105600101/post", body, nil, "invoice_in_flight"},
				{"hold", "/invoices/5105600101/hold", map[string]any{"reason": "waiting for goods"}, []string{"Idempotency-Key: hold"}, "invoice_in_flight"},
				{"post with the first call's key", "/invoices/5105600101/post", body, []string{"Idempotency-Key: first"}, "key_in_flight"},
			}
			for _, tt := range busy {
				r := b.do("POST", tt.path, tt.body, tt.headers...)
				d := wantError(t, r, 409, "WRITE_IN_PROGRESS", "hold_and_recheck")
				if m := r.json(t); m["retryable"] != true || d["reason"] != tt.reason || d["invoice_id"] != "5105600101" {
					t.Errorf("%s: %s, want retryable, reason %s, invoice_id", tt.name, r.body, tt.reason)
				}
				if s, ok := d["retry_after_s"].(float64); !ok || s < 1 || s > 5 {
					t.Errorf("%s: retry_after_s %v, want 1 to 5", tt.name, d["retry_after_s"])
				}
				if tt.reason == "invoice_in_flight" && d["operation"] != "post_invoice" {
					t.Errorf("%s: operation %v, want the first call's post_invoice", tt.name, d["operation"])
				}
			}

			settled := <-first
			if settled.status != 200 || settled.json(t)["already_posted"] != false {
				t.Fatalf("first post: %d %s", settled.status, settled.body)
			}
			// Nothing was kept for the keys that waited in vain: repeated
			// now, each call runs and gets the settled answer.
			for _, key := range []string{"second", "first"} {
				r := b.do("POST", "/invoices/5105600101/post", body, "Idempotency-Key: "+key)
				if r.status != 200 || r.json(t)["status"] != "posted" {
					t.Errorf("repeat with key %s: %d %s, want the posting", key, r.status, r.body)
				}
				if key == "first" && string(r.body) != string(settled.body) {
					t.Errorf("repeat with the first key: %s, want its answer %s", r.body, settled.body)
				}
			}
			r := b.do("POST", "/invoices/5105600101/hold", map[string]any{"reason": "waiting for goods"}, "Idempotency-Key: hold")
			if d := wantError(t, r, 400, "INVALID_REQUEST", "fix_input_and_retry"); d["reason"] != "already_posted" {
				t.Errorf("hold after the posting: %s, want already_posted", r.body)
			}
			if n := posts(); n != 1 {
				t.Errorf("the ERP got %d Posts, want 1", n)
			}
			if n := a.counts().holds; n != 0 {
				t.Errorf("%d holds recorded, want none", n)
			}
		})
	}
}

// TestInvoiceLeaseOfDeadGateway: a lease whose holder never released it
// (its gateway died) blocks the invoice only until it lapses.
func TestInvoiceLeaseOfDeadGateway(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) { o.WriteWait = 100 * time.Millisecond; o.KeyLease = 300 * time.Millisecond }))
	appr := approved(t, s, "5105600101")
	c, err := s.records.ClaimInvoice(t.Context(), records.InvoiceLease{InvoiceID: "5105600101", Holder: "dead", Operation: "post_invoice"},
		time.Now(), 300*time.Millisecond)
	if err != nil || !c.Claimed {
		t.Fatalf("lease: %+v %v", c, err)
	}
	r := s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": appr})
	wantError(t, r, 409, "WRITE_IN_PROGRESS", "hold_and_recheck")
	time.Sleep(300 * time.Millisecond)
	if r := s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": appr}); r.status != 200 || r.json(t)["already_posted"] != false {
		t.Errorf("post after the lease lapsed: %d %s, want posted", r.status, r.body)
	}
}

// TestConcurrentApprovalRequests: request_approval takes no invoice lease,
// since it changes nothing another write of the invoice reads; eight
// concurrent requests of one fix, with a key each, over two replicas, make
// one approval and all answer it.
func TestConcurrentApprovalRequests(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			a, b := replicas(t, engine)
			ids := make([]any, 8)
			var wg sync.WaitGroup
			for i := range ids {
				wg.Go(func() {
					r := []*stack{a, b}[i%2].do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
						"justification": "The supplier's price list of November allows the variance."}, fmt.Sprintf("Idempotency-Key: appr-%d", i))
					if r.status != 200 {
						t.Errorf("request %d: %d %s", i, r.status, r.body)
						return
					}
					ids[i] = r.json(t)["approval_id"]
				})
			}
			wg.Wait()
			for i, id := range ids {
				if id != ids[0] {
					t.Errorf("request %d answered approval %v, request 0 %v; want one approval", i, id, ids[0])
				}
			}
			if n := a.counts().approvals; n != 1 {
				t.Errorf("%d approvals recorded, want 1", n)
			}
		})
	}
}
