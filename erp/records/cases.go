package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// caseState is the one place that says what state a case is in: it is
// derived from the records that bear on the case, never stored apart from
// them. A posting ends the case whatever else stands; a person's handover
// comes before the holds and approvals the agent placed; a held hold
// before the approval it may wait for.
func caseState(c Case) string {
	switch {
	case c.Posted:
		return CasePosted
	case c.HandoverStatus == HandoverQueued || c.HandoverStatus == HandoverTaken:
		return CaseHandedOver
	case c.HoldID != "":
		return CaseOnHold
	case c.ApprovalStatus == ApprovalPending:
		return CaseAwaitingApproval
	case c.ApprovalStatus == ApprovalApproved:
		return CaseReady
	case c.HandoverStatus == HandoverResolved:
		return CaseResolved
	}
	return CaseOpen
}

const caseCols = `invoice_id, state, version, hold_id, approval_id, approval_status, handover_id,
	handover_status, posted, calls, runs, created_at, updated_at`

func scanCase(sc scanner) (Case, error) {
	var c Case
	err := sc.Scan(&c.InvoiceID, &c.State, &c.Version, &c.HoldID, &c.ApprovalID, &c.ApprovalStatus,
		&c.HandoverID, &c.HandoverStatus, &c.Posted, &c.Calls, &c.Runs, timeCol{&c.CreatedAt}, timeCol{&c.UpdatedAt})
	return c, err
}

// caseRow is a case locked by a transaction: changed in place by the
// transaction's work, and written back, its version moved, by bumpCase.
type caseRow struct {
	Case
}

// lockCase locks the invoice's case for the rest of tx, making the case
// (open, version 0, created at at) when missing, and returns it. Every
// transaction that changes what a case depends on locks it first, so that
// on PostgreSQL the transactions of one invoice run one at a time, across
// replicas; on SQLite a write transaction holds the write lock already.
func (s *sqlStore) lockCase(ctx context.Context, tx *sql.Tx, invoiceID string, at time.Time) (caseRow, error) {
	// One statement makes the case or, finding it, locks its row (an
	// update that changes nothing takes the row lock as FOR UPDATE would,
	// and waits for a holder of it), and returns it as it is after any
	// transaction that held it.
	c, err := scanCase(tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO cases (invoice_id, state, created_at, updated_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (invoice_id) DO UPDATE SET invoice_id = excluded.invoice_id
		RETURNING `+caseCols), invoiceID, CaseOpen, s.d.timeArg(at), s.d.timeArg(at)))
	return caseRow{c}, err
}

// bumpCase writes c back with its version moved by one and its state
// derived anew, and adds events, at at unless they carry a time of their
// own, with that version.
func (s *sqlStore) bumpCase(ctx context.Context, tx *sql.Tx, c *caseRow, at time.Time, events ...CaseEvent) error {
	c.Version++
	c.State = caseState(c.Case)
	c.UpdatedAt = normTime(at)
	update := `UPDATE cases SET state = ?, version = ?, hold_id = ?, approval_id = ?,
		approval_status = ?, handover_id = ?, handover_status = ?, posted = ?, updated_at = ?
		WHERE invoice_id = ?`
	args := []any{c.State, c.Version, c.HoldID, c.ApprovalID, c.ApprovalStatus, c.HandoverID, c.HandoverStatus, c.Posted,
		s.d.timeArg(c.UpdatedAt), c.InvoiceID}
	if len(events) == 0 {
		_, err := s.exec(ctx, tx, update, args...)
		return err
	}
	rows := make([]string, len(events))
	for i, ev := range events {
		if ev.RunID == "" {
			ev.RunID = RunIDFrom(ctx)
		}
		if ev.At.IsZero() {
			ev.At = c.UpdatedAt
		}
		rows[i] = "(?, ?, ?, ?, ?, ?, ?)"
		args = append(args, c.InvoiceID, c.Version, s.d.timeArg(ev.At), ev.Kind, ev.Ref, ev.Note, ev.RunID)
	}
	insert := "INSERT INTO case_events (invoice_id, version, at, kind, ref, note, run_id) VALUES " + strings.Join(rows, ", ")
	// On PostgreSQL the case and its events are one statement.
	if s.d.writableWith {
		_, err := s.exec(ctx, tx, "WITH bumped AS ("+update+" RETURNING 1) "+insert, args...)
		return err
	}
	if _, err := s.exec(ctx, tx, update, args[:10]...); err != nil {
		return err
	}
	_, err := s.exec(ctx, tx, insert, args[10:]...)
	return err
}

// Case returns the invoice's case, or ErrNotFound.
func (s *sqlStore) Case(ctx context.Context, invoiceID string) (Case, error) {
	c, err := scanCase(s.db.QueryRowContext(ctx, s.d.rebind("SELECT "+caseCols+" FROM cases WHERE invoice_id = ?"), invoiceID))
	if errors.Is(err, sql.ErrNoRows) {
		return Case{}, notFound("case", invoiceID)
	}
	if err != nil {
		return Case{}, opErr("read case", err)
	}
	return c, nil
}

// CaseEvents returns the case's first events, oldest first.
func (s *sqlStore) CaseEvents(ctx context.Context, invoiceID string, limit int) ([]CaseEvent, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT id, invoice_id, version, at, kind, ref, note, run_id
		FROM case_events WHERE invoice_id = ? ORDER BY id LIMIT ?`),
		invoiceID, pageLimit(limit, defaultCaseEvents, maxCaseEvents))
	if err != nil {
		return nil, opErr("read case events", err)
	}
	evs, err := collect(rows, func(sc scanner) (CaseEvent, error) {
		var ev CaseEvent
		err := sc.Scan(&ev.ID, &ev.InvoiceID, &ev.Version, timeCol{&ev.At}, &ev.Kind, &ev.Ref, &ev.Note, &ev.RunID)
		return ev, err
	})
	return evs, opErr("read case events", err)
}

