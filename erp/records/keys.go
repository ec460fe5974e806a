package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Key row states.
const (
	keyInFlight = "in_flight"
	keyDone     = "done"
)

// keyRow is a row of idempotency_keys.
type keyRow struct {
	digest     string
	state      string
	leaseUntil time.Time
	expiresAt  time.Time // zero: a kept answer never expires
	resp       Response
}

// expired says whether a done row's answer has run out at now.
func (r keyRow) expired(now time.Time) bool {
	return !r.expiresAt.IsZero() && !r.expiresAt.After(now)
}

// claimAttempts bounds the re-reads of a key whose row changed between the
// read and the conditional write; each change is another caller's claim,
// so the next read finds it in flight.
const claimAttempts = 3

// ClaimKey claims k at now. Every write is conditional on the row as it
// was read, and a write that changes nothing sends the claim back to read
// the row again, so that of concurrent callers exactly one claims a key.
func (s *sqlStore) ClaimKey(ctx context.Context, k Key, now time.Time, opts KeyOptions) (KeyClaim, error) {
	var claim KeyClaim
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		claim, err = s.claimKey(ctx, tx, k, now, opts)
		return err
	})
	if err != nil {
		return KeyClaim{}, opErr("claim key", err)
	}
	return claim, nil
}

// claimKey is ClaimKey within tx.
func (s *sqlStore) claimKey(ctx context.Context, tx *sql.Tx, k Key, now time.Time, opts KeyOptions) (KeyClaim, error) {
	now = normTime(now)
	until := normTime(now.Add(leaseOrDefault(opts.Lease)))
	for range claimAttempts {
		row, found, err := s.keyRow(ctx, tx, k.Client, k.Key)
		if err != nil {
			return KeyClaim{}, err
		}
		var won int64
		switch {
		case !found && opts.MaxPerClient > 0:
			// One statement counts the client's live keys and inserts
			// the new one while they are fewer than the cap; the count
			// is the statement's own, taken after the client's lock.
			if err := s.lockClientKeys(ctx, tx, k.Client); err != nil {
				return KeyClaim{}, err
			}
			won, err = s.exec(ctx, tx, `INSERT INTO idempotency_keys (client, idem_key, operation, digest,
				state, lease_until, created_at) SELECT ?, ?, ?, ?, 'in_flight', ?, ?
				WHERE (SELECT COUNT(*) FROM idempotency_keys WHERE client = ?
					AND (state = 'in_flight' OR expires_at IS NULL OR expires_at > ?)) < ?
				ON CONFLICT (client, idem_key) DO NOTHING`,
				k.Client, k.Key, k.Operation, k.Digest, s.d.timeArg(until), s.d.timeArg(now),
				k.Client, s.d.timeArg(now), opts.MaxPerClient)
			if err != nil {
				return KeyClaim{}, err
			}
			if won == 1 {
				return KeyClaim{State: KeyClaimed}, nil
			}
			// Nothing inserted: the cap, or a claim of the same key
			// that came in between, which the next read finds.
			if _, found, err := s.keyRow(ctx, tx, k.Client, k.Key); err != nil || !found {
				return KeyClaim{State: KeyCapReached}, err
			}
		case !found || row.state == keyDone && row.expired(now):
			if opts.MaxPerClient > 0 {
				full, err := s.clientFull(ctx, tx, k.Client, now, opts.MaxPerClient)
				if err != nil {
					return KeyClaim{}, err
				}
				if full {
					return KeyClaim{State: KeyCapReached}, nil
				}
			}
			if !found {
				won, err = s.exec(ctx, tx, `INSERT INTO idempotency_keys (client, idem_key, operation, digest,
					state, lease_until, created_at) VALUES (?, ?, ?, ?, 'in_flight', ?, ?)
					ON CONFLICT (client, idem_key) DO NOTHING`,
					k.Client, k.Key, k.Operation, k.Digest, s.d.timeArg(until), s.d.timeArg(now))
			} else {
				won, err = s.exec(ctx, tx, `UPDATE idempotency_keys SET operation = ?, digest = ?,
					state = 'in_flight', lease_until = ?, status = 0, header = 'null', body = NULL,
					expires_at = NULL, created_at = ?
					WHERE client = ? AND idem_key = ? AND state = 'done' AND expires_at <= ?`,
					k.Operation, k.Digest, s.d.timeArg(until), s.d.timeArg(now), k.Client, k.Key, s.d.timeArg(now))
			}
			if err != nil {
				return KeyClaim{}, err
			}
			if won == 1 {
				return KeyClaim{State: KeyClaimed}, nil
			}
		case row.digest != k.Digest:
			return KeyClaim{State: KeyReused}, nil
		case row.state == keyDone:
			resp := row.resp
			return KeyClaim{State: KeyReplay, Response: &resp}, nil
		case row.leaseUntil.After(now):
			return KeyClaim{State: KeyInFlight, LeaseUntil: row.leaseUntil}, nil
		default:
			won, err = s.exec(ctx, tx, `UPDATE idempotency_keys SET lease_until = ?
				WHERE client = ? AND idem_key = ? AND state = 'in_flight' AND lease_until <= ?`,
				s.d.timeArg(until), k.Client, k.Key, s.d.timeArg(now))
			if err != nil {
				return KeyClaim{}, err
			}
			if won == 1 {
				return KeyClaim{State: KeyClaimed, TakenOver: true}, nil
			}
		}
	}
	return KeyClaim{}, errors.New("the key kept changing under the claim")
}

