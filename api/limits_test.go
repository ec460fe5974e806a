package api_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
)

// clock is a settable clock for the run limits.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gateways returns the two ways the limits are tested: one gateway with the
// state in memory, and two gateways sharing one Redis that a test's calls
// alternate between. Each call of next picks the gateway for the next call.
func gateways(t *testing.T, setup func(*testing.T, func() *stack)) {
	withLimits := func(store func() runs.Store, c *clock) stackOption {
		return withOptions(func(o *api.Options) {
			o.Runs = runs.Limits{Budget: 5}
			o.Now = c.Now
			if store != nil {
				o.RunStore = store()
			}
		})
	}
	t.Run("memory", func(t *testing.T) {
		c := &clock{now: time.Now()}
		s := newStack(t, withLimits(nil, c))
		setup(t, func() *stack { s.t = t; return s })
	})
	t.Run("redis, two gateways", func(t *testing.T) {
		addr := redistest.Addr(t)
		store := func() runs.Store {
			rc := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { rc.Close() })
			return runs.NewRedis(rc, "erpgate-test:", nil)
		}
		c := &clock{now: time.Now()}
		a := newStack(t, withLimits(store, c))
		b := a.twin(withLimits(store, c))
		n := 0
		setup(t, func() *stack {
			n++
			if n%2 == 0 {
				b.t = t
				return b
			}
			a.t = t
			return a
		})
	})
}

const run = "X-Run-Id: run-limits-1"

func TestIdenticalRepeat(t *testing.T) {
	gateways(t, func(t *testing.T, next func() *stack) {
		if r := next().do("GET", "/invoices/5105600101", nil, run); r.status != 200 {
			t.Fatalf("first call: %d", r.status)
		}
		d := wantError(t, next().do("GET", "/invoices/5105600101", nil, run), 409, "LOOP_DETECTED", "route_to_person")
		if d["limit"] != "identical_repeat" || d["previous_code"] != "OK" || d["run_id"] != "run-limits-1" {
			t.Errorf("details %v", d)
		}
		// The same call in another run is not a repeat.
		if r := next().do("GET", "/invoices/5105600101", nil, "X-Run-Id: run-limits-2"); r.status != 200 {
			t.Errorf("other run: %d", r.status)
		}
		// The run_id argument names the same run as the header.
		wantError(t, next().do("GET", "/invoices/5105600101?run_id=run-limits-1", nil), 409, "LOOP_DETECTED", "route_to_person")
		// A create repeated is the same create: the hold it made, whether
		// the run id came in the body or the header.
		body := map[string]any{"reason": "Waiting for the goods receipt.", "run_id": "run-limits-3"}
		r := next().do("POST", "/invoices/5105600105/hold", body)
		if r.status != 200 {
			t.Fatalf("hold: %d %s", r.status, r.body)
		}
		again := next().do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "Waiting for the goods receipt."},
			"X-Run-Id: run-limits-3")
		if again.status != 200 || again.json(t)["hold_id"] != r.json(t)["hold_id"] {
			t.Errorf("the hold again: %d %s, want hold %v", again.status, again.body, r.json(t)["hold_id"])
		}
	})
}

func TestOneCorrectedRetry(t *testing.T) {
	gateways(t, func(t *testing.T, next func() *stack) {
		d := wantError(t, next().do("GET", "/invoices/5105600999", nil, run), 404, "INVOICE_NOT_FOUND", "fix_input_and_retry")
		if d["queue"] != "ap_queue" {
			t.Errorf("first not-found details %v", d)
		}
		// The corrected retry fails too: the same code, now routed.
		d = wantError(t, next().do("GET", "/invoices/5105600998", nil, run), 404, "INVOICE_NOT_FOUND", "route_to_person")
		if d["queue"] != "ap_queue" || d["invoice_id"] != "5105600998" {
			t.Errorf("second not-found details %v", d)
		}
		// No third try, whatever the id.
		d = wantError(t, next().do("GET", "/invoices/5105600101", nil, run), 409, "LOOP_DETECTED", "route_to_person")
		if d["limit"] != "corrected_retry" {
			t.Errorf("third call details %v", d)
		}
		// A corrected retry that works clears the count.
		wantError(t, next().do("GET", "/suppliers/100999", nil, run), 404, "SUPPLIER_NOT_FOUND", "fix_input_and_retry")
		if r := next().do("GET", "/suppliers/100042", nil, run); r.status != 200 {
			t.Fatalf("corrected supplier: %d", r.status)
		}
		wantError(t, next().do("GET", "/suppliers/100998", nil, run), 404, "SUPPLIER_NOT_FOUND", "fix_input_and_retry")
	})
}

