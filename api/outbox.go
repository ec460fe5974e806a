package api

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
)

// Outbox delivers the webhook notifications the records queue with the
// record they tell of: a handover to a ticketing or chat system, a pending
// approval to its approvers, a released hold and a decided approval to the
// agent's platform, so that the run waiting on the invoice goes on. Delivery is at least once: each POST carries
// the delivery's stable id in Webhook-Id (and Idempotency-Key), so that a
// receiver drops repeats. A network error, a 429 or any non-2xx is tried
// again with exponential backoff and jitter, from 5s up to 1h, for as long
// as it takes. Several gateways may share one database: each delivery is
// claimed by one of them at a time.
type Outbox struct {
	// Records holds the deliveries. Required.
	Records records.Store
	// HandoverURL receives handovers; ApprovalURL pending approvals;
	// HoldURL released holds and decided approvals.
	HandoverURL, ApprovalURL, HoldURL string
	// Client makes the requests. Default: a client with a 10s timeout.
	Client *http.Client
	// Interval is how often Run looks for due deliveries. Default 2s.
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives a line per failed delivery. Default: discard.
	Logger *slog.Logger

	kickOnce sync.Once
	kick     chan struct{}
}

// Kick makes Run look for due deliveries now instead of at its next tick:
// a decision that released a hold is told within moments. It never blocks.
func (o *Outbox) Kick() {
	select {
	case o.kicks() <- struct{}{}:
	default:
	}
}

func (o *Outbox) kicks() chan struct{} {
	o.kickOnce.Do(func() { o.kick = make(chan struct{}, 1) })
	return o.kick
}

// Backoff bounds of a failing delivery.
const (
	outboxFirstRetry = 5 * time.Second
	outboxMaxRetry   = time.Hour
	outboxLease      = time.Minute
	outboxBatch      = 20
)

// Run delivers due notifications every Interval until ctx ends.
func (o *Outbox) Run(ctx context.Context) {
	t := time.NewTicker(cmp.Or(o.Interval, 2*time.Second))
	defer t.Stop()
	for {
		if _, err := o.RunOnce(ctx); err != nil && ctx.Err() == nil {
			o.log().ErrorContext(ctx, "outbox: run", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.kicks():
		}
	}
}

// RunOnce claims the deliveries due now and sends each once. It returns how
// many were delivered.
func (o *Outbox) RunOnce(ctx context.Context) (int, error) {
	now := o.now()
	due, err := o.Records.ClaimDeliveries(ctx, now, outboxBatch, outboxLease)
	if err != nil {
		return 0, fmt.Errorf("outbox: claim deliveries: %w", err)
	}
	delivered := 0
	for _, d := range due {
		err := o.deliver(ctx, d)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err == nil {
			delivered++
			err = o.Records.DeliveryDone(wctx, d.ID, o.now())
		} else {
			next := o.now().Add(retryDelay(d.Attempts))
			o.log().WarnContext(ctx, "outbox: delivery failed", "delivery_id", d.ID, "kind", d.Kind,
				"record_id", d.RecordID, "attempts", d.Attempts+1, "next_at", next, "error", err)
			err = o.Records.DeliveryFailed(wctx, d.ID, next, err.Error())
		}
		cancel()
		if err != nil {
			return delivered, fmt.Errorf("outbox: delivery %s: %w", d.ID, err)
		}
	}
	return delivered, nil
}

// retryDelay is the wait after the attempts-th failure: doubling from
// outboxFirstRetry, capped at outboxMaxRetry, with up to a fifth of jitter.
func retryDelay(attempts int) time.Duration {
	d := outboxFirstRetry << min(attempts, 20)
	if d <= 0 || d > outboxMaxRetry {
		d = outboxMaxRetry
	}
	return d - time.Duration(rand.Int64N(int64(d/5)+1))
}

// deliver POSTs one notification.
func (o *Outbox) deliver(ctx context.Context, d records.Delivery) error {
	url, payload, err := o.payload(ctx, d)
	if err != nil {
		return err
	}
	if url == "" {
		return nil
	}
	body, err := marshal(payload)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Webhook-Id", d.ID)
	req.Header.Set("Idempotency-Key", d.ID)
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook answered %d", resp.StatusCode)
	}
	return nil
}

