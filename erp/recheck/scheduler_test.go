package recheck_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
)

func add(t *testing.T, q recheck.Queue, e recheck.Entry) {
	t.Helper()
	if err := q.Add(context.Background(), e); err != nil {
		t.Fatalf("Add %s: %v", e.HoldID, err)
	}
}

func TestRunOnceOutcomes(t *testing.T) {
	f := newFakeERP()
	f.order("4500000001", grItem("10"), grItem("20"), erp.POItem{Item: "30", Quantity: qty(5)})
	f.order("4500000002", grItem("10"))
	f.failPO["4500000002"] = true
	f.receive("4500000001", "10", 4)
	f.receive("4500000001", "10", 1)
	f.receive("4500000001", "20", 2)

	f.invoice("INV1", erp.InvoiceHeld, line("4500000001", "10", 5))                              // covered by 4+1
	f.invoice("INV2", erp.InvoiceHeld, line("4500000001", "20", 1), line("4500000001", "20", 2)) // 3 invoiced, 2 received
	f.invoice("INV3", erp.InvoicePosted, line("4500000001", "20", 9))                            // no longer held
	f.invoice("INV4", erp.InvoiceParked, line("4500000001", "20", 9))                            // no longer held
	f.invoice("INV6", erp.InvoiceHeld, line("4500000002", "10", 1))                              // PO read fails
	f.invoice("INV7", erp.InvoiceHeld, line("4500000001", "10", 1))                              // hold unknown to the ERP
	f.invoice("INV8", erp.InvoiceHeld, line("4500000001", "30", 5), line("4500000001", "10", 1)) // item 30 not GR-based
	f.invoice("INV9", erp.InvoiceHeld, line("4500000009", "10", 1))                              // PO unknown
	f.invoice("INVA", erp.InvoiceHeld, line("4500000001", "40", 1))                              // item unknown
	f.invoice("INVB", erp.InvoiceHeld, line("4500000001", "10", 1))                              // not yet due
	f.noHold["H7"] = true

	q := recheck.NewMemoryQueue()
	now := t0
	for _, id := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "A"} {
		add(t, q, recheck.Entry{HoldID: "H" + id, InvoiceID: "INV" + id, FiscalYear: "2026", RecheckAt: now.Add(-time.Hour), Checks: 1})
	}
	add(t, q, recheck.Entry{HoldID: "HB", InvoiceID: "INVB", RecheckAt: now.Add(time.Second)})
	obs := &observer{}
	sch := recheck.New(recheck.Options{ERP: f, Queue: q, Every: 2 * time.Hour, Now: func() time.Time { return now }, Observer: obs})

	rep, err := sch.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	// Released H1 H8; waiting H2 H9 HA; dropped H3 H4 H5 (no invoice) H7; failed H6.
	want := recheck.Report{Claimed: 10, Released: 2, Waiting: 3, Dropped: 4, Failed: 1}
	if rep != want {
		t.Errorf("report: got %+v, want %+v", rep, want)
	}
	for id, n := range map[string]int{"H1": 1, "H8": 1, "H2": 0, "H3": 0, "H6": 0, "H7": 0, "HB": 0} {
		if got := f.releases(id); got != n {
			t.Errorf("ReleaseHold(%s): got %d calls, want %d", id, got, n)
		}
	}
	if rel, wait := obs.counts(); rel != 2 || wait != 3 {
		t.Errorf("observer: got %d released %d waiting, want 2 and 3", rel, wait)
	}

	left, err := q.Claim(context.Background(), now.Add(24*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]recheck.Entry{}
	for _, e := range left {
		got[e.HoldID] = e
	}
	if ids := slices.Sorted(maps.Keys(got)); !slices.Equal(ids, []string{"H2", "H6", "H9", "HA", "HB"}) {
		t.Fatalf("left in the queue: got %v, want H2 H6 H9 HA HB", ids)
	}
	for _, id := range []string{"H2", "H9", "HA"} {
		if e := got[id]; !e.RecheckAt.Equal(now.Add(2*time.Hour)) || e.Checks != 2 {
			t.Errorf("waiting %s: got %+v, want due in 2h with 2 checks", id, e)
		}
	}
	if e := got["H6"]; !e.RecheckAt.Equal(now.Add(time.Minute)) || e.Checks != 1 {
		t.Errorf("failed H6: got %+v, want due in 1m with 1 check", e)
	}
	if e := got["HB"]; !e.RecheckAt.Equal(now.Add(time.Second)) || e.Checks != 0 {
		t.Errorf("not due HB: got %+v, want unchanged", e)
	}
}

