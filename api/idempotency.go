package api

import (
	"context"
	"crypto/rand"
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
}

// idempotencyClaim is the right to answer a key first. Its methods are safe
// on a nil claim, which stands for a write without a key.
type idempotencyClaim struct {
	store       *idempotencyStore
	client, key string
	takenOver   bool
	ctx         context.Context
}

// claim returns either a claim on a new key, or the stored answer to replay.
// A key in flight is waited for until the call's wait ends (waitEnd); then
// the call is refused with refusal.InFlight, and the key is left to its
// call.
func (s *idempotencyStore) claim(ctx context.Context, until time.Time, client, key, operation, digest, invoiceID string) (*idempotencyClaim, *response, error) {
	k := records.Key{Client: client, Key: key, Operation: operation, Digest: digest}
	for {
		c, err := s.records.ClaimKey(ctx, k, s.now(), records.KeyOptions{Lease: s.lease, MaxPerClient: s.maxPerClient})
		if err != nil {
			return nil, nil, err
		}
		switch c.State {
		case records.KeyClaimed:
			if c.TakenOver {
				recordFrom(ctx).takenOver = true
			}
			return &idempotencyClaim{store: s, client: client, key: key, takenOver: c.TakenOver, ctx: ctx}, nil, nil
		case records.KeyReplay:
			return nil, &response{status: c.Response.Status, code: c.Response.Outcome,
				header: http.Header(c.Response.Header).Clone(), body: c.Response.Body}, nil
		case records.KeyReused:
			return nil, nil, refusal.KeyReused{}
		case records.KeyCapReached:
			wait := int(math.Ceil(s.ttl.Seconds()))
			return nil, nil, refusal.RateLimited{Reason: refusal.RateKeysCap, RetryAfter: wait, Cap: s.maxPerClient}
		}
		// In flight: wait for the first call's answer.
		if !time.Now().Before(until) {
			return nil, nil, refusal.InFlight{Reason: refusal.InFlightKey, InvoiceID: invoiceID, RetryAfter: s.retryAfter(c.LeaseUntil)}
		}
		if err := pause(ctx, until); err != nil {
			return nil, nil, err
		}
	}
}

// leaseInvoice takes the invoice's write lease for a call of operation,
// waiting while another call holds it, until the call's wait ends
// (waitEnd); then the call is refused with refusal.InFlight. The lease lasts as long as a
// key's, so that only a call whose gateway died loses it. release ends it;
// takenOver says it lapsed unreleased before.
func (s *idempotencyStore) leaseInvoice(ctx context.Context, until time.Time, invoiceID, operation string) (release func() error, takenOver bool, err error) {
	l := records.InvoiceLease{InvoiceID: invoiceID, Holder: rand.Text(), Operation: operation}
	for {
		c, err := s.records.ClaimInvoice(ctx, l, s.now(), s.lease)
		if err != nil {
			return nil, false, err
		}
		if c.Claimed {
			return func() error {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				return s.records.ReleaseInvoice(ctx, l.InvoiceID, l.Holder)
			}, c.TakenOver, nil
		}
		if !time.Now().Before(until) {
			return nil, false, refusal.InFlight{Reason: refusal.InFlightInvoice, InvoiceID: invoiceID,
				Operation: c.Operation, RetryAfter: s.retryAfter(c.LeaseUntil)}
		}
		if err := pause(ctx, until); err != nil {
			return nil, false, err
		}
	}
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

// complete ends the claim, keeping resp for replay when keep is set. The
// answer is written even when the request's context has ended: the call ran.
func (c *idempotencyClaim) complete(resp *response, keep bool) error {
	if c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 10*time.Second)
	defer cancel()
	if !keep {
		return c.store.records.ReleaseKey(ctx, c.client, c.key)
	}
	return c.store.records.CompleteKey(ctx, c.client, c.key,
		records.Response{Status: resp.status, Outcome: resp.code, Header: resp.header.Clone(), Body: resp.body},
		c.store.now().Add(c.store.ttl))
}

// release gives the key up without an answer, for a call refused before it
// ran.
func (c *idempotencyClaim) release() { _ = c.complete(nil, false) }

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
