package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/retry"
)

var engineNames = []string{"sqlite", "postgres"}

// TestOneRunWaitsForAPersonAndPosts is the invoice that needs a person,
// carried in one run id across two replicas: the agent follows every
// next_action, a person approves, the decision releases the hold in its own
// transaction, and the same run re-checks and posts. A re-check with
// nothing changed is still a loop.
func TestOneRunWaitsForAPersonAndPosts(t *testing.T) {
	for _, engine := range engineNames {
		t.Run(engine, func(t *testing.T) {
			a, b := replicas(t, engine, sharedRuns(t))
			run := "X-Run-Id: run-5105600102-a"

			if m := a.do("POST", "/invoices/5105600102/three-way-match", nil, run).json(t); m["result"] != "TOLERANCE_EXCEEDED" || m["next_action"] != "request_approval" {
				t.Fatalf("match: %v", m)
			}
			r := b.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
				"justification": "Unit price 8 % over the PO; surcharge confirmed by the supplier."}, run)
			appr := r.json(t)
			if r.status != 200 || appr["status"] != "pending" {
				t.Fatalf("request_approval: %d %s", r.status, r.body)
			}
			id := appr["approval_id"].(string)
			post := map[string]any{"approval_id": id}
			d := wantError(t, a.do("POST", "/invoices/5105600102/post", post, run), 409, "APPROVAL_MISSING", "hold_and_recheck")
			if d["approval_id"] != id {
				t.Errorf("APPROVAL_MISSING details %v, want approval_id %s", d, id)
			}
			r = b.do("POST", "/invoices/5105600102/hold", map[string]any{"reason": "Approval " + id + " is pending a person's decision."}, run)
			hold := r.json(t)
			if r.status != 200 || hold["status"] != "held" || hold["waits_for"].(map[string]any)["approval_id"] != id {
				t.Fatalf("hold: %d %s, want held waiting for %s", r.status, r.body, id)
			}
			holdID := hold["hold_id"].(string)
			if m := a.do("GET", "/approvals/"+id, nil, run).json(t); m["status"] != "pending" {
				t.Fatalf("get_approval before the decision: %v", m)
			}
			wantError(t, b.do("GET", "/approvals/"+id, nil, run), 409, "LOOP_DETECTED", "route_to_person")

			b.decide(id, "approve", "m.keller")
			// Released in the decision's transaction: no scheduler, no wait.
			h := a.do("GET", "/holds/"+holdID, nil, run).json(t)
			if h["status"] != "released" {
				t.Fatalf("hold after the decision: %v", h)
			}
			if m := b.do("GET", "/approvals/"+id, nil, run).json(t); m["status"] != "approved" {
				t.Fatalf("get_approval after the decision: %v", m)
			}
			wantError(t, a.do("GET", "/approvals/"+id, nil, run), 409, "LOOP_DETECTED", "route_to_person")
			r = a.do("POST", "/invoices/5105600102/post", post, run)
			if r.status != 200 || r.json(t)["status"] != "posted" {
				t.Fatalf("post after the decision: %d %s", r.status, r.body)
			}
			c := b.do("GET", "/invoices/5105600102/case", nil, run).json(t)
			if c["state"] != "posted" || c["posted"] != true {
				t.Errorf("case after the posting: %v", c)
			}
			kinds := map[string]bool{}
			for _, ev := range c["events"].([]any) {
				ev := ev.(map[string]any)
				kinds[ev["kind"].(string)] = true
				// What the run did names the run; the person's decision
				// is part of none.
				if inRun := ev["kind"] != "approval.decided" && ev["kind"] != "hold.released"; inRun != (ev["run_id"] == "run-5105600102-a") {
					t.Errorf("case event %v: run_id %v", ev["kind"], ev["run_id"])
				}
			}
			for _, k := range []string{"approval.requested", "hold.placed", "approval.decided", "hold.released", "invoice.posted"} {
				if !kinds[k] {
					t.Errorf("case events lack %s: %v", k, c["events"])
				}
			}
		})
	}
}

// sharedRuns keeps the runs of every gateway it is given to in one Redis,
// as replicas behind a load balancer share them.
func sharedRuns(t *testing.T) stackOption {
	addr := redistest.Addr(t)
	prefix := "erpgate-" + strings.ReplaceAll(t.Name(), "/", "-") + ":"
	return withOptions(func(o *api.Options) {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rc.Close() })
		o.RunStore = runs.NewRedis(rc, prefix, nil)
	})
}

