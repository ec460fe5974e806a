package recheck_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// fakeERP has one order item per invoice, goods-receipt-based, whose
// receipts a test adds; it counts the invoice reads.
type fakeERP struct {
	erp.Client
	mu       sync.Mutex
	invoices map[string]erp.Invoice
	receipts map[string][]erp.GoodsReceipt // by PO id
	fail     error
	reads    int
}

func newFakeERP(ids ...string) *fakeERP {
	f := &fakeERP{invoices: map[string]erp.Invoice{}, receipts: map[string][]erp.GoodsReceipt{}}
	for _, id := range ids {
		f.invoices[id] = erp.Invoice{ID: id, FiscalYear: "2026", Status: erp.InvoiceParked,
			Lines: []erp.InvoiceLine{{Item: "1", POID: "45" + id[2:], POItem: "10", Quantity: decimal.NewFromInt(5)}}}
	}
	return f
}

func (f *fakeERP) Invoice(_ context.Context, id string) (erp.Invoice, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.fail != nil {
		return erp.Invoice{}, f.fail
	}
	inv, ok := f.invoices[id]
	if !ok {
		return erp.Invoice{}, &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id}
	}
	return inv, nil
}

func (f *fakeERP) PurchaseOrder(_ context.Context, id string) (erp.PurchaseOrder, error) {
	return erp.PurchaseOrder{ID: id, Items: []erp.POItem{{Item: "10", GoodsReceiptBased: true}}}, nil
}

func (f *fakeERP) GoodsReceipts(_ context.Context, po, _ string) ([]erp.GoodsReceipt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.receipts[po], nil
}

