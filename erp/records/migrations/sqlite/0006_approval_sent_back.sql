-- A person may send an approval back to the agent with a question: the
-- approval is then sent_back, no longer pending, and its decision_reason is
-- the question. A CHECK constraint cannot be altered in SQLite: the table
-- is made anew with it, its rows, indexes and sequence copied over.
CREATE TABLE approvals_new (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	invoice_id      TEXT NOT NULL DEFAULT '',
	fiscal_year     TEXT NOT NULL DEFAULT '',
	company_code    TEXT NOT NULL DEFAULT '',
	status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'superseded', 'sent_back')),
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
	justification, amount, currency, requested_by, requested_at, decided_by, decision_reason, decided_at, dedupe,
	superseded_by)
SELECT id, invoice_id, fiscal_year, company_code, status, approver, proposed_action,
	justification, amount, currency, requested_by, requested_at, decided_by, decision_reason, decided_at, dedupe,
	superseded_by
FROM approvals;
-- An id once given is never given again, also when its row is gone.
DELETE FROM sqlite_sequence WHERE name = 'approvals_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'approvals_new', seq FROM sqlite_sequence WHERE name = 'approvals';
DROP TABLE approvals;
ALTER TABLE approvals_new RENAME TO approvals;
CREATE UNIQUE INDEX approvals_dedupe ON approvals (dedupe) WHERE dedupe <> '';
CREATE INDEX approvals_invoice ON approvals (invoice_id, id);
CREATE INDEX approvals_status ON approvals (status, id);
CREATE UNIQUE INDEX approvals_one_pending ON approvals (invoice_id) WHERE status = 'pending';
