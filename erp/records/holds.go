package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

const holdCols = `id, invoice_id, fiscal_year, reason, recheck_at, next_check_at, checks, awaiting,
	status, created_by, created_at, released_at, dedupe, approval_id, until_at, run_id`

func scanHold(sc scanner) (Hold, error) {
	var h Hold
	var id int64
	err := sc.Scan(&id, &h.InvoiceID, &h.FiscalYear, &h.Reason, timeCol{&h.RecheckAt},
		timeCol{&h.NextCheckAt}, &h.Checks, jsonCol{&h.Awaiting}, &h.Status, &h.CreatedBy,
		timeCol{&h.CreatedAt}, timeCol{&h.ReleasedAt}, &h.Dedupe, &h.ApprovalID, timeCol{&h.Until}, &h.RunID)
	h.ID = holdIDs.format(id)
	return h, err
}

// CreateHold stores h with a new id and a "placed" event, or merges it
// into the invoice's held hold, or returns the hold with h.Dedupe; all of
// it in one transaction with the invoice's case locked.
func (s *sqlStore) CreateHold(ctx context.Context, h Hold) (Hold, bool, error) {
	if h.Status == "" {
		h.Status = HoldHeld
	}
	h.CreatedAt = nowIfZero(h.CreatedAt)
	h.RecheckAt = normTime(h.RecheckAt)
	h.NextCheckAt = normTime(h.NextCheckAt)
	h.ReleasedAt = normTime(h.ReleasedAt)
	h.Until = normTime(h.Until)
	if h.NextCheckAt.IsZero() {
		h.NextCheckAt = h.RecheckAt
		if h.NextCheckAt.IsZero() {
			h.NextCheckAt = h.CreatedAt
		}
	}
	awaiting, err := jsonArg(h.Awaiting)
	if err != nil {
		return Hold{}, false, opErr("create hold", err)
	}
	created := false
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if h.Dedupe != "" {
			prev, err := s.holdByDedupe(ctx, tx, h.Dedupe)
			if err == nil {
				h = prev
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		c, err := s.lockCase(ctx, tx, h.InvoiceID, h.CreatedAt)
		if err != nil {
			return err
		}
		if h.Status == HoldHeld {
			cur, held, err := s.heldHold(ctx, tx, h.InvoiceID)
			if err != nil {
				return err
			}
			if held {
				h, err = s.mergeHold(ctx, tx, &c, cur, h)
				return err
			}
		}
		id, ok, err := s.insertDeduped(ctx, tx, `INSERT INTO holds (invoice_id, fiscal_year, reason,
			recheck_at, next_check_at, checks, awaiting, status, created_by, created_at, released_at, dedupe,
			approval_id, until_at, run_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (dedupe) WHERE dedupe <> '' DO NOTHING RETURNING id`,
			h.InvoiceID, h.FiscalYear, h.Reason, s.d.timeArg(h.RecheckAt), s.d.timeArg(h.NextCheckAt),
			h.Checks, awaiting, h.Status, h.CreatedBy, s.d.timeArg(h.CreatedAt), s.d.timeArg(h.ReleasedAt), h.Dedupe,
			h.ApprovalID, s.d.timeArg(h.Until), h.RunID)
		if err != nil {
			return err
		}
		if !ok {
			// Another create took the dedupe in between.
			h, err = s.holdByDedupe(ctx, tx, h.Dedupe)
			return err
		}
		h.ID, created = holdIDs.format(id), true
		if err := s.addHoldEvent(ctx, tx, id, HoldEvent{At: h.CreatedAt, Kind: "placed", Note: h.Reason}); err != nil {
			return err
		}
		if err := s.addHoldItems(ctx, tx, id, h.InvoiceID, h.Awaiting); err != nil {
			return err
		}
		if h.Status == HoldHeld {
			c.HoldID = h.ID
		}
		return s.bumpCase(ctx, tx, &c, h.CreatedAt, CaseEvent{Kind: "hold.placed", Ref: h.ID, Note: h.Reason, RunID: h.RunID})
	})
	if err != nil {
		return Hold{}, false, opErr("create hold", err)
	}
	return h, created, nil
}

