package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/retry"
)

// TestHoldIsRecheckedAndReleased holds an invoice whose goods receipt is
// missing, and shows the gateway's scheduler release it once the goods
// have arrived.
func TestHoldIsRecheckedAndReleased(t *testing.T) {
	s := newStack(t)
	r := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "Goods receipt for PO 4500018822 item 20 missing.",
		"recheck_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	if r.status != 200 || r.json(t)["status"] != "held" {
		t.Fatalf("hold: %d %s", r.status, r.body)
	}
	hold, err := s.records.Hold(context.Background(), r.json(t)["hold_id"].(string))
	if err != nil || hold.Status != records.HoldHeld || len(hold.Awaiting) != 1 ||
		hold.Awaiting[0] != (records.POItemRef{POID: "4500018822", Item: "20"}) {
		t.Fatalf("stored hold %+v, %v; want it held, awaiting PO 4500018822 item 20", hold, err)
	}
	// The invoice stays parked in the ERP: SAP needs no write to keep it unpaid.
	if m := s.do("GET", "/invoices/5105600105", nil).json(t); m["status"] != "parked" {
		t.Errorf("invoice status %v while held, want parked", m["status"])
	}
	client, err := sap.New(s.simURL, sap.Options{Runner: retry.New(retry.Policy{}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(2 * time.Hour)
	proc := erp.NewProcess(client, erp.ProcessOptions{Records: s.records})
	sched := recheck.New(recheck.Options{Invoices: client, Receipts: proc, Holds: s.records, Every: time.Hour,
		Observer: s.metrics, Now: func() time.Time { return now }})

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
	if h, _ := s.records.Hold(context.Background(), hold.ID); h.Status != records.HoldReleased || h.ReleasedAt.IsZero() {
		t.Errorf("hold after the release: %+v", h)
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
