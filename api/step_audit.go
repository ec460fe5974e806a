package api

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp/records"
)

// auditWrite composes the audit log's row of every write that ran, once
// the run guard has recorded it; the idempotency step writes it when it
// settles the call, in the same transaction as the key's answer. Reads
// leave the step out.
func (s *Server) auditWrite(o operation, next callHandler) callHandler {
	if !o.write {
		return next
	}
	return func(c *operationCall) *response {
		resp := next(c)
		if c.ran {
			e := s.auditEntry(c.r, o, c.runCall.InvoiceID, c.digest, c.value, resp)
			if o.name == opDecideApproval.name {
				e.Note = decisionNote(c.args)
			}
			c.audit = &e
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

// auditEntry is the audit log's row of a write attempt: who, what, about
// which invoice, with which arguments, and what came of it.
func (s *Server) auditEntry(r *http.Request, o operation, invoiceID, digest string, v any, resp *response) records.AuditEntry {
	rec := recordFrom(r.Context())
	e := records.AuditEntry{At: s.now().UTC(), Client: rec.client, Operation: o.name, InvoiceID: invoiceID,
		ArgsDigest: digest, Outcome: resp.code, RequestID: RequestIDFromContext(r.Context())}
	if a, ok := v.(audited); ok && resp.status < 400 {
		e.ApprovalID, e.Document = a.audited()
	}
	// A decision is about the approval in its path, and through it about
	// an invoice: the row names both, so that the invoice's audit trail
	// shows who approved it. A refused decision names the approval it was
	// refused on when the path held an approval id at all.
	if id := chi.URLParam(r, "approval_id"); e.ApprovalID == "" && (resp.status < 400 || approvalIDPattern.MatchString(id)) {
		e.ApprovalID = id
	}
	if a, ok := v.(approvalResponse); ok && e.InvoiceID == "" {
		e.InvoiceID = a.InvoiceID
	}
	return e
}

// decisionNote is the note of a decide_approval row: the decision as the
// person sent it and their reason, "approve: Surcharge confirmed with the
// supplier.", so that the log says which decision and why, whatever the
// decision. A refused call's row says what was asked. Each part is cut to
// the length decide_approval takes; a body that names no decision leaves
// the note empty.
func decisionNote(a args) string {
	decision := clip(a.str("decision"), 40)
	if decision == "" {
		return ""
	}
	return decision + ": " + clip(strings.TrimSpace(a.str("reason")), 500)
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
