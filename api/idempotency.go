package api

import (
	"context"
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

// keyPoll is how often a call that found its key in flight looks again.
const keyPoll = 50 * time.Millisecond

// idempotencyStore keeps the first answer to each write's idempotency key in
// the gateway's records, per client, so that the same key with the same
// arguments replays it (also after a restart, and on another replica) and
// the same key with other arguments is refused. A second call that arrives
// while the first is still running waits for it.
type idempotencyStore struct {
	records      records.Store
	ttl          time.Duration
	lease        time.Duration
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
func (s *idempotencyStore) claim(ctx context.Context, client, key, operation, digest string) (*idempotencyClaim, *response, error) {
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
		t := time.NewTimer(keyPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		}
	}
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
	c.header = resp.header.Clone()
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