func TestRunOnceFailureDelayAndBatch(t *testing.T) {
	f := newFakeERP()
	f.order("4500000002", grItem("10"))
	f.failPO["4500000002"] = true
	q := recheck.NewMemoryQueue()
	for i := 1; i <= 5; i++ {
		f.invoice(fmt.Sprint("INV", i), erp.InvoiceHeld, line("4500000002", "10", 1))
		add(t, q, recheck.Entry{HoldID: holdID(i), InvoiceID: fmt.Sprint("INV", i), RecheckAt: t0})
	}
	sch := recheck.New(recheck.Options{ERP: f, Queue: q, Every: 20 * time.Second, Batch: 2, Now: func() time.Time { return t0 }})
	rep, err := sch.RunOnce(context.Background())
	if err != nil || rep != (recheck.Report{Claimed: 2, Failed: 2}) {
		t.Fatalf("RunOnce: got %+v, %v, want 2 claimed and failed", rep, err)
	}
	// A failure waits min(Every, 1m): here Every.
	got, _ := q.Claim(context.Background(), t0.Add(20*time.Second), 10)
	if !slices.Equal(ids(got), []string{holdID(3), holdID(4), holdID(5), holdID(1), holdID(2)}) {
		t.Errorf("queue after a failed batch: got %v, want H3 H4 H5 due now, then H1 H2", ids(got))
	}
	if len(got) == 5 && !got[3].RecheckAt.Equal(t0.Add(20*time.Second)) {
		t.Errorf("failed entry: got due %v, want %v", got[3].RecheckAt, t0.Add(20*time.Second))
	}
}

func TestRunOnceContextEnds(t *testing.T) {
	f := newFakeERP()
	f.order("4500000001", grItem("10"))
	q := recheck.NewMemoryQueue()
	for i := 1; i <= 4; i++ {
		f.invoice(fmt.Sprint("INV", i), erp.InvoiceHeld, line("4500000001", "10", 1))
		add(t, q, recheck.Entry{HoldID: holdID(i), InvoiceID: fmt.Sprint("INV", i), RecheckAt: t0.Add(time.Duration(i) * time.Millisecond), Checks: 7})
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.onInvoice = func(string) { cancel() }
	now := t0.Add(time.Second)
	sch := recheck.New(recheck.Options{ERP: f, Queue: q, Now: func() time.Time { return now }})
	rep, err := sch.RunOnce(ctx)
	// The first check went on with its answer; the rest were never tried.
	if err != nil || rep.Claimed != 4 || rep.Waiting != 1 || rep.Failed != 3 {
		t.Fatalf("RunOnce: got %+v, %v, want 1 waiting and 3 failed", rep, err)
	}
	got, _ := q.Claim(context.Background(), now, 10)
	if !slices.Equal(ids(got), []string{holdID(2), holdID(3), holdID(4)}) {
		t.Fatalf("due after the cancelled run: got %v, want H2 H3 H4", ids(got))
	}
	for i, e := range got {
		if !e.RecheckAt.Equal(t0.Add(time.Duration(i+2)*time.Millisecond)) || e.Checks != 7 {
			t.Errorf("untried %s: got %+v, want unchanged", e.HoldID, e)
		}
	}
	mustLen(t, q, 1)
}

// brokenAdd is a queue whose Add fails after the entries are in.
type brokenAdd struct {
	recheck.Queue
	fail bool
}

func (b *brokenAdd) Add(ctx context.Context, e recheck.Entry) error {
	if b.fail {
		return errors.New("queue down")
	}
	return b.Queue.Add(ctx, e)
}

func TestRunOnceReportsLostEntries(t *testing.T) {
	f := newFakeERP()
	f.order("4500000001", grItem("10"))
	f.invoice("INV1", erp.InvoiceHeld, line("4500000001", "10", 1))
	q := &brokenAdd{Queue: recheck.NewMemoryQueue()}
	add(t, q, recheck.Entry{HoldID: "H1", InvoiceID: "INV1", RecheckAt: t0})
	q.fail = true
	sch := recheck.New(recheck.Options{ERP: f, Queue: q, Now: func() time.Time { return t0 }})
	rep, err := sch.RunOnce(context.Background())
	if err == nil || !strings.Contains(err.Error(), "H1") || !strings.Contains(err.Error(), "queue down") || rep.Waiting != 1 {
		t.Errorf("RunOnce with a failing re-add: got %+v, %v, want one waiting and an error naming H1", rep, err)
	}
}

func TestRunOnceClaimError(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	sch := recheck.New(recheck.Options{ERP: newFakeERP(), Queue: recheck.NewRedisQueue(c, "x:")})
	if rep, err := sch.RunOnce(context.Background()); err == nil || rep.Claimed != 0 {
		t.Errorf("RunOnce without Redis: got %+v, %v, want an error", rep, err)
	}
}

func TestRun(t *testing.T) {
	f := newFakeERP()
	f.order("4500000001", grItem("10"))
	f.receive("4500000001", "10", 1)
	f.invoice("INV1", erp.InvoiceHeld, line("4500000001", "10", 1))
	q := recheck.NewMemoryQueue()
	add(t, q, recheck.Entry{HoldID: "H1", InvoiceID: "INV1", RecheckAt: time.Now().Add(30 * time.Millisecond)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		recheck.New(recheck.Options{ERP: f, Queue: q, Interval: 10 * time.Millisecond}).Run(ctx)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for f.releases("H1") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	if n := f.releases("H1"); n != 1 {
		t.Errorf("releases: got %d, want 1", n)
	}
}

func TestNewNeedsERPAndQueue(t *testing.T) {
	for name, opts := range map[string]recheck.Options{
		"no ERP":   {Queue: recheck.NewMemoryQueue()},
		"no queue": {ERP: newFakeERP()},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New with %s: did not panic", name)
				}
			}()
			recheck.New(opts)
		}()
	}
}

