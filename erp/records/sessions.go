package records

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Session is a person's signed-in session in the web console. It is kept
// in the store, not in the cookie alone, so that signing out ends it on
// every replica sharing the store. The store keeps the SHA-256 of the
// session's random token; the token itself is only in the person's
// cookie, so that a copy of the database opens no session.
type Session struct {
	Client    string // the configured client (person) signed in
	KeyFP     string // a fingerprint of the API key they signed in with
	CreatedAt time.Time
	ExpiresAt time.Time
	EndedAt   time.Time // when they signed out; zero while the session lasts
}

// Live reports whether the session still opens the console at now: not
// ended, and not expired.
func (s Session) Live(now time.Time) bool {
	return s.EndedAt.IsZero() && now.Before(s.ExpiresAt)
}

// sessionID is the key a session is stored under: the hex SHA-256 of its
// token.
func sessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateSession stores s under the hash of token.
func (s *sqlStore) CreateSession(ctx context.Context, token string, se Session) error {
	if token == "" || se.ExpiresAt.IsZero() {
		return errors.New("records: create session: a token and an expiry are required")
	}
	_, err := s.exec(ctx, s.w, `INSERT INTO console_sessions (id, client, key_fp, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?)`, sessionID(token), se.Client, se.KeyFP,
		s.d.timeArg(nowIfZero(se.CreatedAt)), s.d.timeArg(se.ExpiresAt))
	return opErr("create session", err)
}

// Session returns the session of token, ended or expired alike, or
// ErrNotFound.
func (s *sqlStore) Session(ctx context.Context, token string) (Session, error) {
	var se Session
	err := s.db.QueryRowContext(ctx, s.d.rebind(`SELECT client, key_fp, created_at, expires_at, ended_at
		FROM console_sessions WHERE id = ?`), sessionID(token)).
		Scan(&se.Client, &se.KeyFP, timeCol{&se.CreatedAt}, timeCol{&se.ExpiresAt}, timeCol{&se.EndedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("%w: session", ErrNotFound)
	}
	return se, opErr("read session", err)
}

// EndSession marks the session of token ended at at. A session that ended
// before keeps its first end; an unknown one is no error.
func (s *sqlStore) EndSession(ctx context.Context, token string, at time.Time) error {
	_, err := s.exec(ctx, s.w, "UPDATE console_sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL",
		s.d.timeArg(nowIfZero(at)), sessionID(token))
	return opErr("end session", err)
}

// DeleteExpiredSessions drops the sessions expired at now, ended or not,
// and returns how many.
func (s *sqlStore) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	n, err := s.exec(ctx, s.w, "DELETE FROM console_sessions WHERE expires_at <= ?", s.d.timeArg(normTime(now)))
	return int(n), opErr("delete expired sessions", err)
}