// keyRow reads the row of a key.
func (s *sqlStore) keyRow(ctx context.Context, q querier, client, key string) (keyRow, bool, error) {
	var r keyRow
	err := q.QueryRowContext(ctx, s.d.rebind(`SELECT digest, state, lease_until, expires_at, status, outcome, header, body
		FROM idempotency_keys WHERE client = ? AND idem_key = ?`), client, key).
		Scan(&r.digest, &r.state, timeCol{&r.leaseUntil}, timeCol{&r.expiresAt}, &r.resp.Status,
			&r.resp.Outcome, jsonCol{&r.resp.Header}, &r.resp.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return keyRow{}, false, nil
	}
	return r, err == nil, err
}

// lockClientKeys locks the client's keys for the transaction, on
// PostgreSQL, so that concurrent claims of new keys count one after
// another; SQLite's write transactions run one at a time.
func (s *sqlStore) lockClientKeys(ctx context.Context, tx *sql.Tx, client string) error {
	if s.d.lockClient == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.d.lockClient, client)
	return err
}

// clientFull says whether client holds max live keys at now: in flight, or
// kept and not expired, counted under the client's lock.
func (s *sqlStore) clientFull(ctx context.Context, tx *sql.Tx, client string, now time.Time, max int) (bool, error) {
	if err := s.lockClientKeys(ctx, tx, client); err != nil {
		return false, err
	}
	var n int
	err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM idempotency_keys WHERE client = ?
		AND (state = 'in_flight' OR expires_at IS NULL OR expires_at > ?)`), client, s.d.timeArg(now)).Scan(&n)
	return n >= max, err
}

// CompleteKey keeps resp as the answer of a key in flight until expires.
func (s *sqlStore) CompleteKey(ctx context.Context, client, key string, resp Response, expires time.Time) error {
	return opErr("complete key", s.completeKey(ctx, s.w, client, key, resp, expires))
}

// completeKey is CompleteKey on q.
func (s *sqlStore) completeKey(ctx context.Context, q querier, client, key string, resp Response, expires time.Time) error {
	st, err := s.completeKeyStmt(client, key, resp, expires)
	if err != nil {
		return err
	}
	changed, err := st.exec(ctx, s, q)
	if err != nil {
		return err
	}
	if changed == 0 {
		return keyNotInFlight(client, key)
	}
	return nil
}

func (s *sqlStore) completeKeyStmt(client, key string, resp Response, expires time.Time) (stmt, error) {
	header, err := jsonArg(resp.Header)
	if err != nil {
		return stmt{}, err
	}
	return stmt{`UPDATE idempotency_keys SET state = 'done', lease_until = NULL,
		status = ?, outcome = ?, header = ?, body = ?, expires_at = ?
		WHERE client = ? AND idem_key = ? AND state = 'in_flight'`,
		[]any{resp.Status, resp.Outcome, header, resp.Body, s.d.timeArg(expires), client, key}}, nil
}

func keyNotInFlight(client, key string) error {
	return fmt.Errorf("%w: key %q of %q is not in flight", ErrNotFound, key, client)
}

// ReleaseKey drops a claim in flight; a key not in flight stays as it is.
func (s *sqlStore) ReleaseKey(ctx context.Context, client, key string) error {
	return opErr("release key", s.releaseKey(ctx, s.w, client, key))
}

// releaseKey is ReleaseKey on q.
func (s *sqlStore) releaseKey(ctx context.Context, q querier, client, key string) error {
	_, err := releaseKeyStmt(client, key).exec(ctx, s, q)
	return err
}

func releaseKeyStmt(client, key string) stmt {
	return stmt{"DELETE FROM idempotency_keys WHERE client = ? AND idem_key = ? AND state = 'in_flight'", []any{client, key}}
}

// DeleteExpiredKeys drops the answers kept past their expiry at now.
func (s *sqlStore) DeleteExpiredKeys(ctx context.Context, now time.Time) (int, error) {
	n, err := s.exec(ctx, s.w, "DELETE FROM idempotency_keys WHERE state = 'done' AND expires_at <= ?", s.d.timeArg(normTime(now)))
	return int(n), opErr("delete expired keys", err)
}