// TestAGoodsReceiptMovesTheRunOn holds an invoice whose goods receipt is
// missing; once the receipt is posted and the scheduled re-check releases
// the hold, the same run matches again and posts.
func TestAGoodsReceiptMovesTheRunOn(t *testing.T) {
	s := newStack(t)
	run := "X-Run-Id: run-5105600105"
	wantError(t, s.do("POST", "/invoices/5105600105/three-way-match", nil, run), 409, "GR_MISSING", "hold_and_recheck")
	wantError(t, s.do("GET", "/purchase-orders/4500018822/items/20/goods-receipts", nil, run), 409, "LOOP_DETECTED", "hold_and_recheck")
	r := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "No goods receipt yet for PO 4500018822 item 20 (GR_MISSING).",
		"recheck_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, run)
	if r.status != 200 {
		t.Fatalf("hold: %d %s", r.status, r.body)
	}
	holdID := r.json(t)["hold_id"].(string)
	// Nothing has arrived: the match is the same question with the same
	// answer.
	wantError(t, s.do("POST", "/invoices/5105600105/three-way-match", nil, run), 409, "GR_MISSING", "hold_and_recheck")
	wantError(t, s.do("POST", "/invoices/5105600105/three-way-match", nil, run), 409, "LOOP_DETECTED", "route_to_person")

	if _, err := s.sim.PostGoodsReceipt("4500018822", "20", decimal.NewFromInt(5)); err != nil {
		t.Fatal(err)
	}
	sched := s.scheduler(t, time.Now().Add(2*time.Hour))
	if rep, err := sched.RunOnce(context.Background()); err != nil || rep.Released != 1 {
		t.Fatalf("re-check: %+v %v, want the hold released", rep, err)
	}
	if h := s.do("GET", "/holds/"+holdID, nil, run).json(t); h["status"] != "released" {
		t.Fatalf("hold after the re-check: %v", h)
	}
	if m := s.do("POST", "/invoices/5105600105/three-way-match", nil, run).json(t); m["result"] != "MATCHED" {
		t.Fatalf("match after the receipt: %v", m)
	}
	r = s.do("POST", "/invoices/5105600105/approvals", map[string]any{"proposed_action": "post_as_invoiced",
		"justification": "Matched on every line once the goods arrived."}, run)
	appr := r.json(t)
	if appr["status"] != "approved" {
		t.Fatalf("approval: %s", r.body)
	}
	if r := s.do("POST", "/invoices/5105600105/post", map[string]any{"approval_id": appr["approval_id"]}, run); r.status != 200 {
		t.Fatalf("post: %d %s", r.status, r.body)
	}
}

// scheduler returns a re-check scheduler over the stack's ERP and records
// whose clock stands at now.
func (s *stack) scheduler(t *testing.T, now time.Time) *recheck.Scheduler {
	t.Helper()
	client, err := sap.New(s.simURL, sap.Options{Runner: retry.New(retry.Policy{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	proc := erp.NewProcess(client, erp.ProcessOptions{Records: s.records})
	return recheck.New(recheck.Options{Invoices: client, Receipts: proc, Holds: s.records, Every: time.Hour,
		Observer: s.metrics, Now: func() time.Time { return now }})
}

// TestOneOpenHoldAndOneOpenApproval checks the store's rules through the
// API, on one replica and across two sharing PostgreSQL: five holds with
// five keys are one hold; a different proposal supersedes the pending
// approval, which can then no longer be decided.
func TestOneOpenHoldAndOneOpenApproval(t *testing.T) {
	for _, engine := range engineNames {
		t.Run(engine, func(t *testing.T) {
			a, b := replicas(t, engine)
			ids := map[string]bool{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range 5 {
				gw := []*stack{a, b}[i%2]
				wg.Go(func() {
					r := gw.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "No goods receipt for PO 4500018822 item 20."},
						fmt.Sprintf("Idempotency-Key: hold-%d", i), fmt.Sprintf("X-Run-Id: run-hold-%d", i))
					if r.status != 200 {
						t.Errorf("hold %d: %d %s", i, r.status, r.body)
						return
					}
					mu.Lock()
					ids[r.json(t)["hold_id"].(string)] = true
					mu.Unlock()
				})
			}
			wg.Wait()
			if len(ids) != 1 {
				t.Errorf("five holds of one invoice made hold ids %v, want one", ids)
			}

			first := a.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
				"justification": "Accept the 8 % surcharge."}).json(t)
			second := b.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "correct_amount",
				"corrected_amount": "12500.00", "justification": "Correct to the PO price."}).json(t)
			if first["approval_id"] == second["approval_id"] || second["status"] != "pending" {
				t.Fatalf("approvals %v and %v", first, second)
			}
			if m := a.do("GET", "/approvals/"+first["approval_id"].(string), nil).json(t); m["status"] != "superseded" || m["superseded_by"] != second["approval_id"] {
				t.Errorf("the first approval after the second: %v", m)
			}
			pending, err := a.records.ListApprovals(context.Background(), records.ApprovalFilter{Status: records.ApprovalPending, InvoiceID: "5105600102"})
			if err != nil || len(pending) != 1 {
				t.Errorf("pending approvals %v %v, want one", pending, err)
			}
			r := b.do("POST", "/approvals/"+first["approval_id"].(string)+"/decision", map[string]any{"decision": "approve",
				"reason": "Checked against the supplier's statement."}, as("m.keller"))
			d := wantError(t, r, 409, "APPROVAL_SUPERSEDED", "fix_input_and_retry")
			if d["superseded_by"] != second["approval_id"] {
				t.Errorf("APPROVAL_SUPERSEDED details %v", d)
			}
		})
	}
}

