package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// The operations of people, apart from the agents' tools: approvers decide
// pending approvals, the AP team lists handovers, auditors read the log.

type approvalDecider interface {
	DecideApproval(ctx context.Context, id string, d erp.Decision) (erp.Approval, error)
}

// decisions are the answers a person can give: approve, reject, or
// send_back, whose reason is the question for the agent.
var decisions = []string{string(erp.Approve), string(erp.Reject), string(erp.SendBack)}

// handleDecideApproval records a person's decision. The decider is always
// the client, a person known by their key (or the console's person signed
// in with theirs); the body names no one. The requester cannot decide.
func handleDecideApproval(d approvalDecider, kick func()) operationFunc {
	return func(r *http.Request, body []byte) (any, error) {
		id := chi.URLParam(r, "approval_id")
		if err := checkID("approval_id", id, approvalIDPattern, "the approval_id returned by request_approval"); err != nil {
			return nil, err
		}
		var req decisionRequest
		if err := decode(r, body, &req, false); err != nil {
			return nil, err
		}
		if err := checkOneOf("decision", req.Decision, decisions); err != nil {
			return nil, err
		}
		if err := checkText("reason", req.Reason, 3, 500); err != nil {
			return nil, err
		}
		by := recordFrom(r.Context()).client
		a, err := d.DecideApproval(r.Context(), id, erp.Decision{Verdict: erp.Verdict(req.Decision), By: by, Reason: req.Reason})
		if err != nil {
			return nil, err
		}
		// The decision may have released a hold and queued its event for
		// the agent's platform: the outbox sends it now, not at its tick.
		kick()
		return toApproval(a), nil
	}
}

type approvalLister interface {
	ListApprovals(ctx context.Context, f records.ApprovalFilter) ([]records.Approval, error)
}

var approvalStatuses = []string{records.ApprovalPending, records.ApprovalApproved, records.ApprovalRejected, records.ApprovalSuperseded,
	records.ApprovalSentBack}

// handleListApprovals lists approvals, newest first: by default the ones
// pending a decision.
func handleListApprovals(l approvalLister) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		q := r.URL.Query()
		status := q.Get("status")
		if status == "" {
			status = records.ApprovalPending
		}
		if err := checkOneOf("status", status, approvalStatuses); err != nil {
			return nil, err
		}
		page, err := pageOf(q.Get("limit"), q.Get("after"), approvalIDPattern)
		if err != nil {
			return nil, err
		}
		list, err := l.ListApprovals(r.Context(), records.ApprovalFilter{Status: status, Page: page})
		if err != nil {
			return nil, err
		}
		out := approvalListResponse{Approvals: make([]approvalResponse, 0, len(list))}
		for _, a := range list {
			out.Approvals = append(out.Approvals, toApproval(erp.ApprovalFrom(a)))
		}
		if len(list) == page.Limit {
			out.Next = list[len(list)-1].ID
		}
		return out, nil
	}
}

type handoverLister interface {
	ListHandovers(ctx context.Context, f records.HandoverFilter) ([]records.Handover, error)
}

var handoverStatuses = []string{records.HandoverQueued, records.HandoverTaken, records.HandoverResolved}

// handleListHandovers lists handovers by queue and status, newest first,
// for people and ticketing systems.
func handleListHandovers(l handoverLister) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		q := r.URL.Query()
		f := records.HandoverFilter{Queue: q.Get("queue"), Status: q.Get("status")}
		if f.Queue != "" {
			if err := checkOneOf("queue", f.Queue, errmap.Queues); err != nil {
				return nil, err
			}
		}
		if f.Status != "" {
			if err := checkOneOf("status", f.Status, handoverStatuses); err != nil {
				return nil, err
			}
		}
		page, err := pageOf(q.Get("limit"), q.Get("after"), handoverIDPattern)
		if err != nil {
			return nil, err
		}
		f.Page = page
		list, err := l.ListHandovers(r.Context(), f)
		if err != nil {
			return nil, err
		}
		out := handoverListResponse{Handovers: make([]handoverRecord, 0, len(list))}
		for _, h := range list {
			out.Handovers = append(out.Handovers, toHandoverRecord(erp.HandoverFrom(h)))
		}
		if len(list) == page.Limit {
			out.Next = list[len(list)-1].ID
		}
		return out, nil
	}
}

type auditReader interface {
	Audit(ctx context.Context, f records.AuditFilter) ([]records.AuditEntry, error)
}

// handleGetAudit reads the audit log, newest first, of one invoice or of
// all.
func handleGetAudit(a auditReader) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		q := r.URL.Query()
		f := records.AuditFilter{InvoiceID: q.Get("invoice_id")}
		if f.InvoiceID != "" {
			if err := checkID("invoice_id", f.InvoiceID, invoiceIDPattern, invoiceIDForm); err != nil {
				return nil, err
			}
		}
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return nil, errmap.Invalid("limit", "must be a whole number from 1 to 1000")
			}
			f.Limit = n
		}
		if v := q.Get("before"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return nil, errmap.Invalid("before", "must be the id of an audit entry")
			}
			f.BeforeID = n
		}
		list, err := a.Audit(r.Context(), f)
		if err != nil {
			return nil, err
		}
		out := auditResponse{Entries: make([]auditEntry, 0, len(list))}
		for _, e := range list {
			out.Entries = append(out.Entries, auditEntry{ID: e.ID, At: dateTime(e.At), Client: e.Client,
				Operation: e.Operation, InvoiceID: e.InvoiceID, ArgsDigest: e.ArgsDigest, ApprovalID: e.ApprovalID,
				Document: e.Document, Outcome: e.Outcome, RequestID: e.RequestID, Note: e.Note})
		}
		return out, nil
	}
}

// pageOf reads a list's limit (1 to 500, default 50) and cursor.
func pageOf(limit, after string, idPattern interface{ MatchString(string) bool }) (records.Page, error) {
	p := records.Page{Limit: 50, After: after}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > 500 {
			return p, errmap.Invalid("limit", "must be a whole number from 1 to 500")
		}
		p.Limit = n
	}
	if after != "" && !idPattern.MatchString(after) {
		return p, errmap.Invalid("after", "must be the next cursor of the page before")
	}
	return p, nil
}
