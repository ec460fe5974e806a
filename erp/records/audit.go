package records

import (
	"context"
)

// AppendAudit adds a row to the audit log; the database refuses to change
// or remove one.
func (s *sqlStore) AppendAudit(ctx context.Context, e AuditEntry) error {
	return opErr("append audit", s.appendAudit(ctx, s.w, e))
}

// appendAudit is AppendAudit on q.
func (s *sqlStore) appendAudit(ctx context.Context, q querier, e AuditEntry) error {
	_, err := s.appendAuditStmt(e).exec(ctx, s, q)
	return err
}

func (s *sqlStore) appendAuditStmt(e AuditEntry) stmt {
	return stmt{`INSERT INTO audit_log (at, client, operation, invoice_id, args_digest,
		approval_id, document, outcome, request_id, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{s.d.timeArg(nowIfZero(e.At)), e.Client, e.Operation, e.InvoiceID, e.ArgsDigest, e.ApprovalID,
			e.Document, e.Outcome, e.RequestID, e.Note}}
}

// Audit returns the audit rows f selects, newest first.
func (s *sqlStore) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	var w where
	if f.InvoiceID != "" {
		w.add("invoice_id = ?", f.InvoiceID)
	}
	if f.Client != "" {
		w.add("client = ?", f.Client)
	}
	if f.Operation != "" {
		w.add("operation = ?", f.Operation)
	}
	if !f.From.IsZero() {
		w.add("at >= ?", s.d.timeArg(f.From))
	}
	if !f.To.IsZero() {
		w.add("at < ?", s.d.timeArg(f.To))
	}
	if f.BeforeID > 0 {
		w.add("id < ?", f.BeforeID)
	}
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT id, at, client, operation, invoice_id, args_digest,
		approval_id, document, outcome, request_id, note FROM audit_log`+w.String()+" ORDER BY id DESC LIMIT ?"),
		append(w.args, pageLimit(f.Limit, defaultAudit, maxAudit))...)
	if err != nil {
		return nil, opErr("read audit", err)
	}
	es, err := collect(rows, func(sc scanner) (AuditEntry, error) {
		var e AuditEntry
		err := sc.Scan(&e.ID, timeCol{&e.At}, &e.Client, &e.Operation, &e.InvoiceID, &e.ArgsDigest,
			&e.ApprovalID, &e.Document, &e.Outcome, &e.RequestID, &e.Note)
		return e, err
	})
	return es, opErr("read audit", err)
}
