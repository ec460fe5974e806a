-- A person's note on what they did (the resolution of a handover in the
-- console), kept in the audit log beside the write it explains.
ALTER TABLE audit_log ADD COLUMN note TEXT NOT NULL DEFAULT '';