// TouchCase counts a call about the case ref names in one upsert, whose
// commit does not wait for the disk; a POItem is only read.
func (s *sqlStore) TouchCase(ctx context.Context, ref CaseRef, runID string) (Case, error) {
	set := 0
	for _, named := range []bool{ref.InvoiceID != "", ref.ApprovalID != "", ref.HoldID != "", ref.POItem != (POItemRef{})} {
		if named {
			set++
		}
	}
	if set != 1 {
		return Case{}, fmt.Errorf("records: touch case: the case ref names %d things, want one", set)
	}
	invoice := ref.InvoiceID
	var err error
	switch {
	case ref.ApprovalID != "":
		invoice, err = s.invoiceOf(ctx, approvalIDs, ref.ApprovalID)
	case ref.HoldID != "":
		invoice, err = s.invoiceOf(ctx, holdIDs, ref.HoldID)
	case ref.POItem != (POItemRef{}):
		return s.itemCase(ctx, ref.POItem)
	}
	if errors.Is(err, ErrNotFound) {
		return Case{}, nil
	}
	if err != nil {
		return Case{}, opErr("touch case", err)
	}
	runs := 0
	if runID != "" {
		runs = 1
	}
	now := s.d.timeArg(time.Now())
	var c Case
	touch := func(q querier) error {
		var err error
		c, err = scanCase(q.QueryRowContext(ctx, s.d.rebind(`INSERT INTO cases (invoice_id, state, calls, runs, last_run_id, created_at, updated_at)
			VALUES (?, ?, 1, ?, ?, ?, ?)
			ON CONFLICT (invoice_id) DO UPDATE SET calls = cases.calls + 1,
				runs = cases.runs + CASE WHEN excluded.last_run_id NOT IN ('', cases.last_run_id) THEN 1 ELSE 0 END,
				last_run_id = CASE WHEN excluded.last_run_id = '' THEN cases.last_run_id ELSE excluded.last_run_id END
			RETURNING `+caseCols), invoice, CaseOpen, runs, runID, now, now))
		return err
	}
	if s.lazy != nil {
		err = touch(s.lazy)
	} else {
		err = s.inLazyTx(ctx, func(tx *sql.Tx) error { return touch(tx) })
	}
	if err != nil {
		return Case{}, opErr("touch case", err)
	}
	return c, nil
}

// itemCase returns the case of the newest hold that waited for item, or
// the zero Case when there is none.
func (s *sqlStore) itemCase(ctx context.Context, item POItemRef) (Case, error) {
	c, err := scanCase(s.db.QueryRowContext(ctx, s.d.rebind("SELECT "+caseCols+` FROM cases WHERE invoice_id =
		(SELECT invoice_id FROM hold_items WHERE po_id = ? AND item = ? ORDER BY hold_id DESC LIMIT 1)`),
		item.POID, item.Item))
	if errors.Is(err, sql.ErrNoRows) {
		return Case{}, nil
	}
	if err != nil {
		return Case{}, opErr("touch case", err)
	}
	return c, nil
}

// RecordPosting marks the case posted and closes its held hold, in one
// transaction; a case posted before stays as it is.
func (s *sqlStore) RecordPosting(ctx context.Context, invoiceID, approvalID, runID string, at time.Time) (Case, error) {
	// A posting stands once recorded: a case posted before is answered by
	// a read, without the case's lock (a post repeated on a posted invoice
	// is the common repeat).
	if c, err := s.Case(ctx, invoiceID); err == nil && c.Posted {
		return c, nil
	}
	at = nowIfZero(at)
	var out Case
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		c, err := s.lockCase(ctx, tx, invoiceID, at)
		if err != nil {
			return err
		}
		out = c.Case
		if c.Posted {
			return nil
		}
		c.Posted = true
		var evs []CaseEvent
		h, held, err := s.heldHold(ctx, tx, invoiceID)
		if err != nil {
			return err
		}
		if held {
			ev, ended, err := s.endHold(ctx, tx, &c, h.ID, HoldEvent{At: at, Kind: "closed", Note: "invoice posted"}, runID)
			if err != nil {
				return err
			}
			if ended {
				evs = append(evs, ev)
			}
		}
		note := ""
		if approvalID != "" {
			note = "posted with approval " + approvalID
		}
		evs = append(evs, CaseEvent{Kind: "invoice.posted", Ref: approvalID, Note: note, RunID: runID})
		if err := s.bumpCase(ctx, tx, &c, at, evs...); err != nil {
			return err
		}
		out = c.Case
		return nil
	})
	if err != nil {
		return Case{}, opErr("record posting", err)
	}
	return out, nil
}

// itemList names PO items for a note: "4500000001/00010, 4500000001/00020".
func itemList(items []POItemRef) string {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.POID + "/" + it.Item
	}
	return strings.Join(names, ", ")
}
