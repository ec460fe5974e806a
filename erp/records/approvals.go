package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

const approvalCols = `id, invoice_id, fiscal_year, company_code, status, approver, proposed_action,
	justification, amount, currency, requested_by, requested_at, decided_by, decision_reason,
	decided_at, dedupe`

func scanApproval(sc scanner) (Approval, error) {
	var a Approval
	var id int64
	err := sc.Scan(&id, &a.InvoiceID, &a.FiscalYear, &a.CompanyCode, &a.Status, &a.Approver,
		&a.ProposedAction, &a.Justification, &a.Amount, &a.Currency, &a.RequestedBy,
		timeCol{&a.RequestedAt}, &a.DecidedBy, &a.DecisionReason, timeCol{&a.DecidedAt}, &a.Dedupe)
	a.ID = approvalIDs.format(id)
	return a, err
}

// CreateApproval stores a with a new id, or returns the approval with
// a.Dedupe; with notify a new approval queues a DeliveryApproval in the same
// transaction.
func (s *sqlStore) CreateApproval(ctx context.Context, a Approval, notify bool) (Approval, bool, error) {
	if a.Status == "" {
		a.Status = ApprovalPending
	}
	a.RequestedAt = nowIfZero(a.RequestedAt)
	a.DecidedAt = normTime(a.DecidedAt)
	created := false
	// Without a delivery to queue, the record is one insert (or, for a
	// record made before, the read of it) and needs no transaction.
	err := s.inTxFor(ctx, notify, func(tx querier) error {
		id, ok, err := s.insertDeduped(ctx, tx, `INSERT INTO approvals (invoice_id, fiscal_year,
			company_code, status, approver, proposed_action, justification, amount, currency,
			requested_by, requested_at, decided_by, decision_reason, decided_at, dedupe)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (dedupe) WHERE dedupe <> '' DO NOTHING RETURNING id`,
			a.InvoiceID, a.FiscalYear, a.CompanyCode, a.Status, a.Approver, a.ProposedAction,
			a.Justification, a.Amount, a.Currency, a.RequestedBy, s.d.timeArg(a.RequestedAt),
			a.DecidedBy, a.DecisionReason, s.d.timeArg(a.DecidedAt), a.Dedupe)
		if err != nil {
			return err
		}
		if !ok {
			a, err = scanApproval(tx.QueryRowContext(ctx,
				s.d.rebind("SELECT "+approvalCols+" FROM approvals WHERE dedupe = ?"), a.Dedupe))
			return err
		}
		a.ID, created = approvalIDs.format(id), true
		if notify {
			return s.queueDelivery(ctx, tx, DeliveryApproval, a.ID, a.RequestedAt)
		}
		return nil
	})
	if err != nil {
		return Approval{}, false, opErr("create approval", err)
	}
	return a, created, nil
}

// Approval returns the approval or ErrNotFound.
func (s *sqlStore) Approval(ctx context.Context, id string) (Approval, error) {
	n, err := approvalIDs.parse(id)
	if err != nil {
		return Approval{}, err
	}
	a, err := scanApproval(s.db.QueryRowContext(ctx, s.d.rebind("SELECT "+approvalCols+" FROM approvals WHERE id = ?"), n))
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, notFound("approval", id)
	}
	if err != nil {
		return Approval{}, opErr("read approval", err)
	}
	return a, nil
}

// DecideApproval decides a pending approval in one conditional update; when
// that changes nothing, the approval as it is tells why.
func (s *sqlStore) DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (Approval, error) {
	if status != ApprovalApproved && status != ApprovalRejected {
		return Approval{}, fmt.Errorf("records: decide approval: status %q is not a decision", status)
	}
	n, err := approvalIDs.parse(id)
	if err != nil {
		return Approval{}, err
	}
	at = nowIfZero(at)
	for attempt := 0; ; attempt++ {
		a, err := scanApproval(s.w.QueryRowContext(ctx, s.d.rebind(`UPDATE approvals
			SET status = ?, decided_by = ?, decision_reason = ?, decided_at = ?
			WHERE id = ? AND status = 'pending' AND requested_by <> ?
			RETURNING `+approvalCols),
			status, decidedBy, reason, s.d.timeArg(at), n, decidedBy))
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return Approval{}, opErr("decide approval", err)
		}
		cur, err := s.Approval(ctx, id)
		switch {
		case err != nil:
			return Approval{}, err
		case cur.Status != ApprovalPending:
			return cur, fmt.Errorf("%w: %s is %s", ErrNotPending, id, cur.Status)
		case cur.RequestedBy == decidedBy:
			return cur, ErrSameRequester
		case attempt > 0:
			return Approval{}, fmt.Errorf("records: decide approval: %s did not take the decision", id)
		}
		// A pending approval that the update missed was created after it
		// ran: decide again.
	}
}

// ListApprovals returns approvals, newest first.
func (s *sqlStore) ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	var w where
	if f.Status != "" {
		w.add("status = ?", f.Status)
	}
	if f.InvoiceID != "" {
		w.add("invoice_id = ?", f.InvoiceID)
	}
	if err := pageWhere(&w, approvalIDs, f.Page); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT "+approvalCols+" FROM approvals"+w.String()+" ORDER BY id DESC LIMIT ?"),
		append(w.args, pageLimit(f.Limit, defaultPage, maxPage))...)
	if err != nil {
		return nil, opErr("list approvals", err)
	}
	as, err := collect(rows, scanApproval)
	return as, opErr("list approvals", err)
}
