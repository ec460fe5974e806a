package recheck_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// newSimERP starts the simulator at t0 behind a real HTTP server and
// returns it with an SAP client for it.
func newSimERP(t *testing.T) (*sim.Server, *sap.Client) {
	t.Helper()
	s := sim.New(sim.Options{Now: func() time.Time { return t0 }})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	policy := retry.Policy{AttemptTimeout: 5 * time.Second, MaxAttempts: 1, Breaker: retry.BreakerSettings{Disabled: true}}
	c, err := sap.New(srv.URL, sap.Options{Runner: retry.New(policy, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestGoodsArrive holds invoice 5105600105, whose PO 4500018822 item 20
// has only a cancelled goods receipt, and lets the scheduler release it
// once the goods arrive: first 3 of the 5 invoiced, then the rest.
func TestGoodsArrive(t *testing.T) {
	for name, q := range queues(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := newSimERP(t)
			h, err := erp.NewProcess(c, erp.DefaultTolerance).HoldInvoice(ctx, "5105600105", "gr_missing", t0.Add(time.Hour), "hold-105")
			if err != nil {
				t.Fatalf("HoldInvoice: %v", err)
			}
			if err := q.Add(ctx, recheck.Entry{HoldID: h.ID, InvoiceID: h.InvoiceID, FiscalYear: h.FiscalYear, RecheckAt: t0}); err != nil {
				t.Fatal(err)
			}
			clk := newClock(t0)
			obs := &observer{}
			sch := recheck.New(recheck.Options{ERP: c, Queue: q, Now: clk.Now, Observer: obs,
				Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})

			run := func(at time.Time, want recheck.Report) {
				t.Helper()
				clk.Set(at)
				rep, err := sch.RunOnce(ctx)
				if err != nil || rep != want {
					t.Fatalf("RunOnce at %s: got %+v, %v, want %+v", at.Format(time.TimeOnly), rep, err, want)
				}
			}
			waiting := recheck.Report{Claimed: 1, Waiting: 1}
			run(t0, waiting)
			run(t0.Add(59*time.Minute), recheck.Report{})
			mustLen(t, q, 1)

			if _, err := s.PostGoodsReceipt("4500018822", "20", qty(3)); err != nil {
				t.Fatal(err)
			}
			run(t0.Add(time.Hour), waiting)
			if _, err := s.PostGoodsReceipt("4500018822", "20", qty(2)); err != nil {
				t.Fatal(err)
			}
			run(t0.Add(time.Hour+30*time.Minute), recheck.Report{})
			run(t0.Add(2*time.Hour+time.Second), recheck.Report{Claimed: 1, Released: 1})
			mustLen(t, q, 0)

			inv, err := c.Invoice(ctx, "5105600105")
			if err != nil || inv.Status != erp.InvoiceParked || inv.PaymentBlock != "" {
				t.Errorf("invoice: got %q block %q, %v, want parked without block", inv.Status, inv.PaymentBlock, err)
			}
			l := s.Ledger()
			if len(l.Holds) != 1 || l.Holds[0].HoldID != h.ID || l.Holds[0].Status != sim.HoldReleased || !l.Holds[0].ReleasedAt.Equal(t0) {
				t.Errorf("ledger holds: got %+v, want %s released at %v", l.Holds, h.ID, t0)
			}
			if rel, wait := obs.counts(); rel != 1 || wait != 2 {
				t.Errorf("observer: got %d released %d waiting, want 1 and 2", rel, wait)
			}
			run(t0.Add(48*time.Hour), recheck.Report{})
		})
	}
}

// TestWaitingEntry checks what a still-missing goods receipt puts back.
func TestWaitingEntry(t *testing.T) {
	ctx := context.Background()
	_, c := newSimERP(t)
	h, err := c.HoldInvoice(ctx, erp.HoldRequest{InvoiceID: "5105600105", Reason: "gr_missing", RecheckAt: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	q := recheck.NewMemoryQueue()
	q.Add(ctx, recheck.Entry{HoldID: h.ID, InvoiceID: h.InvoiceID, FiscalYear: "2026", RecheckAt: t0.Add(-time.Minute), Checks: 4})
	now := t0.Add(time.Second)
	sch := recheck.New(recheck.Options{ERP: c, Queue: q, Every: 3 * time.Hour, Now: func() time.Time { return now }})
	if rep, err := sch.RunOnce(ctx); err != nil || rep.Waiting != 1 {
		t.Fatalf("RunOnce: got %+v, %v, want one waiting", rep, err)
	}
	got, _ := q.Claim(ctx, now.Add(3*time.Hour), 10)
	want := recheck.Entry{HoldID: h.ID, InvoiceID: "5105600105", FiscalYear: "2026", RecheckAt: now.Add(3 * time.Hour), Checks: 5}
	if len(got) != 1 || !sameEntry(got[0], want) {
		t.Errorf("re-added entry: got %+v, want %+v", got, want)
	}
}