func (f *fakeERP) arrive(invoiceID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	po := "45" + invoiceID[2:]
	f.receipts[po] = append(f.receipts[po], erp.GoodsReceipt{POID: po, POItem: "10", Quantity: decimal.NewFromInt(5)})
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type counter struct {
	mu                sync.Mutex
	released, waiting int
}

func (c *counter) Rechecked(rel bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rel {
		c.released++
	} else {
		c.waiting++
	}
}

// setup holds each invoice through a Process over f, due in an hour.
func setup(t *testing.T, store records.Store, f *fakeERP, c *clock, ids ...string) (*recheck.Scheduler, *counter, []erp.Hold) {
	t.Helper()
	p := erp.NewProcess(f, erp.ProcessOptions{Records: store, Now: c.now})
	var holds []erp.Hold
	for _, id := range ids {
		h, err := p.HoldInvoice(context.Background(), erp.HoldRequest{InvoiceID: id, Reason: "waiting for goods",
			RecheckAt: c.now().Add(time.Hour), Client: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, h)
	}
	obs := &counter{}
	s := recheck.New(recheck.Options{Invoices: f, Receipts: p, Holds: store, Now: c.now, Observer: obs})
	return s, obs, holds
}

func TestRunOnce(t *testing.T) {
	ctx := context.Background()
	store, _ := recordstest.SQLite(t)
	f := newFakeERP("5105600105", "5105600106", "5105600107")
	c := &clock{t: time.Now().UTC().Truncate(time.Second)}
	s, obs, holds := setup(t, store, f, c, "5105600105", "5105600106", "5105600107")
	for _, h := range holds {
		if len(h.Awaiting) != 1 {
			t.Fatalf("hold %s awaits %v, want its one item", h.ID, h.Awaiting)
		}
	}

	if rep, err := s.RunOnce(ctx); err != nil || rep.Claimed != 0 {
		t.Fatalf("before the re-check time: %+v, %v; want nothing claimed", rep, err)
	}
	c.add(time.Hour)
	f.arrive("5105600105")
	f.mu.Lock()
	inv := f.invoices["5105600106"]
	inv.Status = erp.InvoicePosted
	f.invoices["5105600106"] = inv
	f.mu.Unlock()
	rep, err := s.RunOnce(ctx)
	if err != nil || rep != (recheck.Report{Claimed: 3, Released: 1, Waiting: 1, Closed: 1}) {
		t.Fatalf("at the re-check time: %+v, %v; want one released, one waiting, one closed", rep, err)
	}
	if obs.released != 1 || obs.waiting != 1 {
		t.Errorf("observer: %+v", obs)
	}
	check := func(id, status string, kinds ...string) {
		t.Helper()
		h, err := store.Hold(ctx, id)
		if err != nil || h.Status != status {
			t.Errorf("hold %s: %+v, %v; want %s", id, h, err, status)
		}
		evs, err := store.HoldEvents(ctx, id)
		if err != nil || len(evs) != len(kinds) {
			t.Fatalf("hold %s events %+v, %v; want %v", id, evs, err, kinds)
		}
		for i, k := range kinds {
			if evs[i].Kind != k {
				t.Errorf("hold %s event %d: %s, want %s", id, i, evs[i].Kind, k)
			}
		}
	}
	check(holds[0].ID, records.HoldReleased, "placed", "released")
	check(holds[1].ID, records.HoldReleased, "placed", "closed")
	check(holds[2].ID, records.HoldHeld, "placed", "rechecked")

	// The waiting hold is due again after Every (1h), not before.
	c.add(30 * time.Minute)
	if rep, _ := s.RunOnce(ctx); rep.Claimed != 0 {
		t.Errorf("half an hour later: %+v; want nothing due", rep)
	}
	c.add(30 * time.Minute)
	f.arrive("5105600107")
	if rep, _ := s.RunOnce(ctx); rep.Released != 1 {
		t.Errorf("an hour later with the goods: %+v; want it released", rep)
	}
	check(holds[2].ID, records.HoldReleased, "placed", "rechecked", "released")
}

func TestRunOnceERPFailure(t *testing.T) {
	ctx := context.Background()
	store, _ := recordstest.SQLite(t)
	f := newFakeERP("5105600105")
	c := &clock{t: time.Now().UTC().Truncate(time.Second)}
	s, _, holds := setup(t, store, f, c, "5105600105")
	c.add(time.Hour)
	f.fail = errors.New("connection refused")
	rep, err := s.RunOnce(ctx)
	if err != nil || rep.Failed != 1 {
		t.Fatalf("with the ERP down: %+v, %v; want one failed", rep, err)
	}
	h, _ := store.Hold(ctx, holds[0].ID)
	if h.Status != records.HoldHeld || !h.NextCheckAt.Equal(c.now().Add(time.Minute)) || h.Checks != 0 {
		t.Errorf("after a failed check: %+v; want held, due again in a minute, no check counted", h)
	}
	f.fail = nil
	f.arrive("5105600105")
	c.add(time.Minute)
	if rep, _ := s.RunOnce(ctx); rep.Released != 1 {
		t.Errorf("a minute later, the ERP back: %+v; want released", rep)
	}
}

// TestSchedulersShareHolds runs schedulers of two gateways over one
// database at once: every hold is checked exactly once.
func TestSchedulersShareHolds(t *testing.T) {
	for _, engine := range []struct {
		name string
		open func(testing.TB) (records.Store, string)
	}{{"sqlite", recordstest.SQLite}, {"postgres", recordstest.Postgres}} {
		t.Run(engine.name, func(t *testing.T) {
			ctx := context.Background()
			store, url := engine.open(t)
			other, err := records.Open(ctx, url, records.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			var ids []string
			for i := range 20 {
				ids = append(ids, "51056002"+string(rune('0'+i/10))+string(rune('0'+i%10)))
			}
			f := newFakeERP(ids...)
			c := &clock{t: time.Now().UTC().Truncate(time.Second)}
			a, _, _ := setup(t, store, f, c, ids...)
			p := erp.NewProcess(f, erp.ProcessOptions{Records: other, Now: c.now})
			b := recheck.New(recheck.Options{Invoices: f, Receipts: p, Holds: other, Now: c.now, Batch: 3})
			for _, id := range ids {
				f.arrive(id)
			}
			c.add(time.Hour)
			var wg sync.WaitGroup
			reps := make([]recheck.Report, 2)
			for i, s := range []*recheck.Scheduler{a, b} {
				wg.Go(func() {
					for {
						rep, err := s.RunOnce(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						if rep.Claimed == 0 {
							return
						}
						reps[i].Claimed += rep.Claimed
						reps[i].Released += rep.Released
					}
				})
			}
			wg.Wait()
			if got := reps[0].Released + reps[1].Released; got != len(ids) || reps[0].Claimed+reps[1].Claimed != len(ids) {
				t.Errorf("released %d of %d holds, claimed %d (%+v)", got, len(ids), reps[0].Claimed+reps[1].Claimed, reps)
			}
			for _, id := range ids {
				list, _ := store.ListHolds(ctx, records.HoldFilter{InvoiceID: id})
				if len(list) != 1 || list[0].Status != records.HoldReleased {
					t.Errorf("invoice %s: holds %+v", id, list)
					continue
				}
				evs, _ := store.HoldEvents(ctx, list[0].ID)
				if len(evs) != 2 {
					t.Errorf("invoice %s: events %+v; want placed and one release", id, evs)
				}
			}
		})
	}
}