// mergeHold merges h into cur, the invoice's held hold, and returns cur as
// it then is: the items h awaits join those cur awaits, after them, and
// h's approval and date, when set, take the place of cur's. A merge that
// changes cur records a "merged" event and moves the case.
func (s *sqlStore) mergeHold(ctx context.Context, tx *sql.Tx, c *caseRow, cur, h Hold) (Hold, error) {
	n, err := holdIDs.parse(cur.ID)
	if err != nil {
		return Hold{}, err
	}
	if err := s.addHoldItems(ctx, tx, n, cur.InvoiceID, h.Awaiting); err != nil {
		return Hold{}, err
	}
	merged := cur
	var changes []string
	has := map[POItemRef]bool{}
	for _, it := range cur.Awaiting {
		has[it] = true
	}
	var added []POItemRef
	for _, it := range h.Awaiting {
		if !has[it] {
			has[it] = true
			added = append(added, it)
		}
	}
	if len(added) > 0 {
		merged.Awaiting = append(append([]POItemRef{}, cur.Awaiting...), added...)
		changes = append(changes, "awaiting "+itemList(added))
	}
	if h.ApprovalID != "" && h.ApprovalID != cur.ApprovalID {
		merged.ApprovalID = h.ApprovalID
		changes = append(changes, "waits for approval "+h.ApprovalID)
	}
	if !h.Until.IsZero() && !h.Until.Equal(cur.Until) {
		merged.Until = h.Until
		changes = append(changes, "waits until "+h.Until.Format(time.RFC3339))
	}
	if len(changes) == 0 {
		return cur, nil
	}
	awaiting, err := jsonArg(merged.Awaiting)
	if err != nil {
		return Hold{}, err
	}
	if _, err := s.exec(ctx, tx, "UPDATE holds SET awaiting = ?, approval_id = ?, until_at = ? WHERE id = ?",
		awaiting, merged.ApprovalID, s.d.timeArg(merged.Until), n); err != nil {
		return Hold{}, err
	}
	note := strings.Join(changes, "; ")
	if err := s.addHoldEvent(ctx, tx, n, HoldEvent{At: h.CreatedAt, Kind: "merged", Note: note}); err != nil {
		return Hold{}, err
	}
	c.HoldID = cur.ID
	return merged, s.bumpCase(ctx, tx, c, h.CreatedAt, CaseEvent{Kind: "hold.merged", Ref: cur.ID, Note: note, RunID: h.RunID})
}

func (s *sqlStore) holdByDedupe(ctx context.Context, q querier, dedupe string) (Hold, error) {
	return scanHold(q.QueryRowContext(ctx, s.d.rebind("SELECT "+holdCols+" FROM holds WHERE dedupe = ?"), dedupe))
}

// heldHold returns the invoice's held hold, if any.
func (s *sqlStore) heldHold(ctx context.Context, q querier, invoiceID string) (Hold, bool, error) {
	h, err := scanHold(q.QueryRowContext(ctx, s.d.rebind("SELECT "+holdCols+` FROM holds
		WHERE invoice_id = ? AND status = 'held' ORDER BY id DESC LIMIT 1`), invoiceID))
	if errors.Is(err, sql.ErrNoRows) {
		return Hold{}, false, nil
	}
	return h, err == nil, err
}

func (s *sqlStore) addHoldEvent(ctx context.Context, q querier, holdID int64, ev HoldEvent) error {
	_, err := s.exec(ctx, q, "INSERT INTO hold_events (hold_id, at, kind, note) VALUES (?, ?, ?, ?)",
		holdID, s.d.timeArg(ev.At), ev.Kind, ev.Note)
	return err
}

// addHoldItems records that the hold waits for items; an item recorded
// before stays as it is.
func (s *sqlStore) addHoldItems(ctx context.Context, q querier, holdID int64, invoiceID string, items []POItemRef) error {
	if len(items) == 0 {
		return nil
	}
	rows := make([]string, len(items))
	args := make([]any, 0, 4*len(items))
	for i, it := range items {
		rows[i] = "(?, ?, ?, ?)"
		args = append(args, holdID, invoiceID, it.POID, it.Item)
	}
	_, err := s.exec(ctx, q, "INSERT INTO hold_items (hold_id, invoice_id, po_id, item) VALUES "+strings.Join(rows, ", ")+
		" ON CONFLICT (hold_id, po_id, item) DO NOTHING", args...)
	return err
}

