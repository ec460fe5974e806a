package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/retry"
)

// TestHoldIsRecheckedAndReleased holds an invoice whose goods receipt is
// missing, and shows the gateway's scheduler release it once the goods
// have arrived.
func TestHoldIsRecheckedAndReleased(t *testing.T) {
	q := recheck.NewMemoryQueue()
	s := newStack(t, withOptions(func(o *api.Options) { o.Rechecks = q }))
	r := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "Goods receipt for PO 4500018822 item 20 missing.",
		"recheck_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	if r.status != 200 || r.json(t)["status"] != "held" {
		t.Fatalf("hold: %d %s", r.status, r.body)
	}
	if n, _ := q.Len(context.Background()); n != 1 {
		t.Fatalf("queue holds %d entries, want the hold", n)
	}
	client, err := sap.New(s.simURL, sap.Options{Runner: retry.New(retry.Policy{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(2 * time.Hour)
	sched := recheck.New(recheck.Options{ERP: client, Queue: q, Every: time.Hour, Observer: s.metrics,
		Now: func() time.Time { return now }})

	rep, err := sched.RunOnce(context.Background())
	if err != nil || rep.Waiting != 1 {
		t.Fatalf("first re-check: %+v %v, want the hold still waiting", rep, err)
	}
	if _, err := s.sim.PostGoodsReceipt("4500018822", "20", decimal.NewFromInt(5)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if rep, err = sched.RunOnce(context.Background()); err != nil || rep.Released != 1 {
		t.Fatalf("second re-check: %+v %v, want the hold released", rep, err)
	}
	if m := s.do("GET", "/invoices/5105600105", nil).json(t); m["status"] != "parked" {
		t.Errorf("invoice status %v after the release, want parked", m["status"])
	}
	for event, want := range map[string]float64{"placed": 1, "rechecked": 1, "released": 1} {
		if got := s.counter("erpgate_holds_total", map[string]string{"event": event}); got != want {
			t.Errorf("erpgate_holds_total{event=%q} = %v, want %v", event, got, want)
		}
	}
	// The goods are there now: the match goes through.
	if m := s.do("POST", "/invoices/5105600105/three-way-match", nil).json(t); m["result"] != "MATCHED" {
		t.Errorf("match after the goods arrived: %v", m["result"])
	}
}
