package recheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
)

// Defaults for the zero fields of Options.
const (
	// DefaultEvery is how long a hold whose goods receipt is still missing
	// waits for its next re-check.
	DefaultEvery = time.Hour
	// DefaultInterval is how often Run looks for due entries.
	DefaultInterval = 30 * time.Second
	// DefaultBatch is how many entries one RunOnce claims at most.
	DefaultBatch = 50
)

// failureDelay caps the wait before an entry whose check failed is tried
// again: an ERP outage should not hold up a release for a whole Every.
const failureDelay = time.Minute

// putBackTimeout bounds one re-add to the queue.
const putBackTimeout = 10 * time.Second

// ERP is what the Scheduler needs from the ERP; *sap.Client provides it.
type ERP interface {
	// Invoice returns the invoice or a *erp.NotFoundError.
	Invoice(ctx context.Context, id string) (erp.Invoice, error)
	erp.PurchaseOrders
	erp.GoodsReceipts
	// ReleaseHold ends the hold; see erp.Holds.
	ReleaseHold(ctx context.Context, h erp.Hold) error
}

// Observer is told the outcome of every completed re-check; metrics
// implement it. Its method must be safe for concurrent use.
type Observer interface {
	// Rechecked reports a re-check that released the hold (true) or found
	// a goods receipt still missing (false). Dropped and failed entries
	// are not reported.
	Rechecked(released bool)
}

// Options configures a Scheduler. ERP and Queue are required; every other
// zero field takes the default documented beside it.
type Options struct {
	// ERP is read and written by the re-checks.
	ERP ERP
	// Queue holds the entries to re-check.
	Queue Queue
	// Every is how long after a re-check that found a goods receipt still
	// missing the hold is checked again. Zero means DefaultEvery (1h).
	Every time.Duration
	// Interval is how often Run calls RunOnce. Zero means DefaultInterval
	// (30s).
	Interval time.Duration
	// Batch is the most entries one RunOnce claims. Zero means
	// DefaultBatch (50).
	Batch int
	// Now is the clock that decides which entries are due. Nil means
	// time.Now.
	Now func() time.Time
	// Logger receives a record per re-check. Nil means discard.
	Logger *slog.Logger
	// Observer is told each completed re-check's outcome. Nil means none.
	Observer Observer
}

// Scheduler re-checks held invoices and releases their holds once the goods
// have arrived. It is safe for concurrent use, and several Schedulers (in
// one process or in several replicas) may share a Queue that hands each
// entry to one claimer only, as RedisQueue does.
type Scheduler struct {
	erp      ERP
	queue    Queue
	every    time.Duration
	interval time.Duration
	batch    int
	now      func() time.Time
	log      *slog.Logger
	observer Observer
}