// TestSharedRedisQueue runs two schedulers, as two replicas would, over one
// Redis queue holding 50 due entries, each in several goroutines at once:
// every hold is checked and released exactly once.
func TestSharedRedisQueue(t *testing.T) {
	const holds = 50
	addr := redistest.Addr(t)
	f := newFakeERP()
	f.order("4500000001", grItem("10"))
	f.receive("4500000001", "10", 1)
	var replicas []*recheck.Scheduler
	for range 2 {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		q := recheck.NewRedisQueue(c, "{erpgate}:")
		replicas = append(replicas, recheck.New(recheck.Options{ERP: f, Queue: q, Batch: 3, Now: func() time.Time { return t0 }}))
		if len(replicas) == 1 {
			for i := 1; i <= holds; i++ {
				f.invoice(fmt.Sprint("INV", i), erp.InvoiceHeld, line("4500000001", "10", 1))
				add(t, q, recheck.Entry{HoldID: holdID(i), InvoiceID: fmt.Sprint("INV", i), RecheckAt: t0.Add(-time.Duration(i) * time.Second)})
			}
		}
	}

	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total recheck.Report
	for _, sch := range replicas {
		for range 4 {
			wg.Go(func() {
				<-start
				for range 20 {
					rep, err := sch.RunOnce(context.Background())
					if err != nil {
						t.Errorf("RunOnce: %v", err)
						return
					}
					mu.Lock()
					total.Claimed += rep.Claimed
					total.Released += rep.Released
					total.Waiting += rep.Waiting
					total.Dropped += rep.Dropped
					total.Failed += rep.Failed
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()

	if want := (recheck.Report{Claimed: holds, Released: holds}); total != want {
		t.Errorf("reports added up: got %+v, want %+v", total, want)
	}
	for i := 1; i <= holds; i++ {
		if n := f.releases(holdID(i)); n != 1 {
			t.Errorf("ReleaseHold(%s): got %d calls, want 1", holdID(i), n)
		}
		if n := f.invoiceReads(fmt.Sprint("INV", i)); n != 1 {
			t.Errorf("Invoice(INV%d): got %d reads, want 1", i, n)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	mustLen(t, recheck.NewRedisQueue(c, "{erpgate}:"), 0)
}