func TestNoGoodsReceiptLookupAfterGRMissing(t *testing.T) {
	gateways(t, func(t *testing.T, next func() *stack) {
		wantError(t, next().do("POST", "/invoices/5105600105/three-way-match", nil, run), 409, "GR_MISSING", "hold_and_recheck")
		d := wantError(t, next().do("GET", "/purchase-orders/4500018822/items/20/goods-receipts", nil, run), 409, "LOOP_DETECTED", "hold_and_recheck")
		if d["limit"] != "gr_missing" {
			t.Errorf("details %v", d)
		}
		// Leading zeros name the same item.
		wantError(t, next().do("GET", "/purchase-orders/4500018822/items/00020/goods-receipts", nil, run), 409, "LOOP_DETECTED", "hold_and_recheck")
		// Another item of the PO may still be looked at.
		if r := next().do("GET", "/purchase-orders/4500018822/items/10/goods-receipts", nil, run); r.status != 200 {
			t.Errorf("item 10: %d", r.status)
		}
	})
}

func TestBudgetPerInvoice(t *testing.T) {
	gateways(t, func(t *testing.T, next func() *stack) {
		for _, p := range []string{"/invoices/5105600102", "/invoices/5105600102/three-way-match"} {
			method := map[bool]string{true: "GET", false: "POST"}[p == "/invoices/5105600102"]
			if r := next().do(method, p, nil, run); r.status != 200 {
				t.Fatalf("%s: %d", p, r.status)
			}
		}
		for i := 0; i < 3; i++ {
			next().do("POST", "/invoices/5105600102/hold", map[string]any{"reason": "Check " + string(rune('a'+i))}, run)
		}
		d := wantError(t, next().do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
			"justification": "Supplier price list 2026."}, run), 409, "BUDGET_EXHAUSTED", "route_to_person")
		if d["budget"] != float64(5) || d["invoice_id"] != "5105600102" || d["limit"] != "budget" {
			t.Errorf("details %v", d)
		}
		// Other invoices keep their own budget, and the handover stays open.
		if r := next().do("GET", "/invoices/5105600101", nil, run); r.status != 200 {
			t.Errorf("other invoice: %d", r.status)
		}
		r := next().do("POST", "/handovers", map[string]any{"invoice_id": "5105600102", "code": "BUDGET_EXHAUSTED",
			"summary": "Price 8 % over PO; budget spent before a decision."}, run)
		if r.status != 200 {
			t.Errorf("hand_over after the budget: %d %s", r.status, r.body)
		}
		m := next().do("GET", "/runs/run-limits-1", nil).json(t)
		var used, left float64
		for _, inv := range m["invoices"].([]any) {
			if iv := inv.(map[string]any); iv["invoice_id"] == "5105600102" {
				used, left = iv["calls"].(float64), iv["remaining"].(float64)
			}
		}
		if used != 5 || left != 0 || m["budget_per_invoice"] != float64(5) {
			t.Errorf("get_run: used %v remaining %v budget %v", used, left, m["budget_per_invoice"])
		}
	})
}

