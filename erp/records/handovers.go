package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

const handoverCols = `id, invoice_id, queue, code, summary, evidence, history, status, created_by,
	created_at, taken_by, taken_at, resolved_by, resolved_at, note, dedupe`

func scanHandover(sc scanner) (Handover, error) {
	var h Handover
	var id int64
	err := sc.Scan(&id, &h.InvoiceID, &h.Queue, &h.Code, &h.Summary, jsonCol{&h.Evidence}, &h.History,
		&h.Status, &h.CreatedBy, timeCol{&h.CreatedAt}, &h.TakenBy, timeCol{&h.TakenAt},
		&h.ResolvedBy, timeCol{&h.ResolvedAt}, &h.Note, &h.Dedupe)
	h.ID = handoverIDs.format(id)
	return h, err
}

// CreateHandover stores h with a new id, or returns the handover with
// h.Dedupe, in one transaction with the invoice's case locked; with notify
// a new handover queues a DeliveryHandover in the same transaction.
func (s *sqlStore) CreateHandover(ctx context.Context, h Handover, notify bool) (Handover, bool, error) {
	if h.Status == "" {
		h.Status = HandoverQueued
	}
	h.CreatedAt = nowIfZero(h.CreatedAt)
	h.TakenAt = normTime(h.TakenAt)
	h.ResolvedAt = normTime(h.ResolvedAt)
	evidence, err := jsonArg(h.Evidence)
	if err != nil {
		return Handover{}, false, opErr("create handover", err)
	}
	created := false
	err = s.inRecordTx(ctx, notify, func(tx *sql.Tx) error {
		if h.Dedupe != "" {
			prev, err := s.handoverByDedupe(ctx, tx, h.Dedupe)
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
		id, ok, err := s.insertDeduped(ctx, tx, `INSERT INTO handovers (invoice_id, queue, code, summary,
			evidence, history, status, created_by, created_at, taken_by, taken_at, resolved_by,
			resolved_at, note, dedupe)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (dedupe) WHERE dedupe <> '' DO NOTHING RETURNING id`,
			h.InvoiceID, h.Queue, h.Code, h.Summary, evidence, h.History, h.Status, h.CreatedBy,
			s.d.timeArg(h.CreatedAt), h.TakenBy, s.d.timeArg(h.TakenAt), h.ResolvedBy,
			s.d.timeArg(h.ResolvedAt), h.Note, h.Dedupe)
		if err != nil {
			return err
		}
		if !ok {
			// Another create took the dedupe in between.
			h, err = s.handoverByDedupe(ctx, tx, h.Dedupe)
			return err
		}
		h.ID, created = handoverIDs.format(id), true
		if notify {
			if err := s.queueDelivery(ctx, tx, DeliveryHandover, h.ID, h.CreatedAt); err != nil {
				return err
			}
		}
		c.HandoverID, c.HandoverStatus = h.ID, h.Status
		note := "to " + h.Queue
		if h.Code != "" {
			note += ": " + h.Code
		}
		evs := []CaseEvent{{Kind: "handover.created", Ref: h.ID, Note: note}}
		// The invoice is a person's now: a hold the agent placed no longer
		// waits for anything the agent would act on, and its release would
		// wake a run that has ended.
		if held, ok, err := s.heldHold(ctx, tx, h.InvoiceID); err != nil {
			return err
		} else if ok {
			ev, ended, err := s.endHold(ctx, tx, &c, held.ID,
				HoldEvent{At: h.CreatedAt, Kind: "closed", Note: "handed over as " + h.ID}, "")
			if err != nil {
				return err
			}
			if ended {
				evs = append(evs, ev)
			}
		}
		return s.bumpCase(ctx, tx, &c, h.CreatedAt, evs...)
	})
	if err != nil {
		return Handover{}, false, opErr("create handover", err)
	}
	return h, created, nil
}

func (s *sqlStore) handoverByDedupe(ctx context.Context, q querier, dedupe string) (Handover, error) {
	return scanHandover(q.QueryRowContext(ctx, s.d.rebind("SELECT "+handoverCols+" FROM handovers WHERE dedupe = ?"), dedupe))
}

// Handover returns the handover or ErrNotFound.
func (s *sqlStore) Handover(ctx context.Context, id string) (Handover, error) {
	n, err := handoverIDs.parse(id)
	if err != nil {
		return Handover{}, err
	}
	h, err := scanHandover(s.db.QueryRowContext(ctx, s.d.rebind("SELECT "+handoverCols+" FROM handovers WHERE id = ?"), n))
	if errors.Is(err, sql.ErrNoRows) {
		return Handover{}, notFound("handover", id)
	}
	if err != nil {
		return Handover{}, opErr("read handover", err)
	}
	return h, nil
}

// ListHandovers returns handovers, newest first.
func (s *sqlStore) ListHandovers(ctx context.Context, f HandoverFilter) ([]Handover, error) {
	var w where
	if f.Queue != "" {
		w.add("queue = ?", f.Queue)
	}
	if f.Status != "" {
		w.add("status = ?", f.Status)
	}
	if err := pageWhere(&w, handoverIDs, f.Page); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind("SELECT "+handoverCols+" FROM handovers"+w.String()+" ORDER BY id DESC LIMIT ?"),
		append(w.args, pageLimit(f.Limit, defaultPage, maxPage))...)
	if err != nil {
		return nil, opErr("list handovers", err)
	}
	hs, err := collect(rows, scanHandover)
	return hs, opErr("list handovers", err)
}

