package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
)

// DefaultKeyLease is how long a call holds its idempotency key in flight
// before another call may take it over: longer than any call can run, so
// that only a call whose gateway died loses its key.
const DefaultKeyLease = 2 * time.Minute

// keyPoll is how often a call that found its key or its invoice in flight
// looks again.
const keyPoll = 50 * time.Millisecond

// DefaultWriteWait is how long a write waits for the call in flight before
// it, with its idempotency key or on its invoice, when Options leaves
// WriteWait zero: longer than one ERP call with its retries takes, so that
// a live call ends within it.
const DefaultWriteWait = 15 * time.Second

// maxInFlightRetry caps the retry_after_s of WRITE_IN_PROGRESS, in
// seconds: a call still in flight after the wait is slow or dead, and the
// caller should look again soon rather than at the end of its lease.
const maxInFlightRetry = 5

// idempotencyStore keeps the first answer to each write's idempotency key in
// the gateway's records, per client, so that the same key with the same
// arguments replays it (also after a restart, and on another replica) and
// the same key with other arguments is refused. A second call that arrives
// while the first is still running waits for it, for a while. It also
// holds the write leases of invoices (see leaseInvoice).
type idempotencyStore struct {
	records      records.Store
	ttl          time.Duration
	lease        time.Duration
	wait         time.Duration
	maxPerClient int
	now          func() time.Time
	log          *slog.Logger
}

// writeClaim is what one write holds while it runs: the right to answer
// its idempotency key first (none without a key) and its invoice's write
// lease (none for a write that takes no lease). settle ends both.
type writeClaim struct {
	store       *idempotencyStore
	client, key string // key "": the write has none
	lease       *records.InvoiceLease
	ctx         context.Context
}

// claim claims a write's key, when it has one, and its invoice's lease,
// when lease is set, waiting for a call in flight with either until the
// call's wait ends (waitEnd); then the call is refused with
// refusal.InFlight, and what it waited for is left to its call. A key that
// ran before returns its stored answer to replay instead. A write that
// meets no other claims both in one transaction.
func (s *idempotencyStore) claim(ctx context.Context, until time.Time, client, key, operation, digest, invoiceID string, lease *records.InvoiceLease) (*writeClaim, *response, error) {
	w := &writeClaim{store: s, client: client, key: key, ctx: ctx}
	leased := false
	if key != "" {
		c := records.WriteClaim{Key: records.Key{Client: client, Key: key, Operation: operation, Digest: digest},
			KeyOptions: records.KeyOptions{Lease: s.lease, MaxPerClient: s.maxPerClient}, Lease: lease, LeaseFor: s.lease}
		var replay *response
		var err error
		if leased, replay, err = s.claimKey(ctx, until, c, invoiceID); err != nil || replay != nil {
			return nil, replay, err
		}
	}
	if lease != nil && !leased {
		if err := s.leaseInvoice(ctx, until, *lease); err != nil {
			w.settle(nil, nil)
			return nil, nil, err
		}
	}
	w.lease = lease
	return w, nil, nil
}

// claimKey claims c's key, and with it c's lease when it is free; leased
// says it was. A key in flight is waited for until the call's wait ends.
func (s *idempotencyStore) claimKey(ctx context.Context, until time.Time, c records.WriteClaim, invoiceID string) (leased bool, replay *response, err error) {
	for {
		got, err := s.records.ClaimWrite(ctx, c, s.now())
		if err != nil {
			return false, nil, err
		}
		switch got.Key.State {
		case records.KeyClaimed:
			if got.Key.TakenOver {
				recordFrom(ctx).takenOver = true
			}
			if got.Lease.TakenOver {
				s.leaseTakenOver(ctx, c.Lease)
			}
			return got.Lease.Claimed, nil, nil
		case records.KeyReplay:
			return false, &response{status: got.Key.Response.Status, code: got.Key.Response.Outcome,
				header: http.Header(got.Key.Response.Header).Clone(), body: got.Key.Response.Body}, nil
		case records.KeyReused:
			return false, nil, refusal.KeyReused{}
		case records.KeyCapReached:
			wait := int(math.Ceil(s.ttl.Seconds()))
			return false, nil, refusal.RateLimited{Reason: refusal.RateKeysCap, RetryAfter: wait, Cap: s.maxPerClient}
		}
		// In flight: wait for the first call's answer.
		if !time.Now().Before(until) {
			return false, nil, refusal.InFlight{Reason: refusal.InFlightKey, InvoiceID: invoiceID, RetryAfter: s.retryAfter(got.Key.LeaseUntil)}
		}
		if err := pause(ctx, until); err != nil {
			return false, nil, err
		}
	}
}

// leaseInvoice takes the invoice's write lease l, waiting while another
// call holds it, until the call's wait ends (waitEnd); then the call is
// refused with refusal.InFlight. The lease lasts as long as a key's, so
// that only a call whose gateway died loses it.
func (s *idempotencyStore) leaseInvoice(ctx context.Context, until time.Time, l records.InvoiceLease) error {
	for {
		c, err := s.records.ClaimInvoice(ctx, l, s.now(), s.lease)
		if err != nil {
			return err
		}
		if c.Claimed {
			if c.TakenOver {
				s.leaseTakenOver(ctx, &l)
			}
			return nil
		}
		if !time.Now().Before(until) {
			return refusal.InFlight{Reason: refusal.InFlightInvoice, InvoiceID: l.InvoiceID,
				Operation: c.Operation, RetryAfter: s.retryAfter(c.LeaseUntil)}
		}
		if err := pause(ctx, until); err != nil {
			return err
		}
	}
}