// payload reads the record a delivery tells of and renders what its
// webhook receives.
func (o *Outbox) payload(ctx context.Context, d records.Delivery) (string, any, error) {
	switch d.Kind {
	case records.DeliveryHandover:
		h, err := o.Records.Handover(ctx, d.RecordID)
		if err != nil {
			return "", nil, err
		}
		return o.HandoverURL, handoverEvent{DeliveryID: d.ID, Event: d.Kind, Handover: toHandoverRecord(erp.HandoverFrom(h))}, nil
	case records.DeliveryApproval:
		a, err := o.Records.Approval(ctx, d.RecordID)
		if err != nil {
			return "", nil, err
		}
		return o.ApprovalURL, approvalEvent{DeliveryID: d.ID, Event: d.Kind, Approval: toApproval(erp.ApprovalFrom(a))}, nil
	case records.DeliveryApprovalDecided:
		a, err := o.Records.Approval(ctx, d.RecordID)
		if err != nil {
			return "", nil, err
		}
		c, version, err := o.caseAt(ctx, a.InvoiceID, "approval.decided", a.ID)
		if err != nil {
			return "", nil, err
		}
		return o.HoldURL, approvalEvent{DeliveryID: d.ID, Event: d.Kind, Approval: toApproval(erp.ApprovalFrom(a)),
			InvoiceID: a.InvoiceID, CaseVersion: version, Next: new(nextFor(c))}, nil
	case records.DeliveryHoldReleased:
		h, err := o.Records.Hold(ctx, d.RecordID)
		if err != nil {
			return "", nil, err
		}
		c, version, err := o.caseAt(ctx, h.InvoiceID, "hold.released", h.ID)
		if err != nil {
			return "", nil, err
		}
		arrived := ""
		if evs, err := o.Records.HoldEvents(ctx, h.ID); err == nil {
			for _, ev := range evs {
				if ev.Kind == holdReleased {
					arrived = ev.Note
				}
			}
		}
		return o.HoldURL, holdReleasedEvent{DeliveryID: d.ID, Event: d.Kind, InvoiceID: h.InvoiceID, HoldID: h.ID,
			CaseVersion: version, RunID: h.RunID, Arrived: arrived, ReleasedAt: dateTime(h.ReleasedAt), Next: nextFor(c)}, nil
	}
	return "", nil, fmt.Errorf("unknown delivery kind %q", d.Kind)
}

// caseAt reads the invoice's case with its events, and the version the
// event of kind about ref made (the case's own version when none is found).
func (o *Outbox) caseAt(ctx context.Context, invoiceID, kind, ref string) (erp.Case, int64, error) {
	rc, err := o.Records.Case(ctx, invoiceID)
	if err != nil {
		return erp.Case{}, 0, err
	}
	c := erp.Case{InvoiceID: rc.InvoiceID, State: rc.State, Version: rc.Version, HoldID: rc.HoldID,
		ApprovalID: rc.ApprovalID, ApprovalStatus: erp.ApprovalStatus(rc.ApprovalStatus), HandoverID: rc.HandoverID,
		HandoverStatus: rc.HandoverStatus, Posted: rc.Posted}
	version := rc.Version
	evs, err := o.Records.CaseEvents(ctx, invoiceID, 1000)
	if err != nil {
		return erp.Case{}, 0, err
	}
	for _, ev := range evs {
		if ev.Kind == kind && ev.Ref == ref {
			version = ev.Version
		}
	}
	return c, version, nil
}

func (o *Outbox) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Outbox) log() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// handoverEvent is what a handover webhook receives.
type handoverEvent struct {
	DeliveryID string         `json:"delivery_id"`
	Event      string         `json:"event"`
	Handover   handoverRecord `json:"handover"`
}

// approvalEvent is what an approval webhook receives: a pending approval
// for its approvers, or a decided one (with its case) for the agent's
// platform.
type approvalEvent struct {
	DeliveryID  string           `json:"delivery_id"`
	Event       string           `json:"event"`
	Approval    approvalResponse `json:"approval"`
	InvoiceID   string           `json:"invoice_id,omitempty"`
	CaseVersion int64            `json:"case_version,omitempty"`
	Next        *caseNext        `json:"next,omitempty"`
}

// holdReleasedEvent is what the hold webhook receives when a hold is
// released: the invoice, the case version the release made, the run that
// placed the hold, what arrived, and the call that moves the invoice on.
type holdReleasedEvent struct {
	DeliveryID  string   `json:"delivery_id"`
	Event       string   `json:"event"`
	InvoiceID   string   `json:"invoice_id"`
	HoldID      string   `json:"hold_id"`
	CaseVersion int64    `json:"case_version"`
	RunID       string   `json:"run_id,omitempty"`
	Arrived     string   `json:"arrived"`
	ReleasedAt  string   `json:"released_at"`
	Next        caseNext `json:"next"`
}

// SweepKeys drops expired idempotency answers every interval until ctx
// ends.
func SweepKeys(ctx context.Context, store records.Store, interval time.Duration, now func() time.Time, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := store.DeleteExpiredKeys(ctx, now()); err != nil && ctx.Err() == nil {
			log.ErrorContext(ctx, "idempotency keys: sweep", "error", err)
		} else if n > 0 {
			log.InfoContext(ctx, "idempotency keys: expired answers dropped", "count", n)
		}
	}
}
