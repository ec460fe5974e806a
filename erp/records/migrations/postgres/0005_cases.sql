-- The invoice's case: one row per invoice, its state derived from the
-- records that bear on it, and a version that moves by one with every
-- transaction that changes any of them. A row is made the first time
-- anything locks or touches the case; invoices of older records have none
-- until then.
CREATE TABLE cases (
	invoice_id      TEXT PRIMARY KEY,
	state           TEXT NOT NULL,
	version         BIGINT NOT NULL DEFAULT 0,
	hold_id         TEXT NOT NULL DEFAULT '',
	approval_id     TEXT NOT NULL DEFAULT '',
	approval_status TEXT NOT NULL DEFAULT '',
	handover_id     TEXT NOT NULL DEFAULT '',
	handover_status TEXT NOT NULL DEFAULT '',
	posted          BOOLEAN NOT NULL DEFAULT false,
	calls           INTEGER NOT NULL DEFAULT 0,
	runs            INTEGER NOT NULL DEFAULT 0,
	last_run_id     TEXT NOT NULL DEFAULT '', -- the run of the latest counted call
	created_at      TIMESTAMPTZ,
	updated_at      TIMESTAMPTZ
);

CREATE TABLE case_events (
	id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	invoice_id TEXT NOT NULL,
	version    BIGINT NOT NULL,
	at         TIMESTAMPTZ,
	kind       TEXT NOT NULL,
	ref        TEXT NOT NULL DEFAULT '', -- the record's id
	note       TEXT NOT NULL DEFAULT '',
	run_id     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX case_events_invoice ON case_events (invoice_id, id);

-- An approval may be superseded.
ALTER TABLE approvals DROP CONSTRAINT approvals_status_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_status_check
	CHECK (status IN ('pending', 'approved', 'rejected', 'superseded'));
ALTER TABLE approvals ADD COLUMN superseded_by TEXT NOT NULL DEFAULT ''; -- the approval that superseded it

-- An invoice has one pending approval at most: the newest supersedes the
-- others, which give up their dedupe.
UPDATE approvals a SET status = 'superseded', dedupe = '',
	superseded_by = 'A' || repeat('0', 7 - length(n.newest::text)) || n.newest::text
FROM (SELECT invoice_id, MAX(id) AS newest FROM approvals WHERE status = 'pending' GROUP BY invoice_id) n
WHERE a.invoice_id = n.invoice_id AND a.status = 'pending' AND a.id < n.newest;
CREATE UNIQUE INDEX approvals_one_pending ON approvals (invoice_id) WHERE status = 'pending';

-- A hold may wait for an approval's decision and for a date besides goods
-- receipts, and names the run that placed it.
ALTER TABLE holds ADD COLUMN approval_id TEXT NOT NULL DEFAULT '';
ALTER TABLE holds ADD COLUMN until_at TIMESTAMPTZ;
ALTER TABLE holds ADD COLUMN run_id TEXT NOT NULL DEFAULT '';

-- An invoice has one held hold at most: the newest stays, the others are
-- released as merged into it.
CREATE TEMPORARY TABLE holds_merged ON COMMIT DROP AS
SELECT h.id, 'merged into H' || repeat('0', 7 - length(n.newest::text)) || n.newest::text AS note
FROM holds h
JOIN (SELECT invoice_id, MAX(id) AS newest FROM holds WHERE status = 'held' GROUP BY invoice_id) n
	ON h.invoice_id = n.invoice_id
WHERE h.status = 'held' AND h.id < n.newest;
INSERT INTO hold_events (hold_id, at, kind, note)
SELECT id, now(), 'closed', note FROM holds_merged ORDER BY id;
UPDATE holds SET status = 'released', released_at = now() WHERE id IN (SELECT id FROM holds_merged);
CREATE UNIQUE INDEX holds_one_held ON holds (invoice_id) WHERE status = 'held';

-- Every PO item a hold ever waited for, so that a goods receipt finds the
-- invoice that waits for it. Rows are added, never removed.
CREATE TABLE hold_items (
	hold_id    BIGINT NOT NULL REFERENCES holds (id),
	invoice_id TEXT NOT NULL,
	po_id      TEXT NOT NULL,
	item       TEXT NOT NULL,
	PRIMARY KEY (hold_id, po_id, item)
);
CREATE INDEX hold_items_item ON hold_items (po_id, item);
INSERT INTO hold_items (hold_id, invoice_id, po_id, item)
SELECT h.id, h.invoice_id, COALESCE(j.value ->> 'po_id', ''), COALESCE(j.value ->> 'item', '')
FROM holds h
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(h.awaiting::jsonb) = 'array'
	THEN h.awaiting::jsonb ELSE '[]'::jsonb END) AS j (value)
ON CONFLICT DO NOTHING;
