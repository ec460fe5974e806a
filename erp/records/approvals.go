package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

const approvalCols = `id, invoice_id, fiscal_year, company_code, status, approver, proposed_action,
	justification, amount, currency, requested_by, requested_at, decided_by, decision_reason,
	decided_at, dedupe, superseded_by, supplier_id`

func scanApproval(sc scanner) (Approval, error) {
	var a Approval
	var id int64
	err := sc.Scan(&id, &a.InvoiceID, &a.FiscalYear, &a.CompanyCode, &a.Status, &a.Approver,
		&a.ProposedAction, &a.Justification, &a.Amount, &a.Currency, &a.RequestedBy,
		timeCol{&a.RequestedAt}, &a.DecidedBy, &a.DecisionReason, timeCol{&a.DecidedAt}, &a.Dedupe, &a.SupersededBy, &a.SupplierID)
	a.ID = approvalIDs.format(id)
	return a, err
}

// errDedupeTaken rolls back a CreateApproval whose dedupe another create
// took while it ran, with the approvals it superseded: the approval the
// other create made is the answer.
var errDedupeTaken = errors.New("records: the dedupe was taken")

// CreateApproval stores a with a new id, superseding the approvals it
// takes the place of, or returns the approval with a.Dedupe; all of it in
// one transaction with the invoice's case locked. With notify a new
// approval queues a DeliveryApproval in the same transaction.
func (s *sqlStore) CreateApproval(ctx context.Context, a Approval, notify bool) (Approval, bool, error) {
	if a.Status == "" {
		a.Status = ApprovalPending
	}
	a.RequestedAt = nowIfZero(a.RequestedAt)
	a.DecidedAt = normTime(a.DecidedAt)
	a.SupersededBy = ""
	created := false
	// A decided approval may release a hold, which with HoldEvents queues
	// a webhook.
	durable := notify || s.holdEvents && a.Status != ApprovalPending
	err := s.inRecordTx(ctx, durable, func(tx *sql.Tx) error {
		c, err := s.lockCase(ctx, tx, a.InvoiceID, a.RequestedAt)
		if err != nil {
			return err
		}
		// The same proposal made before, also by a request this one waited
		// for at the case's lock (on PostgreSQL each statement after the
		// lock sees what committed before it), is the approval.
		if a.Dedupe != "" {
			prev, err := s.approvalByDedupe(ctx, tx, a.Dedupe)
			if err == nil {
				a = prev
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		// The approvals it supersedes give up their place first: the
		// invoice may have one pending approval only.
		supersede := "'pending'"
		if a.Status == ApprovalApproved {
			supersede = "'pending', 'approved'"
		}
		old, err := s.supersede(ctx, tx, `UPDATE approvals SET status = 'superseded', dedupe = ''
			WHERE invoice_id = ? AND status IN (`+supersede+`) RETURNING id`, a.InvoiceID)
		if err != nil {
			return err
		}
		id, ok, err := s.insertDeduped(ctx, tx, `INSERT INTO approvals (invoice_id, fiscal_year,
			company_code, status, approver, proposed_action, justification, amount, currency,
			requested_by, requested_at, decided_by, decision_reason, decided_at, dedupe, supplier_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (dedupe) WHERE dedupe <> '' DO NOTHING RETURNING id`,
			a.InvoiceID, a.FiscalYear, a.CompanyCode, a.Status, a.Approver, a.ProposedAction,
			a.Justification, a.Amount, a.Currency, a.RequestedBy, s.d.timeArg(a.RequestedAt),
			a.DecidedBy, a.DecisionReason, s.d.timeArg(a.DecidedAt), a.Dedupe, a.SupplierID)
		if err != nil {
			return err
		}
		if !ok {
			return errDedupeTaken
		}
		a.ID, created = approvalIDs.format(id), true
		evs, err := s.supersededBy(ctx, tx, old, a.ID)
		if err != nil {
			return err
		}
		evs = append(evs, CaseEvent{Kind: "approval.requested", Ref: a.ID,
			Note: fmt.Sprintf("%s %s %s %s", a.Status, a.ProposedAction, a.Amount.StringFixed(2), a.Currency)})
		c.ApprovalID, c.ApprovalStatus = a.ID, a.Status
		at := a.RequestedAt
		if !a.DecidedAt.IsZero() {
			at = a.DecidedAt
		}
		h, held, err := s.heldHold(ctx, tx, a.InvoiceID)
		if err != nil {
			return err
		}
		switch {
		case !held || h.ApprovalID == "":
		case a.Status == ApprovalPending:
			ev, err := s.holdWaitsFor(ctx, tx, h, a.ID, a.RequestedAt)
			if err != nil {
				return err
			}
			evs = append(evs, ev)
		default:
			ev, err := s.approvalMet(ctx, tx, &c, h, a, at)
			if err != nil {
				return err
			}
			evs = append(evs, ev)
		}
		if notify {
			if err := s.queueDelivery(ctx, tx, DeliveryApproval, a.ID, a.RequestedAt); err != nil {
				return err
			}
		}
		return s.bumpCase(ctx, tx, &c, at, evs...)
	})
	if errors.Is(err, errDedupeTaken) {
		a, err = s.approvalByDedupe(ctx, s.db, a.Dedupe)
	}
	if err != nil {
		return Approval{}, false, opErr("create approval", err)
	}
	return a, created, nil
}

func (s *sqlStore) approvalByDedupe(ctx context.Context, q querier, dedupe string) (Approval, error) {
	return scanApproval(q.QueryRowContext(ctx, s.d.rebind("SELECT "+approvalCols+" FROM approvals WHERE dedupe = ?"), dedupe))
}

// supersede runs update, which supersedes approvals and returns their
// ids, and returns the ids in order.
func (s *sqlStore) supersede(ctx context.Context, tx *sql.Tx, update string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, s.d.rebind(update), args...)
	if err != nil {
		return nil, err
	}
	ids, err := collect(rows, func(sc scanner) (int64, error) {
		var id int64
		err := sc.Scan(&id)
		return id, err
	})
	slices.Sort(ids)
	return ids, err
}

// supersededBy records that the approvals old were superseded by id, and
// returns the case events that tell of it.
func (s *sqlStore) supersededBy(ctx context.Context, tx *sql.Tx, old []int64, id string) ([]CaseEvent, error) {
	if len(old) == 0 {
		return nil, nil
	}
	args := []any{id}
	evs := make([]CaseEvent, len(old))
	for i, n := range old {
		args = append(args, n)
		evs[i] = CaseEvent{Kind: "approval.superseded", Ref: approvalIDs.format(n), Note: "superseded by " + id}
	}
	_, err := s.exec(ctx, tx, "UPDATE approvals SET superseded_by = ? WHERE id IN ("+placeholders(len(old))+")", args...)
	return evs, err
}

// holdWaitsFor makes h, a held hold that waits for an approval, wait for
// the approval id that superseded it.
func (s *sqlStore) holdWaitsFor(ctx context.Context, tx *sql.Tx, h Hold, id string, at time.Time) (CaseEvent, error) {
	n, err := holdIDs.parse(h.ID)
	if err != nil {
		return CaseEvent{}, err
	}
	if _, err := s.exec(ctx, tx, "UPDATE holds SET approval_id = ? WHERE id = ?", id, n); err != nil {
		return CaseEvent{}, err
	}
	note := fmt.Sprintf("waits for approval %s instead of %s", id, h.ApprovalID)
	if err := s.addHoldEvent(ctx, tx, n, HoldEvent{At: at, Kind: "merged", Note: note}); err != nil {
		return CaseEvent{}, err
	}
	return CaseEvent{Kind: "hold.merged", Ref: h.ID, Note: note}, nil
}

// approvalMet tells h, a held hold that waits for the approval a, that a
// was decided: a hold that awaits no goods receipt is released, in tx;
// one that does is due for its re-check at once. It returns the case
// event that tells of it.
func (s *sqlStore) approvalMet(ctx context.Context, tx *sql.Tx, c *caseRow, h Hold, a Approval, at time.Time) (CaseEvent, error) {
	n, err := holdIDs.parse(h.ID)
	if err != nil {
		return CaseEvent{}, err
	}
	if len(h.Awaiting) == 0 {
		if _, err := s.exec(ctx, tx, "UPDATE holds SET approval_id = '' WHERE id = ?", n); err != nil {
			return CaseEvent{}, err
		}
		note := fmt.Sprintf("approval %s %s by %s", a.ID, a.Status, a.DecidedBy)
		ev, _, err := s.endHold(ctx, tx, c, h.ID, HoldEvent{At: at, Kind: "released", Note: note}, "")
		return ev, err
	}
	if _, err := s.exec(ctx, tx, "UPDATE holds SET approval_id = '', next_check_at = ? WHERE id = ?", s.d.timeArg(at), n); err != nil {
		return CaseEvent{}, err
	}
	note := fmt.Sprintf("approval %s decided; still awaiting goods receipts", a.ID)
	if err := s.addHoldEvent(ctx, tx, n, HoldEvent{At: at, Kind: "merged", Note: note}); err != nil {
		return CaseEvent{}, err
	}
	return CaseEvent{Kind: "hold.merged", Ref: h.ID, Note: note}, nil
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

// DecideApproval decides a pending approval in one conditional update,
// in a transaction with the invoice's case locked, with what the decision
// changes besides; when the update changes nothing, the approval as it is
// tells why.
func (s *sqlStore) DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (Approval, error) {
	if status != ApprovalApproved && status != ApprovalRejected && status != ApprovalSentBack {
		return Approval{}, fmt.Errorf("records: decide approval: status %q is not a decision", status)
	}
	// An approval sent back is not the answer to its proposal any more:
	// the agent's new request, answering the question, is a new approval.
	dedupe := "dedupe"
	if status == ApprovalSentBack {
		dedupe = "''"
	}
	invoice, err := s.invoiceOf(ctx, approvalIDs, id)
	if err != nil {
		return Approval{}, opErr("decide approval", err)
	}
	n, _ := approvalIDs.parse(id)
	at = nowIfZero(at)
	var a Approval
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		c, err := s.lockCase(ctx, tx, invoice, at)
		if err != nil {
			return err
		}
		a, err = scanApproval(tx.QueryRowContext(ctx, s.d.rebind(`UPDATE approvals
			SET status = ?, decided_by = ?, decision_reason = ?, decided_at = ?, dedupe = `+dedupe+`
			WHERE id = ? AND status = 'pending' AND requested_by <> ?
			RETURNING `+approvalCols),
			status, decidedBy, reason, s.d.timeArg(at), n, decidedBy))
		if errors.Is(err, sql.ErrNoRows) {
			a, err = scanApproval(tx.QueryRowContext(ctx, s.d.rebind("SELECT "+approvalCols+" FROM approvals WHERE id = ?"), n))
			switch {
			case err != nil:
				return err
			case a.Status != ApprovalPending:
				return fmt.Errorf("%w: %s is %s", ErrNotPending, id, a.Status)
			case a.RequestedBy == decidedBy:
				return ErrSameRequester
			}
			return fmt.Errorf("%s did not take the decision", id)
		}
		if err != nil {
			return err
		}
		var evs []CaseEvent
		if status == ApprovalApproved {
			old, err := s.supersede(ctx, tx, `UPDATE approvals SET status = 'superseded', superseded_by = ?, dedupe = ''
				WHERE invoice_id = ? AND id <> ? AND status IN ('pending', 'approved') RETURNING id`, id, invoice, n)
			if err != nil {
				return err
			}
			for _, o := range old {
				evs = append(evs, CaseEvent{Kind: "approval.superseded", Ref: approvalIDs.format(o), Note: "superseded by " + id})
			}
		}
		evs = append(evs, CaseEvent{Kind: "approval.decided", Ref: id, Note: fmt.Sprintf("%s by %s: %s", status, decidedBy, reason)})
		c.ApprovalID, c.ApprovalStatus = id, status
		h, held, err := s.heldHold(ctx, tx, invoice)
		if err != nil {
			return err
		}
		if held && h.ApprovalID == id {
			ev, err := s.approvalMet(ctx, tx, &c, h, a, at)
			if err != nil {
				return err
			}
			evs = append(evs, ev)
		}
		if s.holdEvents {
			if err := s.queueDelivery(ctx, tx, DeliveryApprovalDecided, id, at); err != nil {
				return err
			}
		}
		return s.bumpCase(ctx, tx, &c, at, evs...)
	})
	switch {
	case errors.Is(err, ErrNotPending), errors.Is(err, ErrSameRequester):
		return a, err
	case err != nil:
		return Approval{}, opErr("decide approval", err)
	}
	return a, nil
}

