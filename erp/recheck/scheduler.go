// Package recheck re-checks held invoices on a schedule. A hold waits for
// something named: the goods receipts of goods-receipt-based purchase order
// items, an approval's decision, or a date. A decision releases its hold at
// once, in the records' own transaction; a Scheduler re-checks the rest: it
// reads the invoice, its purchase order items and their goods receipts
// again and releases the hold once nothing is awaited any more, by the same
// rule the three-way match answers GR_MISSING by. A receipt that arrives
// while another is still awaited is recorded too: it changes the case.
//
// The holds live in the gateway's records (erp/records); ClaimDueHolds
// hands each due hold to one scheduler of all the replicas sharing the
// database.
package recheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
)

// Defaults for the zero fields of Options.
const (
	// DefaultEvery is how long a hold whose goods receipt is still missing
	// waits for its next re-check.
	DefaultEvery = time.Hour
	// DefaultInterval is how often Run looks for due holds.
	DefaultInterval = 30 * time.Second
	// DefaultBatch is how many holds one RunOnce claims at most.
	DefaultBatch = 50
)

// failureDelay caps the wait before a hold whose check failed is tried
// again: an ERP outage should not hold up a release for a whole Every.
const failureDelay = time.Minute

// claimLease is how long a claimed hold is kept from other schedulers: a
// scheduler that dies mid-check leaves it to another after this.
const claimLease = 5 * time.Minute

// writeTimeout bounds one write of a check's outcome.
const writeTimeout = 10 * time.Second

// Holds is what the Scheduler needs of the gateway's records;
// records.Store provides it.
type Holds interface {
	ClaimDueHolds(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]records.Hold, error)
	RescheduleHold(ctx context.Context, id string, next time.Time, checked bool, at time.Time) error
	ReleaseHold(ctx context.Context, ev records.HoldEvent) error
	HoldAwaiting(ctx context.Context, holdID string, awaiting []records.POItemRef, at time.Time) error
	Approval(ctx context.Context, id string) (records.Approval, error)
}

// Receipts is what the Scheduler reads from the ERP; erp.Process provides
// AwaitedReceipts, with the rule the three-way match uses.
type Receipts interface {
	AwaitedReceipts(ctx context.Context, inv erp.Invoice) ([]erp.POItemRef, error)
}

// Observer is told the outcome of every completed re-check; metrics
// implement it. Its method must be safe for concurrent use.
type Observer interface {
	// Rechecked reports a re-check that released the hold (true) or found
	// a goods receipt still missing (false). Closed and failed checks are
	// not reported.
	Rechecked(released bool)
}

// Options configures a Scheduler. Invoices, Receipts and Holds are
// required; every other zero field takes the default documented beside it.
type Options struct {
	// Invoices reads the held invoice again.
	Invoices erp.Invoices
	// Receipts tells which of its items still wait for their goods.
	Receipts Receipts
	// Holds are the holds to re-check.
	Holds Holds
	// Every is how long after a re-check that found a goods receipt still
	// missing the hold is checked again. Zero means DefaultEvery (1h).
	Every time.Duration
	// Interval is how often Run calls RunOnce. Zero means DefaultInterval
	// (30s).
	Interval time.Duration
	// Batch is the most holds one RunOnce claims. Zero means DefaultBatch
	// (50).
	Batch int
	// Now is the clock that decides which holds are due. Nil means
	// time.Now.
	Now func() time.Time
	// Logger receives a record per re-check. Nil means discard.
	Logger *slog.Logger
	// Observer is told each completed re-check's outcome. Nil means none.
	Observer Observer
}

// Scheduler re-checks held invoices and releases their holds once the goods
// have arrived. It is safe for concurrent use, and several Schedulers (in
// one process or in several replicas) may share one database: each due
// hold is claimed by one of them.
type Scheduler struct {
	invoices erp.Invoices
	receipts Receipts
	holds    Holds
	every    time.Duration
	interval time.Duration
	batch    int
	now      func() time.Time
	log      *slog.Logger
	observer Observer
}

