-- One write at a time per invoice, across replicas: a write that targets an
-- invoice holds its row until it ends, or until lease_until, after which a
-- replica that died holding it no longer blocks the invoice.
CREATE TABLE invoice_leases (
	invoice_id  TEXT PRIMARY KEY,
	holder      TEXT NOT NULL,
	operation   TEXT NOT NULL DEFAULT '',
	lease_until TIMESTAMPTZ NOT NULL
);