// endHold ends the held hold id with ev, in tx with its invoice's case c
// locked, and returns the case event that tells of it; ended false, and no
// event, when the hold had ended before. With Options.HoldEvents a release
// queues a DeliveryHoldReleased.
func (s *sqlStore) endHold(ctx context.Context, tx *sql.Tx, c *caseRow, id string, ev HoldEvent, runID string) (_ CaseEvent, ended bool, _ error) {
	n, err := holdIDs.parse(id)
	if err != nil {
		return CaseEvent{}, false, err
	}
	changed, err := s.exec(ctx, tx, "UPDATE holds SET status = 'released', released_at = ? WHERE id = ? AND status = 'held'",
		s.d.timeArg(ev.At), n)
	if err != nil || changed == 0 {
		return CaseEvent{}, false, err
	}
	if err := s.addHoldEvent(ctx, tx, n, ev); err != nil {
		return CaseEvent{}, false, err
	}
	if c.HoldID == id {
		c.HoldID = ""
	}
	if s.holdEvents && ev.Kind == "released" {
		if err := s.queueDelivery(ctx, tx, DeliveryHoldReleased, id, ev.At); err != nil {
			return CaseEvent{}, false, err
		}
	}
	return CaseEvent{At: ev.At, Kind: "hold." + ev.Kind, Ref: id, Note: ev.Note, RunID: runID}, true, nil
}

// Hold returns the hold or ErrNotFound.
func (s *sqlStore) Hold(ctx context.Context, id string) (Hold, error) {
	n, err := holdIDs.parse(id)
	if err != nil {
		return Hold{}, err
	}
	h, err := scanHold(s.db.QueryRowContext(ctx, s.d.rebind("SELECT "+holdCols+" FROM holds WHERE id = ?"), n))
	if errors.Is(err, sql.ErrNoRows) {
		return Hold{}, notFound("hold", id)
	}
	if err != nil {
		return Hold{}, opErr("read hold", err)
	}
	return h, nil
}

// ListHolds returns holds, newest first.
func (s *sqlStore) ListHolds(ctx context.Context, f HoldFilter) ([]Hold, error) {
	var w where
	if f.Status != "" {
		w.add("status = ?", f.Status)
	}
	if f.InvoiceID != "" {
		w.add("invoice_id = ?", f.InvoiceID)
	}
	if err := pageWhere(&w, holdIDs, f.Page); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT "+holdCols+" FROM holds"+w.String()+" ORDER BY id DESC LIMIT ?"),
		append(w.args, pageLimit(f.Limit, defaultPage, maxPage))...)
	if err != nil {
		return nil, opErr("list holds", err)
	}
	hs, err := collect(rows, scanHold)
	return hs, opErr("list holds", err)
}

// ClaimDueHolds selects the due holds and moves their next check past the
// lease in one transaction. On PostgreSQL the select locks the rows and
// skips those another claimer holds; on SQLite the transaction holds the
// write lock. Either way no two claimers get one hold.
func (s *sqlStore) ClaimDueHolds(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Hold, error) {
	if limit <= 0 {
		return nil, nil
	}
	limit = min(limit, maxClaimBatch)
	now = normTime(now)
	until := normTime(now.Add(leaseOrDefault(lease)))
	var hs []Hold
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.d.rebind("SELECT "+holdCols+` FROM holds
			WHERE status = 'held' AND next_check_at <= ?
			ORDER BY next_check_at, id LIMIT ?`+s.d.skipLocked), s.d.timeArg(now), limit)
		if err != nil {
			return err
		}
		hs, err = collect(rows, scanHold)
		if err != nil || len(hs) == 0 {
			return err
		}
		args := []any{s.d.timeArg(until)}
		for _, h := range hs {
			n, _ := holdIDs.parse(h.ID)
			args = append(args, n)
		}
		_, err = s.exec(ctx, tx, "UPDATE holds SET next_check_at = ? WHERE id IN ("+placeholders(len(hs))+")", args...)
		return err
	})
	if err != nil {
		return nil, opErr("claim due holds", err)
	}
	for i := range hs {
		hs[i].NextCheckAt = until
	}
	return hs, nil
}

// RescheduleHold sets a held hold's next check; a checked one counts a
// re-check with a "rechecked" event. An ended hold stays as it is.
func (s *sqlStore) RescheduleHold(ctx context.Context, id string, next time.Time, checked bool, at time.Time) error {
	n, err := holdIDs.parse(id)
	if err != nil {
		return err
	}
	inc := 0
	if checked {
		inc = 1
	}
	next = nowIfZero(next)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		changed, err := s.exec(ctx, tx, "UPDATE holds SET next_check_at = ?, checks = checks + ? WHERE id = ? AND status = 'held'",
			s.d.timeArg(next), inc, n)
		if err != nil {
			return err
		}
		if changed == 0 {
			return s.holdExists(ctx, tx, n, id)
		}
		if !checked {
			return nil
		}
		return s.addHoldEvent(ctx, tx, n, HoldEvent{At: nowIfZero(at), Kind: "rechecked",
			Note: "next check " + next.Format(time.RFC3339)})
	})
	return opErr("reschedule hold", err)
}

