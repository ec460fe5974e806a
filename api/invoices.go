package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/errmap"
)

const invoiceIDForm = "10 digits, e.g. 5105600101"

func invoiceParam(r *http.Request) (string, error) {
	id := chi.URLParam(r, "invoice_id")
	return id, checkID("invoice_id", id, invoiceIDPattern, invoiceIDForm)
}

func handleGetInvoice(invoices erp.Invoices) opFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		inv, err := invoices.Invoice(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return toInvoice(inv), nil
	}
}

type matcher interface {
	ThreeWayMatch(ctx context.Context, invoiceID string) (erp.MatchResult, error)
}

func handleThreeWayMatch(m matcher) opFunc {
	return func(r *http.Request, body []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		var req matchRequest
		if err := decode(r, body, &req, true); err != nil {
			return nil, err
		}
		res, err := m.ThreeWayMatch(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return toMatch(res), nil
	}
}

type approvalRequester interface {
	RequestApproval(ctx context.Context, invoiceID, action, justification string, corrected *decimal.Decimal, key string) (erp.Approval, error)
}

// proposedActions are the fixes an agent can ask a person to approve.
var proposedActions = []string{"post_as_invoiced", "accept_variance", "correct_amount"}

func handleRequestApproval(a approvalRequester) opFunc {
	return func(r *http.Request, body []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		var req approvalRequest
		if err := decode(r, body, &req, false); err != nil {
			return nil, err
		}
		if err := checkOneOf("proposed_action", req.ProposedAction, proposedActions); err != nil {
			return nil, err
		}
		if err := checkText("justification", req.Justification, 3, 500); err != nil {
			return nil, err
		}
		var corrected *decimal.Decimal
		switch {
		case req.CorrectedAmount != "":
			if !amountPattern.MatchString(req.CorrectedAmount) {
				return nil, errmap.Invalid("corrected_amount", "must be a decimal amount such as 12500.00")
			}
			d := decimal.RequireFromString(req.CorrectedAmount)
			corrected = &d
		case req.ProposedAction == "correct_amount":
			return nil, errmap.Invalid("corrected_amount", "is required when proposed_action is correct_amount")
		}
		appr, err := a.RequestApproval(r.Context(), id, req.ProposedAction, req.Justification, corrected, idempotencyKeyOf(r, req.IdempotencyKey))
		if err != nil {
			return nil, err
		}
		return toApproval(appr), nil
	}
}

type poster interface {
	PostInvoice(ctx context.Context, invoiceID, approvalID, key string) (erp.Posting, erp.Approval, error)
}

func handlePostInvoice(p poster) opFunc {
	return func(r *http.Request, body []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		var req postRequest
		if err := decode(r, body, &req, true); err != nil {
			return nil, err
		}
		if req.ApprovalID != "" {
			if err := checkID("approval_id", req.ApprovalID, approvalIDPattern, "the approval_id returned by request_approval"); err != nil {
				return nil, err
			}
		}
		posting, _, err := p.PostInvoice(r.Context(), id, req.ApprovalID, idempotencyKeyOf(r, req.IdempotencyKey))
		if err != nil {
			return nil, err
		}
		return postingResponse{InvoiceID: posting.InvoiceID, FiscalYear: posting.FiscalYear,
			Status: string(erp.InvoicePosted), ApprovalID: req.ApprovalID, AlreadyPosted: posting.AlreadyPosted,
			PaymentBlock: posting.PaymentBlock, InfoCode: string(errmap.Info(posting.Messages, posting.PaymentBlock))}, nil
	}
}

type holder interface {
	HoldInvoice(ctx context.Context, invoiceID, reason string, recheckAt time.Time, key string) (erp.Hold, error)
}

// defaultRecheck is how long a hold lasts when the agent names no time.
const defaultRecheck = 24 * time.Hour

// handleHoldInvoice records the hold in the ERP, then queues it for the
// scheduled re-check of its goods receipt. The ERP holds the record, so a
// hold the queue did not take is still answered as held; the failure is
// logged as an error for a person to re-check that invoice.
func handleHoldInvoice(h holder, q recheck.Queue, m *Metrics, log *slog.Logger, now func() time.Time) opFunc {
	return func(r *http.Request, body []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		var req holdRequest
		if err := decode(r, body, &req, false); err != nil {
			return nil, err
		}
		if err := checkText("reason", req.Reason, 3, 200); err != nil {
			return nil, err
		}
		recheckAt := now().Add(defaultRecheck).UTC().Truncate(time.Second)
		if req.RecheckAt != "" {
			if recheckAt, err = checkTime("recheck_at", req.RecheckAt, now()); err != nil {
				return nil, err
			}
		}
		hold, err := h.HoldInvoice(r.Context(), id, req.Reason, recheckAt, idempotencyKeyOf(r, req.IdempotencyKey))
		if err != nil {
			return nil, err
		}
		m.holds.WithLabelValues("placed").Inc()
		if err := q.Add(r.Context(), recheck.Entry{HoldID: hold.ID, InvoiceID: id, FiscalYear: hold.FiscalYear,
			RecheckAt: hold.RecheckAt}); err != nil {
			log.ErrorContext(r.Context(), "hold not queued for its re-check", "request_id", RequestIDFromContext(r.Context()),
				"hold_id", hold.ID, "invoice_id", id, "error", err)
		}
		return holdResponse{HoldID: hold.ID, InvoiceID: id, Status: string(erp.InvoiceHeld),
			Reason: hold.Reason, RecheckAt: dateTime(hold.RecheckAt)}, nil
	}
}

// idempotencyKeyOf is the key the ERP is given as its repeatability id.
func idempotencyKeyOf(r *http.Request, body string) string {
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		return k
	}
	return body
}
