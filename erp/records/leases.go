package records

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimInvoice claims the invoice's write lease at now. A live lease of
// another holder is answered from a read; otherwise one statement inserts
// the lease, or takes over one that lapsed, or leaves a holder's lease
// that came in between as it is, and returns the row as it then stands.
// Of concurrent claimers exactly one finds itself the holder, and every
// other one learns who holds it, with no moment between the write and the
// read in which the row could change.
func (s *sqlStore) ClaimInvoice(ctx context.Context, l InvoiceLease, now time.Time, lease time.Duration) (LeaseClaim, error) {
	now = normTime(now)
	until := normTime(now.Add(leaseOrDefault(lease)))
	var (
		holder string
		c      LeaseClaim
	)
	// A lease another call holds is only read: the calls that wait for it
	// look again and again, and must not write (a new row version on
	// PostgreSQL, the one writer on SQLite) each time.
	err := s.db.QueryRowContext(ctx, s.d.rebind(`SELECT holder, operation, lease_until FROM invoice_leases
		WHERE invoice_id = ?`), l.InvoiceID).Scan(&holder, &c.Operation, timeCol{&c.LeaseUntil})
	switch {
	case err == nil && holder != l.Holder && c.LeaseUntil.After(now):
		return c, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return LeaseClaim{}, opErr("claim invoice", err)
	}
	c, err = s.claimInvoice(ctx, s.w, l, now, until)
	return c, opErr("claim invoice", err)
}

// claimInvoice is ClaimInvoice's write on q, at now (normalised) for a
// lease until until: the one statement that inserts the lease, takes over
// one that lapsed, or leaves another holder's as it is.
func (s *sqlStore) claimInvoice(ctx context.Context, q querier, l InvoiceLease, now, until time.Time) (LeaseClaim, error) {
	var (
		holder    string
		takeovers int
		c         LeaseClaim
	)
	err := q.QueryRowContext(ctx, s.d.rebind(`INSERT INTO invoice_leases (invoice_id, holder, operation, lease_until)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (invoice_id) DO UPDATE SET
			holder = CASE WHEN invoice_leases.lease_until <= ? THEN excluded.holder ELSE invoice_leases.holder END,
			operation = CASE WHEN invoice_leases.lease_until <= ? THEN excluded.operation ELSE invoice_leases.operation END,
			takeovers = CASE WHEN invoice_leases.lease_until <= ? THEN invoice_leases.takeovers + 1 ELSE invoice_leases.takeovers END,
			lease_until = CASE WHEN invoice_leases.lease_until <= ? THEN excluded.lease_until ELSE invoice_leases.lease_until END
		RETURNING holder, operation, takeovers, lease_until`),
		l.InvoiceID, l.Holder, l.Operation, s.d.timeArg(until),
		s.d.timeArg(now), s.d.timeArg(now), s.d.timeArg(now), s.d.timeArg(now)).
		Scan(&holder, &c.Operation, &takeovers, timeCol{&c.LeaseUntil})
	if err != nil {
		return LeaseClaim{}, err
	}
	if holder == l.Holder {
		return LeaseClaim{Claimed: true, TakenOver: takeovers > 0}, nil
	}
	return c, nil
}

// ReleaseInvoice drops holder's lease of the invoice.
func (s *sqlStore) ReleaseInvoice(ctx context.Context, invoiceID, holder string) error {
	return opErr("release invoice", s.releaseInvoice(ctx, s.w, invoiceID, holder))
}

// releaseInvoice is ReleaseInvoice on q.
func (s *sqlStore) releaseInvoice(ctx context.Context, q querier, invoiceID, holder string) error {
	_, err := releaseInvoiceStmt(invoiceID, holder).exec(ctx, s, q)
	return err
}

func releaseInvoiceStmt(invoiceID, holder string) stmt {
	return stmt{"DELETE FROM invoice_leases WHERE invoice_id = ? AND holder = ?", []any{invoiceID, holder}}
}