// New returns a Scheduler. It panics when a required option is nil, which
// is a programming error.
func New(opts Options) *Scheduler {
	if opts.Invoices == nil || opts.Receipts == nil || opts.Holds == nil {
		panic("recheck: Options.Invoices, Receipts and Holds are required")
	}
	s := &Scheduler{
		invoices: opts.Invoices,
		receipts: opts.Receipts,
		holds:    opts.Holds,
		every:    cmp.Or(opts.Every, DefaultEvery),
		interval: cmp.Or(opts.Interval, DefaultInterval),
		batch:    cmp.Or(opts.Batch, DefaultBatch),
		now:      opts.Now,
		log:      opts.Logger,
		observer: opts.Observer,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Report counts what one RunOnce did with the holds it claimed.
type Report struct {
	// Claimed is the number of holds claimed.
	Claimed int
	// Released counts holds released because no item waits any more.
	Released int
	// Waiting counts holds whose goods receipt is still missing; they are
	// due again Every from now.
	Waiting int
	// Closed counts holds ended because there is nothing to wait for: the
	// invoice is posted, or the ERP does not know it.
	Closed int
	// Failed counts holds whose check could not be completed, for an ERP
	// failure or because ctx ended; they are due again within a minute.
	Failed int
}

// RunOnce claims the holds due now, at most Batch of them, and checks each:
// a hold whose invoice is posted or unknown is closed; one whose items no
// longer wait for goods is released; otherwise it is due again Every from
// now. An ERP failure makes it due again min(Every, 1m) from now, and the
// run goes on with the others. The outcome of a check is written even after
// ctx has ended; holds not yet checked then stay claimed until their lease
// runs out and are checked by the next run.
func (s *Scheduler) RunOnce(ctx context.Context) (Report, error) {
	now := s.now()
	holds, err := s.holds.ClaimDueHolds(ctx, now, s.batch, claimLease)
	rep := Report{Claimed: len(holds)}
	if err != nil {
		return rep, fmt.Errorf("recheck: claim due holds: %w", err)
	}
	var errs []error
	for _, h := range holds {
		if ctx.Err() != nil {
			rep.Failed += len(holds) - (rep.Released + rep.Waiting + rep.Closed + rep.Failed)
			break
		}
		log := s.log.With("hold_id", h.ID, "invoice_id", h.InvoiceID, "checks", h.Checks)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		kind, note, awaited, checkErr := s.check(ctx, h)
		var werr error
		switch {
		case checkErr != nil:
			rep.Failed++
			next := now.Add(min(s.every, failureDelay))
			log.WarnContext(ctx, "recheck: failed", "outcome", "failed", "error", checkErr, "next_check_at", next)
			werr = s.holds.RescheduleHold(wctx, h.ID, next, false, now)
		case kind == "":
			rep.Waiting++
			next := now.Add(s.every)
			log.InfoContext(ctx, "recheck: still waiting", "outcome", "waiting", "awaiting", awaited, "next_check_at", next)
			if len(awaited) < len(h.Awaiting) {
				werr = s.holds.HoldAwaiting(wctx, h.ID, awaited, now)
			}
			if werr == nil {
				werr = s.holds.RescheduleHold(wctx, h.ID, next, true, now)
			}
			s.observe(false)
		default:
			if kind == released {
				rep.Released++
			} else {
				rep.Closed++
			}
			log.InfoContext(ctx, "recheck: "+kind, "outcome", kind, "note", note)
			werr = s.holds.ReleaseHold(wctx, records.HoldEvent{HoldID: h.ID, At: now, Kind: kind, Note: note})
			// Told once the release is committed: an observer may send it
			// on at once (the hold webhook).
			if kind == released && werr == nil {
				s.observe(true)
			}
		}
		cancel()
		if werr != nil {
			errs = append(errs, fmt.Errorf("recheck: hold %s: %w", h.ID, werr))
		}
	}
	return rep, errors.Join(errs...)
}

// The kinds of ending a check can give a hold.
const (
	released = "released"
	closed   = "closed"
)

func (s *Scheduler) observe(rel bool) {
	if s.observer != nil {
		s.observer.Rechecked(rel)
	}
}

// check reads the invoice and the items it waits for. It returns the kind
// of ending (released or closed) with a note, or "" with the items still
// awaited.
func (s *Scheduler) check(ctx context.Context, h records.Hold) (kind, note string, awaited []records.POItemRef, err error) {
	if h.ApprovalID != "" {
		// The decision releases the hold itself; until then the hold
		// waits, whatever else has arrived.
		a, err := s.holds.Approval(ctx, h.ApprovalID)
		if err != nil && !errors.Is(err, records.ErrNotFound) {
			return "", "", nil, err
		}
		if err == nil && a.Status == records.ApprovalPending {
			return "", "", h.Awaiting, nil
		}
	}
	inv, err := s.invoices.Invoice(ctx, h.InvoiceID)
	var nf *erp.NotFoundError
	switch {
	case errors.As(err, &nf):
		return closed, "the ERP does not know invoice " + h.InvoiceID, nil, nil
	case err != nil:
		return "", "", nil, err
	case inv.Status == erp.InvoicePosted:
		return closed, "invoice " + h.InvoiceID + " was posted", nil, nil
	}
	items, err := s.receipts.AwaitedReceipts(ctx, inv)
	if err != nil {
		return "", "", nil, err
	}
	if len(items) == 0 {
		if len(h.Awaiting) == 0 {
			return released, "the re-check date arrived and nothing is awaited", nil, nil
		}
		return released, "goods receipts arrived for " + itemList(h.Awaiting), nil, nil
	}
	for _, it := range items {
		awaited = append(awaited, records.POItemRef{POID: it.POID, Item: it.Item})
	}
	return "", "", awaited, nil
}

// itemList names PO items for a note: "4500018822/20, 4500018822/30".
func itemList(items []records.POItemRef) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it.POID + "/" + it.Item)
	}
	return b.String()
}

// Run calls RunOnce at once and then every Interval until ctx ends,
// logging each run's errors and, when it claimed anything, its report.
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		rep, err := s.RunOnce(ctx)
		if err != nil {
			s.log.ErrorContext(ctx, "recheck: run", "error", err)
		}
		if rep.Claimed > 0 {
			s.log.InfoContext(ctx, "recheck: run done", "claimed", rep.Claimed, "released", rep.Released,
				"waiting", rep.Waiting, "closed", rep.Closed, "failed", rep.Failed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
