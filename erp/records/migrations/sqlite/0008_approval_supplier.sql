-- An approval keeps the supplier of its invoice, so that the approvers'
-- queue can be filtered by supplier without asking the ERP. Approvals
-- requested before keep an empty supplier.
ALTER TABLE approvals ADD COLUMN supplier_id TEXT NOT NULL DEFAULT '';
CREATE INDEX approvals_supplier ON approvals (supplier_id, id);