// TakeHandover moves a queued handover to taken. ErrHandoverState comes
// with the handover as it is.
func (s *sqlStore) TakeHandover(ctx context.Context, id, by string, at time.Time) (Handover, error) {
	at = nowIfZero(at)
	return s.moveHandover(ctx, "take handover", id, at, CaseEvent{Kind: "handover.taken", Note: "taken by " + by},
		`UPDATE handovers SET status = 'taken', taken_by = ?, taken_at = ?
		WHERE id = ? AND status = 'queued'`, by, s.d.timeArg(at))
}

// ResolveHandover moves a queued or taken handover to resolved with note.
// ErrHandoverState comes with the handover as it is.
func (s *sqlStore) ResolveHandover(ctx context.Context, id, by, note string, at time.Time) (Handover, error) {
	at = nowIfZero(at)
	return s.moveHandover(ctx, "resolve handover", id, at, CaseEvent{Kind: "handover.resolved", Note: "resolved by " + by + ": " + note},
		`UPDATE handovers SET status = 'resolved', resolved_by = ?, resolved_at = ?, note = ?
		WHERE id = ? AND status IN ('queued', 'taken')`, by, s.d.timeArg(at), note)
}

// moveHandover runs update, a conditional UPDATE whose last placeholder is
// the id, in a transaction with the invoice's case locked and moved with
// ev, and returns the handover it changed; when it changed none, the
// handover as it is with ErrHandoverState, or ErrNotFound.
func (s *sqlStore) moveHandover(ctx context.Context, op, id string, at time.Time, ev CaseEvent, update string, args ...any) (Handover, error) {
	invoice, err := s.invoiceOf(ctx, handoverIDs, id)
	if err != nil {
		return Handover{}, opErr(op, err)
	}
	n, _ := handoverIDs.parse(id)
	var h Handover
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		c, err := s.lockCase(ctx, tx, invoice, at)
		if err != nil {
			return err
		}
		h, err = scanHandover(tx.QueryRowContext(ctx, s.d.rebind(update+" RETURNING "+handoverCols), append(args, n)...))
		if errors.Is(err, sql.ErrNoRows) {
			h, err = scanHandover(tx.QueryRowContext(ctx, s.d.rebind("SELECT "+handoverCols+" FROM handovers WHERE id = ?"), n))
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: %s is %s", ErrHandoverState, id, h.Status)
		}
		if err != nil {
			return err
		}
		if c.HandoverID == id {
			c.HandoverStatus = h.Status
		}
		ev.Ref = id
		return s.bumpCase(ctx, tx, &c, at, ev)
	})
	switch {
	case errors.Is(err, ErrHandoverState):
		return h, err
	case err != nil:
		return Handover{}, opErr(op, err)
	}
	return h, nil
}
