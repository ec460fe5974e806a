-- The invoice's case: one row per invoice, its state derived from the
-- records that bear on it, and a version that moves by one with every
-- transaction that changes any of them. A row is made the first time
-- anything locks or touches the case; invoices of older records have none
-- until then.
CREATE TABLE cases (
	invoice_id      TEXT PRIMARY KEY,
	state           TEXT NOT NULL,
	version         INTEGER NOT NULL DEFAULT 0,
	hold_id         TEXT NOT NULL DEFAULT '',
	approval_id     TEXT NOT NULL DEFAULT '',
	approval_status TEXT NOT NULL DEFAULT '',
	handover_id     TEXT NOT NULL DEFAULT '',
	handover_status TEXT NOT NULL DEFAULT '',
	posted          INTEGER NOT NULL DEFAULT 0 CHECK (posted IN (0, 1)),
	calls           INTEGER NOT NULL DEFAULT 0,
	runs            INTEGER NOT NULL DEFAULT 0,
	last_run_id     TEXT NOT NULL DEFAULT '', -- the run of the latest counted call
	created_at      TEXT,
	updated_at      TEXT
) WITHOUT ROWID;

CREATE TABLE case_events (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	invoice_id TEXT NOT NULL,
	version    INTEGER NOT NULL,
	at         TEXT,
	kind       TEXT NOT NULL,
	ref        TEXT NOT NULL DEFAULT '', -- the record's id
	note       TEXT NOT NULL DEFAULT '',
	run_id     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX case_events_invoice ON case_events (invoice_id, id);

-- An approval may be superseded. A CHECK constraint cannot be altered in
-- SQLite: the table is made anew with it, its rows and its sequence
-- copied over.
CREATE TABLE approvals_new (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	invoice_id      TEXT NOT NULL DEFAULT '',
	fiscal_year     TEXT NOT NULL DEFAULT '',
	company_code    TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'superseded')),
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
	dedupe          TEXT NOT NULL DEFAULT '',
	superseded_by   TEXT NOT NULL DEFAULT '' -- the approval that superseded it
);
INSERT INTO approvals_new (id, invoice_id, fiscal_year, company_code, status, approver, proposed_action,
	justification, amount, currency, requested_by, requested_at, decided_by, decision_reason, decided_at, dedupe)
SELECT id, invoice_id, fiscal_year, company_code, status, approver, proposed_action,
	justification, amount, currency, requested_by, requested_at, decided_by, decision_reason, decided_at, dedupe
FROM approvals;
-- An id once given is never given again, also when its row is gone.
DELETE FROM sqlite_sequence WHERE name = 'approvals_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'approvals_new', seq FROM sqlite_sequence WHERE name = 'approvals';
DROP TABLE approvals;
ALTER TABLE approvals_new RENAME TO approvals;
CREATE UNIQUE INDEX approvals_dedupe ON approvals (dedupe) WHERE dedupe <> '';
CREATE INDEX approvals_invoice ON approvals (invoice_id, id);
CREATE INDEX approvals_status ON approvals (status, id);

-- An invoice has one pending approval at most: the newest supersedes the
-- others, which give up their dedupe.
UPDATE approvals SET status = 'superseded', dedupe = '',
	superseded_by = 'A' || printf('%07d', (SELECT MAX(n.id) FROM approvals n
		WHERE n.invoice_id = approvals.invoice_id AND n.status = 'pending'))
WHERE status = 'pending' AND id < (SELECT MAX(n.id) FROM approvals n
	WHERE n.invoice_id = approvals.invoice_id AND n.status = 'pending');
CREATE UNIQUE INDEX approvals_one_pending ON approvals (invoice_id) WHERE status = 'pending';

-- A hold may wait for an approval's decision and for a date besides goods
-- receipts, and names the run that placed it.
ALTER TABLE holds ADD COLUMN approval_id TEXT NOT NULL DEFAULT '';
ALTER TABLE holds ADD COLUMN until_at TEXT;
ALTER TABLE holds ADD COLUMN run_id TEXT NOT NULL DEFAULT '';

-- An invoice has one held hold at most: the newest stays, the others are
-- released as merged into it.
CREATE TEMP TABLE holds_merged AS
SELECT id, strftime('%Y-%m-%dT%H:%M:%f000Z', 'now') AS at,
	'merged into H' || printf('%07d', (SELECT MAX(n.id) FROM holds n
		WHERE n.invoice_id = holds.invoice_id AND n.status = 'held')) AS note
FROM holds
WHERE status = 'held' AND id < (SELECT MAX(n.id) FROM holds n
	WHERE n.invoice_id = holds.invoice_id AND n.status = 'held');
INSERT INTO hold_events (hold_id, at, kind, note) SELECT id, at, 'closed', note FROM holds_merged ORDER BY id;
UPDATE holds SET status = 'released', released_at = (SELECT m.at FROM holds_merged m WHERE m.id = holds.id)
WHERE id IN (SELECT id FROM holds_merged);
DROP TABLE holds_merged;
CREATE UNIQUE INDEX holds_one_held ON holds (invoice_id) WHERE status = 'held';

-- Every PO item a hold ever waited for, so that a goods receipt finds the
-- invoice that waits for it. Rows are added, never removed.
CREATE TABLE hold_items (
	hold_id    INTEGER NOT NULL REFERENCES holds (id),
	invoice_id TEXT NOT NULL,
	po_id      TEXT NOT NULL,
	item       TEXT NOT NULL,
	PRIMARY KEY (hold_id, po_id, item)
) WITHOUT ROWID;
CREATE INDEX hold_items_item ON hold_items (po_id, item);
INSERT OR IGNORE INTO hold_items (hold_id, invoice_id, po_id, item)
SELECT h.id, h.invoice_id, COALESCE(json_extract(j.value, '$.po_id'), ''), COALESCE(json_extract(j.value, '$.item'), '')
FROM holds h, json_each(CASE WHEN json_valid(h.awaiting) AND json_type(h.awaiting) = 'array' THEN h.awaiting ELSE '[]' END) j;