// ListApprovals returns approvals, newest first, or oldest first with
// f.OldestFirst. Ids are given in the order approvals are requested, so
// id order is the order of waiting time.
func (s *sqlStore) ListApprovals(ctx context.Context, f ApprovalFilter) ([]Approval, error) {
	w := approvalWhere(f)
	order := " ORDER BY id DESC"
	switch {
	case f.OldestFirst && f.After != "":
		n, err := approvalIDs.parse(f.After)
		if err != nil {
			return nil, err
		}
		w.add("id > ?", n)
		order = " ORDER BY id"
	case f.OldestFirst:
		order = " ORDER BY id"
	default:
		if err := pageWhere(&w, approvalIDs, f.Page); err != nil {
			return nil, err
		}
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT "+approvalCols+" FROM approvals"+w.String()+order+" LIMIT ?"),
		append(w.args, pageLimit(f.Limit, defaultPage, maxPage))...)
	if err != nil {
		return nil, opErr("list approvals", err)
	}
	as, err := collect(rows, scanApproval)
	return as, opErr("list approvals", err)
}

// CountApprovals counts the approvals f selects, of every page.
func (s *sqlStore) CountApprovals(ctx context.Context, f ApprovalFilter) (int, error) {
	w := approvalWhere(f)
	var n int
	if err := s.db.QueryRowContext(ctx, s.d.rebind("SELECT COUNT(*) FROM approvals"+w.String()), w.args...).Scan(&n); err != nil {
		return 0, opErr("count approvals", err)
	}
	return n, nil
}

// approvalWhere is the WHERE of f's conditions, its page aside. An amount
// is compared as a number on both engines (SQLite keeps it as text).
func approvalWhere(f ApprovalFilter) where {
	var w where
	if f.Status != "" {
		w.add("status = ?", f.Status)
	}
	if f.InvoiceID != "" {
		w.add("invoice_id = ?", f.InvoiceID)
	}
	if f.Approver != "" {
		w.add("approver = ?", f.Approver)
	}
	if f.SupplierID != "" {
		w.add("supplier_id = ?", f.SupplierID)
	}
	if f.MinAmount != nil {
		w.add("CAST(amount AS NUMERIC) >= CAST(? AS NUMERIC)", f.MinAmount.String())
	}
	if f.MaxAmount != nil {
		w.add("CAST(amount AS NUMERIC) <= CAST(? AS NUMERIC)", f.MaxAmount.String())
	}
	if f.NotRequestedBy != "" {
		w.add("requested_by <> ?", f.NotRequestedBy)
	}
	return w
}
