-- The gateway's records, PostgreSQL form. NULL is the zero time.

CREATE TABLE approvals (
	id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	invoice_id      TEXT NOT NULL DEFAULT '',
	fiscal_year     TEXT NOT NULL DEFAULT '',
	company_code    TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
	approver        TEXT NOT NULL DEFAULT '',
	proposed_action TEXT NOT NULL DEFAULT '',
	justification   TEXT NOT NULL DEFAULT '',
	amount          NUMERIC NOT NULL DEFAULT 0,
	currency        TEXT NOT NULL DEFAULT '',
	requested_by    TEXT NOT NULL DEFAULT '',
	requested_at    TIMESTAMPTZ,
	decided_by      TEXT NOT NULL DEFAULT '',
	decision_reason TEXT NOT NULL DEFAULT '',
	decided_at      TIMESTAMPTZ,
	dedupe          TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX approvals_dedupe ON approvals (dedupe) WHERE dedupe <> '';
CREATE INDEX approvals_invoice ON approvals (invoice_id, id);
CREATE INDEX approvals_status ON approvals (status, id);

CREATE TABLE holds (
	id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	invoice_id    TEXT NOT NULL DEFAULT '',
	fiscal_year   TEXT NOT NULL DEFAULT '',
	reason        TEXT NOT NULL DEFAULT '',
	recheck_at    TIMESTAMPTZ,
	next_check_at TIMESTAMPTZ,
	checks        INTEGER NOT NULL DEFAULT 0,
	awaiting      TEXT NOT NULL DEFAULT 'null', -- JSON array of {"po_id","item"}
	status        TEXT NOT NULL CHECK (status IN ('held', 'released')),
	created_by    TEXT NOT NULL DEFAULT '',
	created_at    TIMESTAMPTZ,
	released_at   TIMESTAMPTZ,
	dedupe        TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX holds_dedupe ON holds (dedupe) WHERE dedupe <> '';
CREATE INDEX holds_invoice ON holds (invoice_id, id);
CREATE INDEX holds_status ON holds (status, id);
CREATE INDEX holds_due ON holds (next_check_at, id) WHERE status = 'held';

CREATE TABLE hold_events (
	id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	hold_id BIGINT NOT NULL REFERENCES holds (id),
	at      TIMESTAMPTZ,
	kind    TEXT NOT NULL,
	note    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX hold_events_hold ON hold_events (hold_id, id);

CREATE TABLE handovers (
	id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	invoice_id  TEXT NOT NULL DEFAULT '',
	queue       TEXT NOT NULL DEFAULT '',
	code        TEXT NOT NULL DEFAULT '',
	summary     TEXT NOT NULL DEFAULT '',
	evidence    TEXT NOT NULL DEFAULT 'null', -- JSON array of strings
	history     TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL CHECK (status IN ('queued', 'taken', 'resolved')),
	created_by  TEXT NOT NULL DEFAULT '',
	created_at  TIMESTAMPTZ,
	taken_by    TEXT NOT NULL DEFAULT '',
	taken_at    TIMESTAMPTZ,
	resolved_by TEXT NOT NULL DEFAULT '',
	resolved_at TIMESTAMPTZ,
	note        TEXT NOT NULL DEFAULT '',
	dedupe      TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX handovers_dedupe ON handovers (dedupe) WHERE dedupe <> '';
CREATE INDEX handovers_queue ON handovers (queue, status, id);
CREATE INDEX handovers_status ON handovers (status, id);

CREATE TABLE deliveries (
	id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	kind         TEXT NOT NULL,
	record_id    TEXT NOT NULL,
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_at      TIMESTAMPTZ NOT NULL,
	delivered_at TIMESTAMPTZ,
	last_error   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX deliveries_due ON deliveries (next_at, id) WHERE delivered_at IS NULL;

CREATE TABLE idempotency_keys (
	client      TEXT NOT NULL,
	idem_key    TEXT NOT NULL,
	operation   TEXT NOT NULL DEFAULT '',
	digest      TEXT NOT NULL DEFAULT '',
	state       TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
	lease_until TIMESTAMPTZ,
	status      INTEGER NOT NULL DEFAULT 0,
	outcome     TEXT NOT NULL DEFAULT '', -- the named outcome of the kept answer
	header      TEXT NOT NULL DEFAULT 'null', -- JSON object of string arrays
	body        BYTEA,
	expires_at  TIMESTAMPTZ, -- NULL while in flight; for a done key, never expires
	created_at  TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (client, idem_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at) WHERE state = 'done';

CREATE TABLE audit_log (
	id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at          TIMESTAMPTZ NOT NULL,
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

-- The audit log is append-only: the database itself refuses to change,
-- remove or truncate rows, whoever asks.
CREATE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