// TestACreateRepeatedIsTheSameCreate repeats each create of a run, without
// a key, as an agent does whose answer was lost, on one replica and then
// the other (runs shared in Redis, records in SQLite or PostgreSQL): it
// gets the record it made, never LOOP_DETECTED.
func TestACreateRepeatedIsTheSameCreate(t *testing.T) {
	for _, engine := range engineNames {
		t.Run(engine, func(t *testing.T) {
			a, b := replicas(t, engine, sharedRuns(t))
			run := "X-Run-Id: run-lost-answers"
			for _, c := range []struct {
				path, id string
				body     map[string]any
			}{
				{"/invoices/5105600102/approvals", "approval_id", map[string]any{"proposed_action": "accept_variance", "justification": "Accept the surcharge."}},
				{"/invoices/5105600105/hold", "hold_id", map[string]any{"reason": "No goods receipt for PO 4500018822 item 20."}},
				{"/handovers", "handover_id", map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": "PO 4500018826 is closed."}},
			} {
				var ids []any
				for i := range 3 {
					r := []*stack{a, b}[i%2].do("POST", c.path, c.body, run)
					if r.status != 200 {
						t.Fatalf("%s: %d %s", c.path, r.status, r.body)
					}
					ids = append(ids, r.json(t)[c.id])
				}
				if ids[0] != ids[1] || ids[1] != ids[2] {
					t.Errorf("%s three times: %v, want one record", c.path, ids)
				}
			}
			if n := a.counts(); n != (recordCounts{holds: 1, approvals: 1, handovers: 1}) {
				t.Errorf("records after the repeats: %+v, want one of each", n)
			}
		})
	}
}

// TestAHandoverClosesTheHold hands over an invoice on hold: the invoice is
// a person's now, and its hold is closed, not left to wake the run.
func TestAHandoverClosesTheHold(t *testing.T) {
	s := newStack(t)
	run := "X-Run-Id: run-hand-over-held"
	hold := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "No goods receipt for PO 4500018822 item 20."}, run).json(t)
	r := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600105", "code": "GR_MISSING",
		"summary": "The goods for PO 4500018822 item 20 never came."}, run)
	if r.status != 200 {
		t.Fatalf("hand_over: %d %s", r.status, r.body)
	}
	h := s.do("GET", "/holds/"+hold["hold_id"].(string), nil, run).json(t)
	if h["status"] != "closed" {
		t.Errorf("hold after the handover: %v", h)
	}
	if c := s.do("GET", "/invoices/5105600105/case", nil, run).json(t); c["state"] != "handed_over" || c["hold_id"] != nil {
		t.Errorf("case after the handover: %v", c)
	}
	// The person gets the case's history across runs with the run's.
	ho, err := s.records.Handover(t.Context(), r.json(t)["handover_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var history struct {
		RunID string `json:"run_id"`
		Case  struct {
			State  string `json:"state"`
			Events []struct {
				Kind string `json:"kind"`
			} `json:"events"`
		} `json:"case"`
	}
	if err := json.Unmarshal([]byte(ho.History), &history); err != nil || history.RunID != "run-hand-over-held" ||
		history.Case.State != "on_hold" || len(history.Case.Events) != 1 || history.Case.Events[0].Kind != "hold.placed" {
		t.Errorf("the handover's history: %s, %v", ho.History, err)
	}
}

// TestHoldReleasedIsToldToThePlatform shows the hold webhook: a decision
// queues hold.released, the outbox delivers it with the invoice, the case
// version, the run that placed the hold, what arrived and the next call.
func TestHoldReleasedIsToldToThePlatform(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	store, _ := recordstestSQLiteWithHoldEvents(t)
	s := newStack(t, withOptions(func(o *api.Options) { o.Records = store }))
	run := "X-Run-Id: run-webhook"
	appr := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Accept the surcharge."}, run).json(t)
	hold := s.do("POST", "/invoices/5105600102/hold", map[string]any{"reason": "Waiting for the approver."}, run).json(t)
	s.decide(appr["approval_id"].(string), "approve", "m.keller")
	out := &api.Outbox{Records: store, HoldURL: hook.URL}
	if n, err := out.RunOnce(context.Background()); err != nil || n != 2 {
		t.Fatalf("outbox: %d %v, want the decision and the release delivered", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	var released map[string]any
	for _, m := range got {
		if m["event"] == "hold.released" {
			released = m
		}
	}
	if released == nil {
		t.Fatalf("no hold.released among %v", got)
	}
	next := released["next"].(map[string]any)
	if released["hold_id"] != hold["hold_id"] || released["invoice_id"] != "5105600102" || released["run_id"] != "run-webhook" ||
		released["case_version"].(float64) < 1 || released["arrived"] == "" || next["operation"] != "post_invoice" ||
		next["approval_id"] != appr["approval_id"] {
		t.Errorf("hold.released: %v", released)
	}
}

// recordstestSQLiteWithHoldEvents opens SQLite records that queue the hold
// webhook's deliveries.
func recordstestSQLiteWithHoldEvents(t *testing.T) (records.Store, string) {
	t.Helper()
	u := "sqlite:" + filepath.Join(t.TempDir(), records.DataFile)
	store, err := records.Open(t.Context(), u, records.Options{HoldEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, u
}
