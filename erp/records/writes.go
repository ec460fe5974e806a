package records

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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
	if s.d.claimNewKey {
		out, ok, err := s.claimNewKey(ctx, c, now)
		if err != nil {
			return WriteClaimed{}, opErr("claim write", err)
		}
		if ok {
			return out, nil
		}
	}
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

// claimNewKey claims c as ClaimWrite does when its key is new and under
// the cap, in one round trip: the function erpgate_claim_new_key of the
// PostgreSQL schema. ok false: the key has a row or the cap is reached,
// and nothing was claimed.
func (s *sqlStore) claimNewKey(ctx context.Context, c WriteClaim, now time.Time) (_ WriteClaimed, ok bool, _ error) {
	now = normTime(now)
	until := normTime(now.Add(leaseOrDefault(c.KeyOptions.Lease)))
	var invoice, holder, op sql.NullString
	var leaseUntil time.Time
	if c.Lease != nil {
		invoice = sql.NullString{String: c.Lease.InvoiceID, Valid: true}
		holder = sql.NullString{String: c.Lease.Holder, Valid: true}
		op = sql.NullString{String: c.Lease.Operation, Valid: true}
		leaseUntil = normTime(now.Add(leaseOrDefault(c.LeaseFor)))
	}
	var (
		claimed    bool
		gotHolder  sql.NullString
		gotOp      sql.NullString
		takeovers  sql.NullInt64
		gotLeaseTo time.Time
	)
	k := c.Key
	err := s.lazy.QueryRowContext(ctx, `SELECT claimed, holder, operation, takeovers, lease_until
		FROM erpgate_claim_new_key($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		k.Client, k.Key, k.Operation, k.Digest, s.d.timeArg(now), s.d.timeArg(until), c.KeyOptions.MaxPerClient,
		invoice, holder, op, s.d.timeArg(leaseUntil)).
		Scan(&claimed, &gotHolder, &gotOp, &takeovers, timeCol{&gotLeaseTo})
	if err != nil || !claimed {
		return WriteClaimed{}, false, err
	}
	out := WriteClaimed{Key: KeyClaim{State: KeyClaimed}}
	if c.Lease != nil {
		out.LeaseTried = true
		if gotHolder.String == c.Lease.Holder {
			out.Lease = LeaseClaim{Claimed: true, TakenOver: takeovers.Int64 > 0}
		} else {
			out.Lease = LeaseClaim{Operation: gotOp.String, LeaseUntil: gotLeaseTo}
		}
	}
	return out, true, nil
}

// Settle writes st's parts in one transaction. A key that is no longer in
// flight (its lease lapsed and another call took it over) does not hold
// the other parts back: they are committed, and Settle returns
// ErrNotFound for the key. On PostgreSQL the transaction is one statement,
// the parts joined in a WITH, so that it takes one round trip.
func (s *sqlStore) Settle(ctx context.Context, st Settlement) error {
	var parts []stmt
	if st.Audit != nil {
		parts = append(parts, s.appendAuditStmt(*st.Audit))
	}
	// The key's statement is last, so that the rows it changed can be
	// told apart.
	keyMustChange := false
	if st.Lease != nil {
		parts = append(parts, releaseInvoiceStmt(st.Lease.InvoiceID, st.Lease.Holder))
	}
	if k := st.Key; k != nil {
		if k.Response == nil {
			parts = append(parts, releaseKeyStmt(k.Client, k.Key))
		} else {
			p, err := s.completeKeyStmt(k.Client, k.Key, *k.Response, k.Expires)
			if err != nil {
				return opErr("settle write", err)
			}
			parts, keyMustChange = append(parts, p), true
		}
	}
	if len(parts) == 0 {
		return nil
	}
	var keyChanged int64
	var err error
	if s.d.writableWith {
		keyChanged, err = s.execJoined(ctx, parts)
	} else {
		err = s.inTx(ctx, func(tx *sql.Tx) error {
			for _, p := range parts {
				if keyChanged, err = p.exec(ctx, s, tx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return opErr("settle write", err)
	}
	if keyMustChange && keyChanged == 0 {
		return keyNotInFlight(st.Key.Client, st.Key.Key)
	}
	return nil
}

// execJoined runs parts as one statement, each a data-modifying WITH
// query, and returns the rows the last one changed.
func (s *sqlStore) execJoined(ctx context.Context, parts []stmt) (int64, error) {
	var b strings.Builder
	var args []any
	b.WriteString("WITH ")
	for i, p := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "p%d AS (%s RETURNING 1)", i, p.query)
		args = append(args, p.args...)
	}
	fmt.Fprintf(&b, " SELECT COUNT(*) FROM p%d", len(parts)-1)
	var n int64
	err := s.w.QueryRowContext(ctx, s.d.rebind(b.String()), args...).Scan(&n)
	return n, err
}
