package records

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimInvoice claims the invoice's write lease at now. Each statement is
// conditional on its own (a new row, or a lapsed one), so that of
// concurrent claimers exactly one changes the row; the others read who
// holds it. A row released between the write and the read sends the
// claim round again.
func (s *sqlStore) ClaimInvoice(ctx context.Context, l InvoiceLease, now time.Time, lease time.Duration) (LeaseClaim, error) {
	now = normTime(now)
	until := normTime(now.Add(leaseOrDefault(lease)))
	for range claimAttempts {
		won, err := s.exec(ctx, s.w, `INSERT INTO invoice_leases (invoice_id, holder, operation, lease_until)
			VALUES (?, ?, ?, ?) ON CONFLICT (invoice_id) DO NOTHING`,
			l.InvoiceID, l.Holder, l.Operation, s.d.timeArg(until))
		if err != nil {
			return LeaseClaim{}, opErr("claim invoice", err)
		}
		if won == 1 {
			return LeaseClaim{Claimed: true}, nil
		}
		won, err = s.exec(ctx, s.w, `UPDATE invoice_leases SET holder = ?, operation = ?, lease_until = ?
			WHERE invoice_id = ? AND lease_until <= ?`,
			l.Holder, l.Operation, s.d.timeArg(until), l.InvoiceID, s.d.timeArg(now))
		if err != nil {
			return LeaseClaim{}, opErr("claim invoice", err)
		}
		if won == 1 {
			return LeaseClaim{Claimed: true, TakenOver: true}, nil
		}
		var c LeaseClaim
		err = s.w.QueryRowContext(ctx, s.d.rebind(`SELECT operation, lease_until FROM invoice_leases
			WHERE invoice_id = ?`), l.InvoiceID).Scan(&c.Operation, timeCol{&c.LeaseUntil})
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return LeaseClaim{}, opErr("claim invoice", err)
		}
		return c, nil
	}
	return LeaseClaim{}, opErr("claim invoice", errors.New("the lease kept changing under the claim"))
}

// ReleaseInvoice drops holder's lease of the invoice.
func (s *sqlStore) ReleaseInvoice(ctx context.Context, invoiceID, holder string) error {
	_, err := s.exec(ctx, s.w, "DELETE FROM invoice_leases WHERE invoice_id = ? AND holder = ?", invoiceID, holder)
	return opErr("release invoice", err)
}