// leaseTakenOver logs a lease that lapsed unreleased: the call before
// never ended, as when its gateway died.
func (s *idempotencyStore) leaseTakenOver(ctx context.Context, l *records.InvoiceLease) {
	s.log.WarnContext(ctx, "invoice write lease taken over from a call that never ended",
		"request_id", RequestIDFromContext(ctx), "operation", l.Operation, "invoice_id", l.InvoiceID)
}

// waitEnd is when a call stops waiting for others, for its key and its
// invoice together: after the store's wait, and one poll before the
// request's deadline, so that the refusal still reaches the caller.
func (s *idempotencyStore) waitEnd(ctx context.Context) time.Time {
	until := time.Now().Add(s.wait)
	if d, ok := ctx.Deadline(); ok && d.Add(-keyPoll).Before(until) {
		until = d.Add(-keyPoll)
	}
	return until
}

// pause waits one poll, or less when the wait ends sooner; it returns the
// context's error when the request ends first.
func pause(ctx context.Context, until time.Time) error {
	d := min(keyPoll, time.Until(until))
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// retryAfter is the retry_after_s of a call refused while another holds
// what it waits for until leaseUntil: the lease's rest, at least 1 and at
// most maxInFlightRetry seconds.
func (s *idempotencyStore) retryAfter(leaseUntil time.Time) int {
	secs := int(math.Ceil(leaseUntil.Sub(s.now()).Seconds()))
	return max(1, min(secs, maxInFlightRetry))
}

// settle ends the claim in one transaction: it writes the call's audit
// row (nil: none, for a call that did not run), keeps resp as the key's
// answer (nil: the key is given up) and releases the invoice's lease. It
// is written even when the request's context has ended: the call ran.
// When the transaction fails, each part is tried on its own, so that one
// failing part does not take the others with it.
func (w *writeClaim) settle(audit *records.AuditEntry, resp *response) {
	if w == nil || audit == nil && w.key == "" && w.lease == nil {
		return
	}
	s := w.store
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 10*time.Second)
	defer cancel()
	st := records.Settlement{Audit: audit, Lease: w.lease}
	if w.key != "" {
		st.Key = &records.KeySettlement{Client: w.client, Key: w.key}
		if resp != nil {
			st.Key.Response = &records.Response{Status: resp.status, Outcome: resp.code, Header: resp.header.Clone(), Body: resp.body}
			st.Key.Expires = s.now().Add(s.ttl)
		}
	}
	err := s.records.Settle(ctx, st)
	switch {
	case err == nil:
		return
	case errors.Is(err, records.ErrNotFound):
		w.settleFailed(ctx, "idempotency key answer not kept", err)
		return
	}
	w.settleFailed(ctx, "write not settled in one transaction; settling each part on its own", err)
	if audit != nil {
		if err := s.records.AppendAudit(ctx, *audit); err != nil {
			w.settleFailed(ctx, "audit row not written", err)
		}
	}
	if k := st.Key; k != nil {
		var err error
		if k.Response != nil {
			err = s.records.CompleteKey(ctx, k.Client, k.Key, *k.Response, k.Expires)
		} else {
			err = s.records.ReleaseKey(ctx, k.Client, k.Key)
		}
		if err != nil {
			w.settleFailed(ctx, "idempotency key answer not kept", err)
		}
	}
	if l := w.lease; l != nil {
		if err := s.records.ReleaseInvoice(ctx, l.InvoiceID, l.Holder); err != nil {
			w.settleFailed(ctx, "invoice write lease not released", err)
		}
	}
}

func (w *writeClaim) settleFailed(ctx context.Context, msg string, err error) {
	attrs := []any{"request_id", RequestIDFromContext(w.ctx), "error", err}
	if w.lease != nil {
		attrs = append(attrs, "operation", w.lease.Operation, "invoice_id", w.lease.InvoiceID)
	}
	w.store.log.ErrorContext(ctx, msg, attrs...)
}

func (resp *response) clone() *response {
	if resp == nil {
		return nil
	}
	c := *resp
	c.header, c.shared = resp.header.Clone(), false
	if c.header == nil {
		c.header = http.Header{}
	}
	c.body = append([]byte(nil), resp.body...)
	return &c
}

// dedupeOf names the record a write creates: by the client's idempotency
// key when it sent one, else by the call's arguments and run, so that a
// retry of the same call finds the record the first try made instead of
// making a second.
func dedupeOf(r *http.Request, o operation) string {
	rec := recordFrom(r.Context())
	if rec.key != "" {
		return erp.Digest("key", rec.client, o.name, rec.key)
	}
	return erp.Digest("args", rec.client, o.name, rec.run, rec.digest)
}

// repeatabilityOf identifies a posting call for the ERP: derived from the
// client, its idempotency key and the arguments, so that no other call,
// client or argument set can share it; empty without a key.
func repeatabilityOf(r *http.Request) string {
	rec := recordFrom(r.Context())
	if rec.key == "" {
		return ""
	}
	return erp.Digest("post", rec.client, rec.key, rec.digest)
}
