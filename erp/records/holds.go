package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

const holdCols = `id, invoice_id, fiscal_year, reason, recheck_at, next_check_at, checks, awaiting,
	status, created_by, created_at, released_at, dedupe`

func scanHold(sc scanner) (Hold, error) {
	var h Hold
	var id int64
	err := sc.Scan(&id, &h.InvoiceID, &h.FiscalYear, &h.Reason, timeCol{&h.RecheckAt},
		timeCol{&h.NextCheckAt}, &h.Checks, jsonCol{&h.Awaiting}, &h.Status, &h.CreatedBy,
		timeCol{&h.CreatedAt}, timeCol{&h.ReleasedAt}, &h.Dedupe)
	h.ID = holdIDs.format(id)
	return h, err
}

// CreateHold stores h with a new id and a "placed" event, or returns the
// hold with h.Dedupe.
func (s *sqlStore) CreateHold(ctx context.Context, h Hold) (Hold, bool, error) {
	if h.Status == "" {
		h.Status = HoldHeld
	}
	h.CreatedAt = nowIfZero(h.CreatedAt)
	h.RecheckAt = normTime(h.RecheckAt)
	h.NextCheckAt = normTime(h.NextCheckAt)
	h.ReleasedAt = normTime(h.ReleasedAt)
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
		id, ok, err := s.insertDeduped(ctx, tx, `INSERT INTO holds (invoice_id, fiscal_year, reason,
			recheck_at, next_check_at, checks, awaiting, status, created_by, created_at, released_at, dedupe)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (dedupe) WHERE dedupe <> '' DO NOTHING RETURNING id`,
			h.InvoiceID, h.FiscalYear, h.Reason, s.d.timeArg(h.RecheckAt), s.d.timeArg(h.NextCheckAt),
			h.Checks, awaiting, h.Status, h.CreatedBy, s.d.timeArg(h.CreatedAt), s.d.timeArg(h.ReleasedAt), h.Dedupe)
		if err != nil {
			return err
		}
		if !ok {
			h, err = scanHold(tx.QueryRowContext(ctx, s.d.rebind("SELECT "+holdCols+" FROM holds WHERE dedupe = ?"), h.Dedupe))
			return err
		}
		h.ID, created = holdIDs.format(id), true
		return s.addHoldEvent(ctx, tx, id, HoldEvent{At: h.CreatedAt, Kind: "placed", Note: h.Reason})
	})
	if err != nil {
		return Hold{}, false, opErr("create hold", err)
	}
	return h, created, nil
}

func (s *sqlStore) addHoldEvent(ctx context.Context, q querier, holdID int64, ev HoldEvent) error {
	_, err := s.exec(ctx, q, "INSERT INTO hold_events (hold_id, at, kind, note) VALUES (?, ?, ?, ?)",
		holdID, s.d.timeArg(ev.At), ev.Kind, ev.Note)
	return err
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

// ReleaseHold ends a held hold with ev; a hold that has ended stays as it
// is, without an error.
func (s *sqlStore) ReleaseHold(ctx context.Context, ev HoldEvent) error {
	if ev.Kind != "released" && ev.Kind != "closed" {
		return fmt.Errorf("records: release hold: event kind %q is neither released nor closed", ev.Kind)
	}
	n, err := holdIDs.parse(ev.HoldID)
	if err != nil {
		return err
	}
	ev.At = nowIfZero(ev.At)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		changed, err := s.exec(ctx, tx, "UPDATE holds SET status = 'released', released_at = ? WHERE id = ? AND status = 'held'",
			s.d.timeArg(ev.At), n)
		if err != nil {
			return err
		}
		if changed == 0 {
			return s.holdExists(ctx, tx, n, ev.HoldID)
		}
		return s.addHoldEvent(ctx, tx, n, ev)
	})
	return opErr("release hold", err)
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
