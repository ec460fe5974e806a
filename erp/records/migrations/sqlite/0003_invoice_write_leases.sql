-- One write at a time per invoice, across replicas: a write that targets an
-- invoice holds its row until it ends, or until lease_until, after which a
-- replica that died holding it no longer blocks the invoice. takeovers
-- counts the holders whose lease lapsed before the current one took it.
CREATE TABLE invoice_leases (
	invoice_id  TEXT PRIMARY KEY,
	holder      TEXT NOT NULL,
	operation   TEXT NOT NULL DEFAULT '',
	takeovers   INTEGER NOT NULL DEFAULT 0,
	lease_until TEXT NOT NULL
) WITHOUT ROWID;
