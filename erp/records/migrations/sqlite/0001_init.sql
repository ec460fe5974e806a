-- The gateway's records, SQLite form. Times are UTC text of fixed width
-- (2006-01-02T15:04:05.000000Z), so that text order is time order; NULL is
-- the zero time. Amounts are decimal text.

CREATE TABLE approvals (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	invoice_id      TEXT NOT NULL DEFAULT '',
	fiscal_year     TEXT NOT NULL DEFAULT '',
	company_code    TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
	approver        TEXT NOT NULL DEFAULT '',
	proposed_action TEXT NOT NULL DEFAULT '',
	justification   TEXT NOT NULL DEFAULT '',
	amount          TEXT NOT NULL DEFAULT '0',
	currency        TEXT NOT NULL DEFAULT '',
	requested_by    TEXT NOT NULL DEFAULT '',
	requested_at    TEXT,
	decided_by      TEXT NOT NULL DEFAULT '',
	decision_reason TEXT NOT NULL DEFAULT '',
	decided_at      TEXT,
	dedupe          TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX approvals_dedupe ON approvals (dedupe) WHERE dedupe <> '';
CREATE INDEX approvals_invoice ON approvals (invoice_id, id);
CREATE INDEX approvals_status ON approvals (status, id);

CREATE TABLE holds (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	invoice_id    TEXT NOT NULL DEFAULT '',
	fiscal_year   TEXT NOT NULL DEFAULT '',
	reason        TEXT NOT NULL DEFAULT '',
	recheck_at    TEXT,
	next_check_at TEXT,
	checks        INTEGER NOT NULL DEFAULT 0,
	awaiting      TEXT NOT NULL DEFAULT 'null', -- JSON array of {"po_id","item"}
	status        TEXT NOT NULL CHECK (status IN ('held', 'released')),
	created_by    TEXT NOT NULL DEFAULT '',
	created_at    TEXT,
	released_at   TEXT,
	dedupe        TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX holds_dedupe ON holds (dedupe) WHERE dedupe <> '';
CREATE INDEX holds_invoice ON holds (invoice_id, id);
CREATE INDEX holds_status ON holds (status, id);
CREATE INDEX holds_due ON holds (next_check_at, id) WHERE status = 'held';

CREATE TABLE hold_events (
	id      INTEGER PRIMARY KEY AUTOINCREMENT,
	hold_id INTEGER NOT NULL REFERENCES holds (id),
	at      TEXT,
	kind    TEXT NOT NULL,
	note    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX hold_events_hold ON hold_events (hold_id, id);

CREATE TABLE handovers (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	invoice_id  TEXT NOT NULL DEFAULT '',
	queue       TEXT NOT NULL DEFAULT '',
	code        TEXT NOT NULL DEFAULT '',
	summary     TEXT NOT NULL DEFAULT '',
	evidence    TEXT NOT NULL DEFAULT 'null', -- JSON array of strings
	history     TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL CHECK (status IN ('queued', 'taken', 'resolved')),
	created_by  TEXT NOT NULL DEFAULT '',
	created_at  TEXT,
	taken_by    TEXT NOT NULL DEFAULT '',
	taken_at    TEXT,
	resolved_by TEXT NOT NULL DEFAULT '',
	resolved_at TEXT,
	note        TEXT NOT NULL DEFAULT '',
	dedupe      TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX handovers_dedupe ON handovers (dedupe) WHERE dedupe <> '';
CREATE INDEX handovers_queue ON handovers (queue, status, id);
CREATE INDEX handovers_status ON handovers (status, id);

CREATE TABLE deliveries (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	kind         TEXT NOT NULL,
	record_id    TEXT NOT NULL,
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_at      TEXT NOT NULL,
	delivered_at TEXT,
	last_error   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX deliveries_due ON deliveries (next_at, id) WHERE delivered_at IS NULL;

CREATE TABLE idempotency_keys (
	client      TEXT NOT NULL,
	idem_key    TEXT NOT NULL,
	operation   TEXT NOT NULL DEFAULT '',
	digest      TEXT NOT NULL DEFAULT '',
	state       TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
	lease_until TEXT,
	status      INTEGER NOT NULL DEFAULT 0,
	outcome     TEXT NOT NULL DEFAULT '', -- the named outcome of the kept answer
	header      TEXT NOT NULL DEFAULT 'null', -- JSON object of string arrays
	body        BLOB,
	expires_at  TEXT, -- NULL while in flight; for a done key, never expires
	created_at  TEXT NOT NULL,
	PRIMARY KEY (client, idem_key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at) WHERE state = 'done';

CREATE TABLE audit_log (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	at          TEXT NOT NULL,
	client      TEXT NOT NULL DEFAULT '',
	operation   TEXT NOT NULL DEFAULT '',
	invoice_id  TEXT NOT NULL DEFAULT '',
	args_digest TEXT NOT NULL DEFAULT '',
	approval_id TEXT NOT NULL DEFAULT '',
	document    TEXT NOT NULL DEFAULT '',
	outcome     TEXT NOT NULL DEFAULT '',
	request_id  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_invoice ON audit_log (invoice_id, id);

-- The audit log is append-only: the database itself refuses to change or
-- remove a row, whoever asks.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
	SELECT RAISE(ABORT, 'audit_log is append-only');
END;
