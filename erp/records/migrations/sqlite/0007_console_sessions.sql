-- The web console's sessions, kept here so that signing out ends one on
-- every replica. id is the hex SHA-256 of the session's random token: the
-- token itself is only in the person's cookie. A page reads one row by id;
-- expired rows are swept by expires_at.
CREATE TABLE console_sessions (
	id         TEXT PRIMARY KEY,
	client     TEXT NOT NULL,
	key_fp     TEXT NOT NULL,
	created_at TEXT NOT NULL,
	expires_at TEXT NOT NULL,
	ended_at   TEXT
) WITHOUT ROWID;
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
