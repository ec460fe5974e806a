package erp_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// countingERP answers invoice reads with a copy of inv, counting them, and
// posts by setting inv's status. post, when set, runs inside PostInvoice.
type countingERP struct {
	erp.Client
	mu         sync.Mutex
	inv        erp.Invoice
	reads      int
	writeReads int
	fail       error
	post       func()
}

func (c *countingERP) Invoice(_ context.Context, id string) (erp.Invoice, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if c.fail != nil {
		return erp.Invoice{}, c.fail
	}
	if id != c.inv.ID {
		return erp.Invoice{}, &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id}
	}
	inv := c.inv
	inv.Lines = append([]erp.InvoiceLine(nil), c.inv.Lines...)
	return inv, nil
}

func (c *countingERP) InvoiceForWrite(ctx context.Context, id string) (erp.Invoice, error) {
	c.mu.Lock()
	c.writeReads++
	c.mu.Unlock()
	return c.Invoice(ctx, id)
}

func (c *countingERP) PostInvoice(_ context.Context, inv erp.Invoice, _ string) (erp.Posting, error) {
	if c.post != nil {
		c.post()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inv.Status = erp.InvoicePosted
	return erp.Posting{InvoiceID: inv.ID, FiscalYear: inv.FiscalYear, Status: erp.InvoicePosted}, nil
}

func (c *countingERP) counts() (reads, writeReads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads, c.writeReads
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newRunReads(t *testing.T) (*erp.RunReads, *countingERP, *clock, *[]bool) {
	t.Helper()
	base := &countingERP{inv: erp.Invoice{ID: "5105600101", FiscalYear: "2026", Status: erp.InvoiceParked,
		Lines: []erp.InvoiceLine{{Item: "1", POID: "4500018822", POItem: "10"}}}}
	clk := &clock{t: time.Now()}
	var seen []bool
	rr := erp.NewRunReads(base, erp.RunReadsOptions{TTL: 30 * time.Second, Now: clk.now,
		Observe: func(hit bool) { seen = append(seen, hit) }})
	return rr, base, clk, &seen
}

func TestRunReadsShareWithinTheRunOnly(t *testing.T) {
	rr, base, clk, seen := newRunReads(t)
	ctx := context.Background()
	const id = "5105600101"
	read := func(ctx context.Context) erp.Invoice {
		t.Helper()
		inv, err := rr.Invoice(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}

	read(erp.KeepRunRead(ctx, "agent\x00run-1"))
	read(erp.ShareRunRead(ctx, "agent\x00run-1"))
	if r, _ := base.counts(); r != 1 {
		t.Fatalf("a shared read after the run's read: %d ERP reads, want 1", r)
	}
	// A kept read is always the ERP's, even right after one.
	read(erp.KeepRunRead(ctx, "agent\x00run-1"))
	if r, _ := base.counts(); r != 2 {
		t.Errorf("a second kept read: %d ERP reads, want 2", r)
	}
	// Another run, and a request without a run, read the ERP.
	read(erp.ShareRunRead(ctx, "agent\x00run-2"))
	read(ctx)
	if r, _ := base.counts(); r != 4 {
		t.Errorf("another run and no run: %d ERP reads, want 4", r)
	}
	// run-2's read replaced run-1's: run-1 reads again, and keeps it.
	read(erp.ShareRunRead(ctx, "agent\x00run-1"))
	read(erp.ShareRunRead(ctx, "agent\x00run-1"))
	if r, _ := base.counts(); r != 5 {
		t.Errorf("run-1 after run-2's read: %d ERP reads, want 5", r)
	}
	// Past the TTL the run reads the ERP again.
	clk.add(30 * time.Second)
	read(erp.ShareRunRead(ctx, "agent\x00run-1"))
	if r, _ := base.counts(); r != 6 {
		t.Errorf("past the TTL: %d ERP reads, want 6", r)
	}
	want := []bool{true, false, false, true, false}
	if len(*seen) != len(want) {
		t.Fatalf("observed %v, want %v", *seen, want)
	}
	for i := range want {
		if (*seen)[i] != want[i] {
			t.Errorf("observed %v, want %v", *seen, want)
			break
		}
	}
}

func TestRunReadsHandOutCopies(t *testing.T) {
	rr, base, _, _ := newRunReads(t)
	ctx := erp.ShareRunRead(context.Background(), "agent\x00run-1")
	inv, err := rr.Invoice(ctx, base.inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	inv.Lines[0].POID = "changed"
	again, err := rr.Invoice(ctx, base.inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Lines[0].POID != "4500018822" {
		t.Errorf("a caller's change reached the kept read: PO %q", again.Lines[0].POID)
	}
	again.Lines[0].POID = "changed again"
	if third, _ := rr.Invoice(ctx, base.inv.ID); third.Lines[0].POID != "4500018822" {
		t.Errorf("a hit's change reached the kept read: PO %q", third.Lines[0].POID)
	}
}

func TestRunReadsKeepNoError(t *testing.T) {
	rr, base, _, _ := newRunReads(t)
	ctx := erp.ShareRunRead(context.Background(), "agent\x00run-1")
	base.fail = errors.New("connection reset")
	if _, err := rr.Invoice(ctx, base.inv.ID); err == nil {
		t.Fatal("the ERP's failure was not passed on")
	}
	base.fail = nil
	if _, err := rr.Invoice(ctx, base.inv.ID); err != nil {
		t.Fatal(err)
	}
	var nf *erp.NotFoundError
	if _, err := rr.Invoice(ctx, "5105600199"); !errors.As(err, &nf) {
		t.Fatalf("unknown invoice: %v, want a NotFoundError", err)
	}
	if _, err := rr.Invoice(ctx, "5105600199"); !errors.As(err, &nf) {
		t.Fatalf("unknown invoice again: %v, want a NotFoundError", err)
	}
	if r, _ := base.counts(); r != 4 {
		t.Errorf("%d ERP reads, want 4: a failure and a not-found are never kept", r)
	}
}

// TestRunReadsForgetAPostedInvoice: a posting forgets every run's read of
// the invoice, and a read begun before the posting ended is not kept; the
// post's own read is the ERP's.
func TestRunReadsForgetAPostedInvoice(t *testing.T) {
	rr, base, _, _ := newRunReads(t)
	ctx := context.Background()
	run1, run2 := erp.ShareRunRead(ctx, "agent\x00run-1"), erp.ShareRunRead(ctx, "agent\x00run-2")
	inv, err := rr.Invoice(run1, base.inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rr.InvoiceForWrite(run1, base.inv.ID); err != nil {
		t.Fatal(err)
	}
	if r, w := base.counts(); r != 2 || w != 1 {
		t.Errorf("the read for a write: %d ERP reads (%d for a write), want 2 (1)", r, w)
	}

	// While the posting is in flight, run-2 reads the invoice as it was.
	var during erp.Invoice
	base.post = func() {
		var err error
		if during, err = rr.Invoice(run2, base.inv.ID); err != nil {
			t.Error(err)
		}
	}
	if _, err := rr.PostInvoice(ctx, inv, "k"); err != nil {
		t.Fatal(err)
	}
	if during.Status != erp.InvoiceParked {
		t.Fatalf("the read during the post saw %q", during.Status)
	}
	for _, run := range []context.Context{run1, run2} {
		got, err := rr.Invoice(run, base.inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != erp.InvoicePosted {
			t.Errorf("after the posting a run read %q, want posted", got.Status)
		}
	}
}

// BenchmarkRunReads measures a match's invoice read answered by its run's
// read, against the read passed through unmarked.
func BenchmarkRunReads(b *testing.B) {
	base := &countingERP{inv: erp.Invoice{ID: "5105600101", FiscalYear: "2026", Status: erp.InvoiceParked,
		Lines: []erp.InvoiceLine{{Item: "1", POID: "4500018822", POItem: "10"}, {Item: "2", POID: "4500018822", POItem: "20"}}}}
	rr := erp.NewRunReads(base, erp.RunReadsOptions{TTL: time.Minute})
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"hit", erp.ShareRunRead(context.Background(), "agent\x00run-1")},
		{"unmarked", context.Background()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rr.Invoice(bc.ctx, base.inv.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
