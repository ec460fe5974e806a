package records

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// WriteClaim is what a keyed write claims before it runs: its idempotency
// key and, when it acts on one invoice's state, the invoice's write lease.
type WriteClaim struct {
	Key        Key
	KeyOptions KeyOptions
	// Lease, when set, is claimed for LeaseFor once the key is claimed.
	Lease    *InvoiceLease
	LeaseFor time.Duration
}

// WriteClaimed is ClaimWrite's answer. Lease is ClaimInvoice's answer, and
// LeaseTried says the lease was tried: only when the key was claimed and
// the claim asked for a lease.
type WriteClaimed struct {
	Key        KeyClaim
	Lease      LeaseClaim
	LeaseTried bool
}

// Settlement is what a write leaves behind when it ends: its audit row,
// its key's answer (or the key given up), and its invoice's lease
// released. A nil part is left out.
type Settlement struct {
	Audit *AuditEntry
	Key   *KeySettlement
	// Lease names the lease to release: InvoiceID and Holder.
	Lease *InvoiceLease
}

// KeySettlement ends a key's claim: with Response kept until Expires, or,
// when Response is nil, given up as ReleaseKey does.
type KeySettlement struct {
	Client, Key string
	Response    *Response
	Expires     time.Time
}

// ClaimWrite claims c.Key as ClaimKey does and, when the key is claimed
// and c.Lease is set, the invoice's lease as ClaimInvoice does, in one
// transaction, whose commit does not wait for the disk (see inLazyTx). A
// lease another call holds leaves the key claimed; the caller waits for
// the lease with ClaimInvoice.
func (s *sqlStore) ClaimWrite(ctx context.Context, c WriteClaim, now time.Time) (WriteClaimed, error) {
	var out WriteClaimed
	err := s.inLazyTx(ctx, func(tx *sql.Tx) error {
		var err error
		if out.Key, err = s.claimKey(ctx, tx, c.Key, now, c.KeyOptions); err != nil {
			return err
		}
		if out.Key.State != KeyClaimed || c.Lease == nil {
			return nil
		}
		now := normTime(now)
		out.LeaseTried = true
		out.Lease, err = s.claimInvoice(ctx, tx, *c.Lease, now, normTime(now.Add(leaseOrDefault(c.LeaseFor))))
		return err
	})
	if err != nil {
		return WriteClaimed{}, opErr("claim write", err)
	}
	return out, nil
}

// Settle writes st's parts in one transaction. A key that is no longer in
// flight (its lease lapsed and another call took it over) does not hold
// the other parts back: they are committed, and Settle returns
// ErrNotFound for the key.
func (s *sqlStore) Settle(ctx context.Context, st Settlement) error {
	var keyErr error
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if st.Audit != nil {
			if err := s.appendAudit(ctx, tx, *st.Audit); err != nil {
				return err
			}
		}
		if k := st.Key; k != nil {
			var err error
			if k.Response == nil {
				err = s.releaseKey(ctx, tx, k.Client, k.Key)
			} else {
				err = s.completeKey(ctx, tx, k.Client, k.Key, *k.Response, k.Expires)
			}
			switch {
			case errors.Is(err, ErrNotFound):
				keyErr = err
			case err != nil:
				return err
			}
		}
		if l := st.Lease; l != nil {
			return s.releaseInvoice(ctx, tx, l.InvoiceID, l.Holder)
		}
		return nil
	})
	if err != nil {
		return opErr("settle write", err)
	}
	return keyErr
}
