package records

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

const deliveryCols = "id, kind, record_id, attempts, next_at, delivered_at, last_error"

func scanDelivery(sc scanner) (Delivery, error) {
	var d Delivery
	var id int64
	err := sc.Scan(&id, &d.Kind, &d.RecordID, &d.Attempts, timeCol{&d.NextAt}, timeCol{&d.DeliveredAt}, &d.LastError)
	d.ID = deliveryIDs.format(id)
	return d, err
}

// queueDelivery adds a delivery of kind for the record, due at, in the
// transaction that writes the record.
func (s *sqlStore) queueDelivery(ctx context.Context, tx querier, kind, recordID string, at time.Time) error {
	_, err := s.exec(ctx, tx, "INSERT INTO deliveries (kind, record_id, attempts, next_at) VALUES (?, ?, 0, ?)",
		kind, recordID, s.d.timeArg(at))
	return err
}

// ClaimDeliveries selects the due undelivered deliveries and moves their
// next attempt past the lease in one transaction, as ClaimDueHolds does.
func (s *sqlStore) ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	limit = min(limit, maxClaimBatch)
	now = normTime(now)
	until := normTime(now.Add(leaseOrDefault(lease)))
	var ds []Delivery
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.d.rebind("SELECT "+deliveryCols+` FROM deliveries
			WHERE delivered_at IS NULL AND next_at <= ?
			ORDER BY next_at, id LIMIT ?`+s.d.skipLocked), s.d.timeArg(now), limit)
		if err != nil {
			return err
		}
		ds, err = collect(rows, scanDelivery)
		if err != nil || len(ds) == 0 {
			return err
		}
		args := []any{s.d.timeArg(until)}
		for _, d := range ds {
			n, _ := deliveryIDs.parse(d.ID)
			args = append(args, n)
		}
		_, err = s.exec(ctx, tx, "UPDATE deliveries SET next_at = ? WHERE id IN ("+placeholders(len(ds))+")", args...)
		return err
	})
	if err != nil {
		return nil, opErr("claim deliveries", err)
	}
	for i := range ds {
		ds[i].NextAt = until
	}
	return ds, nil
}

// DeliveryDone marks a delivery delivered; one delivered before keeps its
// first time.
func (s *sqlStore) DeliveryDone(ctx context.Context, id string, at time.Time) error {
	return s.updateDelivery(ctx, "delivery done", id,
		"UPDATE deliveries SET delivered_at = ? WHERE id = ? AND delivered_at IS NULL", s.d.timeArg(nowIfZero(at)))
}

// DeliveryFailed counts a failed attempt of an undelivered delivery and
// sets the next one.
func (s *sqlStore) DeliveryFailed(ctx context.Context, id string, next time.Time, lastErr string) error {
	return s.updateDelivery(ctx, "delivery failed", id,
		"UPDATE deliveries SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ? AND delivered_at IS NULL",
		s.d.timeArg(nowIfZero(next)), lastErr)
}

// updateDelivery runs update, whose last placeholder is the id; when it
// changes nothing the delivery was delivered before, or is ErrNotFound.
func (s *sqlStore) updateDelivery(ctx context.Context, op, id, update string, args ...any) error {
	n, err := deliveryIDs.parse(id)
	if err != nil {
		return err
	}
	changed, err := s.exec(ctx, s.w, update, append(args, n)...)
	if err != nil {
		return opErr(op, err)
	}
	if changed > 0 {
		return nil
	}
	var one int
	err = s.db.QueryRowContext(ctx, s.d.rebind("SELECT 1 FROM deliveries WHERE id = ?"), n).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("delivery", id)
	}
	return opErr(op, err)
}
