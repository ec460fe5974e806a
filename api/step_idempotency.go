package api

import (
	"errors"

	"github.com/erpgate/erpgate/api/refusal"
)

// idempotency gives a write its digest and, when the call sends an
// idempotency key, claims the key in the idempotency store: the first
// answer to a key with the same arguments is replayed (Idempotent-Replayed),
// the key with other arguments is IDEMPOTENCY_KEY_REUSED. A write that
// acts on one invoice's state (post, hold) then takes the invoice's write
// lease, so that of concurrent writes of one invoice, on any replica, one
// runs at a time; the others wait their turn and then find the invoice as
// the first left it. A call that waits in vain, for its key or its
// invoice, is WRITE_IN_PROGRESS and does not run. On the way back it keeps
// the answer for the key, or gives the key up when the operation did not
// run or its answer is a 5xx. Reads leave the step out.
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
		invoiceID := c.args.invoiceID(r)
		until := s.idem.waitEnd(r.Context())
		var claim *idempotencyClaim
		if key != "" {
			var replay *response
			claim, replay, err = s.idem.claim(r.Context(), until, c.client.Name, key, o.name, c.digest, invoiceID)
			if err != nil {
				if errors.As(err, new(refusal.KeyReused)) {
					s.metrics.keyReuse.WithLabelValues(o.name).Inc()
				}
				return s.failure(r, err, c.record)
			}
			if replay != nil {
				s.metrics.replays.WithLabelValues(o.name).Inc()
				replay.setHeader("Idempotent-Replayed", "true")
				return replay
			}
		}
		// An id of the wrong form takes no lease: the operation refuses it.
		if o.invoiceLease && invoiceIDPattern.MatchString(invoiceID) {
			release, takenOver, err := s.idem.leaseInvoice(r.Context(), until, invoiceID, o.name)
			if err != nil {
				claim.release()
				return s.failure(r, err, c.record)
			}
			if takenOver {
				s.log.WarnContext(r.Context(), "invoice write lease taken over from a call that never ended",
					"request_id", RequestIDFromContext(r.Context()), "operation", o.name, "invoice_id", invoiceID)
			}
			defer func() {
				if err := release(); err != nil {
					s.log.ErrorContext(r.Context(), "invoice write lease not released", "request_id", RequestIDFromContext(r.Context()),
						"operation", o.name, "invoice_id", invoiceID, "error", err)
				}
			}()
		}
		resp := next(c)
		if !c.ran {
			claim.release()
			return resp
		}
		// Only an answer that wrote or settled something (2xx) is kept. A
		// refusal changed nothing, and what it depends on may change: a post
		// refused with APPROVAL_MISSING must post with the same key once the
		// approval is given, and a body refused for a misspelt field must be
		// accepted with the same key once it is fixed. A 5xx is not kept
		// either: the same key may try again. A record the call created is
		// found again by its dedupe key, and a posting is settled by reading
		// the invoice, so the second try does not write twice.
		keep := resp.status >= 200 && resp.status < 300
		if err := claim.complete(resp, keep); err != nil {
			s.log.ErrorContext(r.Context(), "idempotency key answer not kept", "request_id", RequestIDFromContext(r.Context()),
				"operation", o.name, "error", err)
		}
		return resp
	}
}
