package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp/records"
)

// auditWrite appends the audit log's row of every write that ran, once the
// run guard has recorded it. Reads leave the step out.
func (s *Server) auditWrite(o operation, next callHandler) callHandler {
	if !o.write {
		return next
	}
	return func(c *operationCall) *response {
		resp := next(c)
		if c.ran {
			s.audit(c.r, o, c.runCall.InvoiceID, c.digest, c.value, resp)
		}
		return resp
	}
}

// audited is a success body that names what its write created or touched,
// for the audit log.
type audited interface {
	audited() (approvalID, document string)
}

func (a approvalResponse) audited() (string, string) { return a.ApprovalID, a.ApprovalID }
func (p postingResponse) audited() (string, string) {
	return p.ApprovalID, p.InvoiceID + "/" + p.FiscalYear
}
func (h holdResponse) audited() (string, string)     { return "", h.HoldID }
func (h handoverResponse) audited() (string, string) { return "", h.HandoverID }

// audit appends one row to the audit log for a write attempt: who, what,
// about which invoice, with which arguments, and what came of it. The row
// is written even when the request's context has ended.
func (s *Server) audit(r *http.Request, o operation, invoiceID, digest string, v any, resp *response) {
	rec := recordFrom(r.Context())
	e := records.AuditEntry{At: s.now().UTC(), Client: rec.client, Operation: o.name, InvoiceID: invoiceID,
		ArgsDigest: digest, Outcome: resp.code, RequestID: RequestIDFromContext(r.Context())}
	if a, ok := v.(audited); ok && resp.status < 400 {
		e.ApprovalID, e.Document = a.audited()
	}
	// A decision is about the approval in its path, and through it about
	// an invoice: the row names both, so that the invoice's audit trail
	// shows who approved it.
	if e.ApprovalID == "" && resp.status < 400 {
		e.ApprovalID = chi.URLParam(r, "approval_id")
	}
	if a, ok := v.(approvalResponse); ok && e.InvoiceID == "" {
		e.InvoiceID = a.InvoiceID
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := s.records.AppendAudit(ctx, e); err != nil {
		s.log.ErrorContext(r.Context(), "audit row not written", "request_id", e.RequestID, "operation", o.name,
			"invoice_id", invoiceID, "error", err)
	}
}