// New returns a Scheduler. It panics when opts.ERP or opts.Queue is nil,
// which is a programming error.
func New(opts Options) *Scheduler {
	if opts.ERP == nil || opts.Queue == nil {
		panic("recheck: Options.ERP and Options.Queue are required")
	}
	s := &Scheduler{
		erp:      opts.ERP,
		queue:    opts.Queue,
		every:    opts.Every,
		interval: opts.Interval,
		batch:    opts.Batch,
		now:      opts.Now,
		log:      opts.Logger,
		observer: opts.Observer,
	}
	if s.every <= 0 {
		s.every = DefaultEvery
	}
	if s.interval <= 0 {
		s.interval = DefaultInterval
	}
	if s.batch <= 0 {
		s.batch = DefaultBatch
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Report counts what one RunOnce did with the entries it claimed.
type Report struct {
	// Claimed is the number of entries taken from the queue.
	Claimed int
	// Released counts holds released because every goods receipt arrived.
	Released int
	// Waiting counts holds whose goods receipt is still missing; they are
	// back in the queue, due Every from now.
	Waiting int
	// Dropped counts entries removed for good: the invoice is no longer
	// held (posted or parked), or the ERP knows neither the invoice nor
	// the hold.
	Dropped int
	// Failed counts entries whose check could not be completed, for an
	// ERP failure or because ctx ended; they are back in the queue.
	Failed int
}

// outcome is the result of checking one entry.
type outcome int

const (
	released outcome = iota
	waiting
	dropped
	failed
)

// RunOnce claims the entries due now, at most Batch of them, and checks
// each: an invoice no longer held is dropped; one whose goods-receipt-based
// lines are all covered by uncancelled receipts has its hold released;
// otherwise the entry is re-added due Every from now with Checks increased.
// An ERP failure re-adds the entry due min(Every, 1m) from now and the run
// goes on with the others. Entries not yet checked when ctx ends are
// re-added unchanged. The error reports a failed claim or re-add; a
// re-added entry is written even after ctx has ended, so that a shutdown
// does not lose claimed entries.
func (s *Scheduler) RunOnce(ctx context.Context) (Report, error) {
	now := s.now()
	entries, claimErr := s.queue.Claim(ctx, now, s.batch)
	rep := Report{Claimed: len(entries)}
	var errs []error
	if claimErr != nil {
		errs = append(errs, claimErr)
	}
	for i, e := range entries {
		if ctx.Err() != nil {
			for _, rest := range entries[i:] {
				rep.Failed++
				if err := s.putBack(ctx, rest); err != nil {
					errs = append(errs, err)
				}
			}
			break
		}
		out, why, err := s.check(ctx, e)
		log := s.log.With("hold_id", e.HoldID, "invoice_id", e.InvoiceID, "checks", e.Checks)
		next := e
		switch out {
		case released:
			rep.Released++
			log.InfoContext(ctx, "recheck: released", "outcome", "released")
			s.observe(true)
			continue
		case dropped:
			rep.Dropped++
			// Without the invoice or the hold nothing can be re-checked, yet
			// the ERP may still block the invoice: a person has to look.
			level := slog.LevelInfo
			if strings.HasSuffix(why, "_not_found") {
				level = slog.LevelWarn
			}
			log.Log(ctx, level, "recheck: dropped", "outcome", "dropped", "reason", why)
			continue
		case waiting:
			rep.Waiting++
			next.RecheckAt, next.Checks = now.Add(s.every), e.Checks+1
			log.InfoContext(ctx, "recheck: goods receipt still missing", "outcome", "waiting", "reason", why, "recheck_at", next.RecheckAt)
			s.observe(false)
		case failed:
			rep.Failed++
			next.RecheckAt = now.Add(min(s.every, failureDelay))
			log.WarnContext(ctx, "recheck: failed", "outcome", "failed", "error", err, "recheck_at", next.RecheckAt)
		}
		if err := s.putBack(ctx, next); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func (s *Scheduler) observe(rel bool) {
	if s.observer != nil {
		s.observer.Rechecked(rel)
	}
}

// putBack re-adds e. It does not stop when ctx ends: the entry is out of
// the queue and would be lost.
func (s *Scheduler) putBack(ctx context.Context, e Entry) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), putBackTimeout)
	defer cancel()
	if err := s.queue.Add(actx, e); err != nil {
		s.log.ErrorContext(ctx, "recheck: entry lost: cannot re-add it", "hold_id", e.HoldID,
			"invoice_id", e.InvoiceID, "fiscal_year", e.FiscalYear, "recheck_at", e.RecheckAt, "error", err)
		return fmt.Errorf("recheck: re-add hold %s: %w", e.HoldID, err)
	}
	return nil
}

// check reads the invoice and its goods receipts and releases the hold when
// they cover it. why says, for waiting and dropped, what decided it.
func (s *Scheduler) check(ctx context.Context, e Entry) (out outcome, why string, err error) {
	inv, err := s.erp.Invoice(ctx, e.InvoiceID)
	var nf *erp.NotFoundError
	switch {
	case errors.As(err, &nf):
		return dropped, "invoice_not_found", nil
	case err != nil:
		return failed, "", err
	case inv.Status != erp.InvoiceHeld:
		return dropped, "invoice_" + string(inv.Status), nil
	}
	why, err = s.shortfall(ctx, inv)
	switch {
	case err != nil:
		return failed, "", err
	case why != "":
		return waiting, why, nil
	}
	fy := e.FiscalYear
	if fy == "" {
		fy = inv.FiscalYear
	}
	err = s.erp.ReleaseHold(ctx, erp.Hold{ID: e.HoldID, InvoiceID: e.InvoiceID, FiscalYear: fy})
	switch {
	case errors.As(err, &nf):
		return dropped, "hold_not_found", nil
	case err != nil:
		return failed, "", err
	}
	return released, "", nil
}

// shortfall returns "" when every goods-receipt-based purchase order item
// the invoice bills has received at least the quantity its lines invoice,
// or else describes the first item that has not. Lines billing the same
// item are added up. A purchase order or item the ERP does not know counts
// as not received: the hold stays for a person to resolve.
func (s *Scheduler) shortfall(ctx context.Context, inv erp.Invoice) (string, error) {
	type poItem struct{ po, item string }
	invoiced := map[poItem]decimal.Decimal{}
	var order []poItem
	for _, l := range inv.Lines {
		if l.POID == "" {
			continue
		}
		k := poItem{l.POID, l.POItem}
		if _, ok := invoiced[k]; !ok {
			order = append(order, k)
		}
		invoiced[k] = invoiced[k].Add(l.Quantity)
	}
	orders := map[string]erp.PurchaseOrder{}
	for _, k := range order {
		po, ok := orders[k.po]
		if !ok {
			var err error
			po, err = s.erp.PurchaseOrder(ctx, k.po)
			var nf *erp.NotFoundError
			if errors.As(err, &nf) {
				return fmt.Sprintf("purchase order %s not found", k.po), nil
			}
			if err != nil {
				return "", err
			}
			orders[k.po] = po
		}
		it, ok := po.Item(k.item)
		if !ok {
			return fmt.Sprintf("purchase order %s item %s not found", k.po, k.item), nil
		}
		if !it.GoodsReceiptBased {
			continue
		}
		receipts, err := s.erp.GoodsReceipts(ctx, k.po, k.item)
		if err != nil {
			return "", err
		}
		received := decimal.Zero
		for _, r := range receipts {
			received = received.Add(r.Quantity)
		}
		if received.LessThan(invoiced[k]) {
			return fmt.Sprintf("purchase order %s item %s: received %s of %s", k.po, k.item, received, invoiced[k]), nil
		}
	}
	return "", nil
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
				"waiting", rep.Waiting, "dropped", rep.Dropped, "failed", rep.Failed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
