package api

import (
	"errors"

	"github.com/erpgate/erpgate/api/refusal"
)

// idempotency gives a write its digest and, when the call sends an
// idempotency key, claims the key in the idempotency store: the first
// answer to a key with the same arguments is replayed (Idempotent-Replayed),
// the key with other arguments is IDEMPOTENCY_KEY_REUSED. On the way back
// it keeps the answer for the key, or gives the key up when the operation
// did not run or its answer is a 5xx. Reads leave the step out.
func (s *Server) idempotency(o operation, next callHandler) callHandler {
	if !o.write {
		return next
	}
	return func(c *operationCall) *response {
		r := c.r
		key, err := idempotencyKey(r, c.args)
		if err != nil {
			return s.failure(r, err, c.record)
		}
		// Every write's digest names its record when it has no key, so
		// that a retry of the same call never makes a second record.
		c.digest = c.args.digest(o.name, r)
		c.record.key, c.record.digest = key, c.digest
		if key == "" {
			return next(c)
		}
		claim, replay, err := s.idem.claim(r.Context(), c.client.Name, key, o.name, c.digest)
		if err != nil {
			if errors.As(err, new(refusal.KeyReused)) {
				s.metrics.keyReuse.WithLabelValues(o.name).Inc()
			}
			return s.failure(r, err, c.record)
		}
		if replay != nil {
			s.metrics.replays.WithLabelValues(o.name).Inc()
			replay.header.Set("Idempotent-Replayed", "true")
			return replay
		}
		resp := next(c)
		if !c.ran {
			claim.release()
			return resp
		}
		// A 5xx is not kept: the same key may try again. A record the call
		// created is found again by its dedupe key, and a posting is settled
		// by reading the invoice, so the second try does not write twice.
		if err := claim.complete(resp, resp.status < 500); err != nil {
			s.log.ErrorContext(r.Context(), "idempotency key answer not kept", "request_id", RequestIDFromContext(r.Context()),
				"operation", o.name, "error", err)
		}
		return resp
	}
}
