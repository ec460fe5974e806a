package api

import (
	"crypto/rand"
	"errors"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/erp/records"
)

// idempotency gives a write its digest and, when the call sends an
// idempotency key, claims the key in the idempotency store: the first
// answer to a key with the same arguments is replayed (Idempotent-Replayed),
// the key with other arguments is IDEMPOTENCY_KEY_REUSED. A write that
// acts on one invoice's state (post, hold) then takes the invoice's write
// lease, so that of concurrent writes of one invoice, on any replica, one
// runs at a time; the others wait their turn and then find the invoice as
// the first left it. A call that waits in vain, for its key or its
// invoice, is WRITE_IN_PROGRESS and does not run. A write that meets no
// other claims its key and its lease in one transaction. On the way back
// it settles the call in one transaction: the audit row the audit step
// composed, the answer kept for the key (or the key given up when the
// operation did not run or its answer is not a 2xx), and the lease
// released. Reads leave the step out.
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
		// An id of the wrong form takes no lease: the operation refuses it.
		var lease *records.InvoiceLease
		if o.invoiceLease && invoiceIDPattern.MatchString(invoiceID) {
			lease = &records.InvoiceLease{InvoiceID: invoiceID, Holder: rand.Text(), Operation: o.name}
		}
		claim, replay, err := s.idem.claim(r.Context(), s.idem.waitEnd(r.Context()), c.client.Name, key, o.name, c.digest, invoiceID, lease)
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
		// The call ends with its settlement, durable, before its answer
		// leaves: what it writes before may commit without the disk.
		c.r = r.WithContext(records.SettledLater(r.Context()))
		settled := false
		defer func() {
			// A panic on the way is a 5xx: the key is given up, the
			// lease released.
			if !settled {
				claim.settle(nil, nil)
			}
		}()
		resp := next(c)
		settled = true
		if !c.ran {
			claim.settle(nil, nil)
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
		kept := resp
		if resp.status < 200 || resp.status >= 300 {
			kept = nil
		}
		claim.settle(c.audit, kept)
		return resp
	}
}