// ReleaseHold ends a held hold with ev, in one transaction with the
// invoice's case locked; a hold that has ended stays as it is, without an
// error.
func (s *sqlStore) ReleaseHold(ctx context.Context, ev HoldEvent) error {
	if ev.Kind != "released" && ev.Kind != "closed" {
		return fmt.Errorf("records: release hold: event kind %q is neither released nor closed", ev.Kind)
	}
	invoice, err := s.invoiceOf(ctx, holdIDs, ev.HoldID)
	if err != nil {
		return opErr("release hold", err)
	}
	ev.At = nowIfZero(ev.At)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		c, err := s.lockCase(ctx, tx, invoice, ev.At)
		if err != nil {
			return err
		}
		cev, ended, err := s.endHold(ctx, tx, &c, ev.HoldID, ev, "")
		if err != nil || !ended {
			return err
		}
		return s.bumpCase(ctx, tx, &c, ev.At, cev)
	})
	return opErr("release hold", err)
}

// HoldAwaiting records the items a held hold still awaits, in one
// transaction with the invoice's case locked, when they are fewer than it
// awaited.
func (s *sqlStore) HoldAwaiting(ctx context.Context, holdID string, awaiting []POItemRef, at time.Time) error {
	invoice, err := s.invoiceOf(ctx, holdIDs, holdID)
	if err != nil {
		return opErr("hold awaiting", err)
	}
	n, _ := holdIDs.parse(holdID)
	at = nowIfZero(at)
	list, err := jsonArg(awaiting)
	if err != nil {
		return opErr("hold awaiting", err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		c, err := s.lockCase(ctx, tx, invoice, at)
		if err != nil {
			return err
		}
		h, err := scanHold(tx.QueryRowContext(ctx, s.d.rebind("SELECT "+holdCols+" FROM holds WHERE id = ?"), n))
		if err != nil {
			return err
		}
		if h.Status != HoldHeld || len(awaiting) >= len(h.Awaiting) {
			return nil
		}
		still := map[POItemRef]bool{}
		for _, it := range awaiting {
			still[it] = true
		}
		var arrived []POItemRef
		for _, it := range h.Awaiting {
			if !still[it] {
				arrived = append(arrived, it)
			}
		}
		if _, err := s.exec(ctx, tx, "UPDATE holds SET awaiting = ? WHERE id = ?", list, n); err != nil {
			return err
		}
		note := "goods receipts seen: " + itemList(arrived)
		if err := s.addHoldEvent(ctx, tx, n, HoldEvent{At: at, Kind: "receipt_seen", Note: note}); err != nil {
			return err
		}
		return s.bumpCase(ctx, tx, &c, at, CaseEvent{Kind: "hold.receipt_seen", Ref: holdID, Note: note})
	})
	return opErr("hold awaiting", err)
}

// holdExists returns nil when the hold exists, else ErrNotFound.
func (s *sqlStore) holdExists(ctx context.Context, q querier, n int64, id string) error {
	var one int
	err := q.QueryRowContext(ctx, s.d.rebind("SELECT 1 FROM holds WHERE id = ?"), n).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("hold", id)
	}
	return err
}

// HoldEvents returns a hold's events, oldest first, or ErrNotFound.
func (s *sqlStore) HoldEvents(ctx context.Context, holdID string) ([]HoldEvent, error) {
	n, err := holdIDs.parse(holdID)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT at, kind, note FROM hold_events WHERE hold_id = ? ORDER BY id"), n)
	if err != nil {
		return nil, opErr("read hold events", err)
	}
	evs, err := collect(rows, func(sc scanner) (HoldEvent, error) {
		ev := HoldEvent{HoldID: holdID}
		err := sc.Scan(timeCol{&ev.At}, &ev.Kind, &ev.Note)
		return ev, err
	})
	if err != nil {
		return nil, opErr("read hold events", err)
	}
	if len(evs) == 0 {
		// CreateHold writes a hold and its "placed" event together: no
		// event, no hold.
		return nil, notFound("hold", holdID)
	}
	return evs, nil
}