func TestUnavailableReadWaitsForItsRetryAfter(t *testing.T) {
	c := &clock{now: time.Now()}
	s := newStack(t, withOptions(func(o *api.Options) { o.Now = c.Now }))
	if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 503, RetryAfterS: 40}); err != nil {
		t.Fatal(err)
	}
	wantError(t, s.do("GET", "/purchase-orders/4500018822", nil, run), 503, "ERP_UNAVAILABLE", "hold_and_recheck")
	d := wantError(t, s.do("GET", "/purchase-orders/4500018822", nil, run), 503, "ERP_UNAVAILABLE", "hold_and_recheck")
	if d["limit"] != "erp_wait" || d["retry_after_s"] != float64(40) {
		t.Errorf("an early repeat: details %v, want the wait without an ERP call", d)
	}
	c.add(41 * time.Second)
	if r := s.do("GET", "/purchase-orders/4500018822", nil, run); r.status != 200 {
		t.Errorf("after the wait: %d %s", r.status, r.body)
	}
}

func TestStrictModeNeedsARunID(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) { o.Runs.Strict = true }))
	d := wantError(t, s.do("GET", "/invoices/5105600101", nil), 400, "INVALID_REQUEST", "fix_input_and_retry")
	if d["field"] != "run_id" {
		t.Errorf("details %v", d)
	}
	if r := s.do("GET", "/invoices/5105600101?run_id=r1", nil); r.status != 200 {
		t.Errorf("with run_id: %d", r.status)
	}
	if got := s.counter("erpgate_limits_triggered_total", map[string]string{"kind": "no_run_id"}); got != 1 {
		t.Errorf("limits metric = %v, want 1", got)
	}
}

func TestRunHistory(t *testing.T) {
	s := newStack(t)
	s.do("GET", "/invoices/5105600105", nil, run)
	s.do("POST", "/invoices/5105600105/three-way-match", nil, run)
	s.do("GET", "/purchase-orders/4500018822/items/20/goods-receipts", nil, run)
	m := s.do("GET", "/runs/run-limits-1", nil).json(t)
	calls, errs := m["calls"].([]any), m["errors"].([]any)
	if len(calls) != 3 || len(errs) != 2 {
		t.Fatalf("calls %d errors %d, want 3 and 2: %v", len(calls), len(errs), m)
	}
	last := calls[2].(map[string]any)
	if last["operation"] != "get_goods_receipt" || last["code"] != "LOOP_DETECTED" || last["refused"] != true {
		t.Errorf("last call %v", last)
	}
	e := errs[0].(map[string]any)
	if e["code"] != "GR_MISSING" || e["next_action"] != "hold_and_recheck" || e["details"].(map[string]any)["po_id"] != "4500018822" {
		t.Errorf("first error %v", e)
	}
	d := wantError(t, s.do("GET", "/runs/run-unknown", nil), 404, "INVALID_REQUEST", "fix_input_and_retry")
	if d["run_id"] != "run-unknown" {
		t.Errorf("unknown run details %v", d)
	}
	if got := s.counter("erpgate_limits_triggered_total", map[string]string{"kind": "gr_missing"}); got != 1 {
		t.Errorf("limits metric = %v, want 1", got)
	}
}

func TestRedisUnreachable(t *testing.T) {
	dead := func(failOpen bool) stackOption {
		return withOptions(func(o *api.Options) {
			rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
			t.Cleanup(func() { rc.Close() })
			o.RunStore = runs.NewRedis(rc, "x:", nil)
			o.Runs.FailOpen = failOpen
		})
	}
	s := newStack(t, dead(false))
	d := wantError(t, s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "Waiting for goods."}, run),
		500, "INTERNAL", "stop_and_escalate")
	if d["reason"] != "run_state_unavailable" {
		t.Errorf("details %v", d)
	}
	if n := s.counts().holds; n != 0 {
		t.Errorf("the ERP was called: %d holds", n)
	}
	// Calls without a run id do not need the store.
	if r := s.do("GET", "/invoices/5105600101", nil); r.status != 200 {
		t.Errorf("no run id: %d", r.status)
	}
	open := newStack(t, dead(true))
	if r := open.do("GET", "/invoices/5105600101", nil, run); r.status != 200 {
		t.Errorf("fail-open: %d %s", r.status, r.body)
	}
}
