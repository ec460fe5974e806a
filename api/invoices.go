package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

const invoiceIDForm = "10 digits, e.g. 5105600101"

func invoiceParam(r *http.Request) (string, error) {
	id := chi.URLParam(r, "invoice_id")
	return id, checkID("invoice_id", id, invoiceIDPattern, invoiceIDForm)
}

func handleGetInvoice(invoices erp.Invoices) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		// The invoice read is the ERP's, kept for the run's match and
		// approval request that follow.
		inv, err := invoices.Invoice(erp.KeepRunRead(r.Context(), runReadKey(r.Context())), id)
		if err != nil {
			return nil, err
		}
		return toInvoice(inv), nil
	}
}

// runReadKey names the request's run for the invoice reads its steps share
// (erp.RunReads): the client and the run id, so that no client sees
// another's reads; "" without a run id.
func runReadKey(ctx context.Context) string {
	run := RunIDFromContext(ctx)
	if run == "" {
		return ""
	}
	return recordFrom(ctx).client + "\x00" + run
}

type matcher interface {
	ThreeWayMatch(ctx context.Context, invoiceID string) (erp.MatchResult, error)
}

func handleThreeWayMatch(m matcher) operationFunc {
	return func(r *http.Request, body []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		var req matchRequest
		if err := decode(r, body, &req, true); err != nil {
			return nil, err
		}
		res, err := m.ThreeWayMatch(erp.ShareRunRead(r.Context(), runReadKey(r.Context())), id)
		if err != nil {
			return nil, err
		}
		return toMatch(res), nil
	}
}

type approvalRequester interface {
	RequestApproval(ctx context.Context, req erp.ApprovalRequest) (erp.Approval, error)
}

// proposedActions are the fixes an agent can ask a person to approve.
var proposedActions = []string{"post_as_invoiced", "accept_variance", "correct_amount"}

func handleRequestApproval(a approvalRequester) operationFunc {
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
		appr, err := a.RequestApproval(erp.ShareRunRead(r.Context(), runReadKey(r.Context())), erp.ApprovalRequest{InvoiceID: id, ProposedAction: req.ProposedAction,
			Justification: req.Justification, Corrected: corrected, Client: recordFrom(r.Context()).client})
		if err != nil {
			return nil, err
		}
		return toApproval(appr), nil
	}
}

type poster interface {
	PostInvoice(ctx context.Context, invoiceID, approvalID, key string) (erp.Posting, erp.Approval, error)
}

// handlePostInvoice posts the invoice. A call that took its key over from
// one that never finished (its gateway died) and finds the invoice posted,
// with no other call's posting in the audit log, answers as the first call
// would have: that call posted it.
func handlePostInvoice(p poster, audit auditReader) operationFunc {
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
		posting, _, err := p.PostInvoice(r.Context(), id, req.ApprovalID, repeatabilityOf(r))
		if err != nil {
			return nil, err
		}
		if rec := recordFrom(r.Context()); posting.AlreadyPosted && rec.takenOver {
			byOther, err := postedByOther(r.Context(), audit, id, rec.client, rec.digest)
			if err != nil {
				return nil, err
			}
			posting.AlreadyPosted = byOther
		}
		return postingResponse{InvoiceID: posting.InvoiceID, FiscalYear: posting.FiscalYear,
			Status: string(erp.InvoicePosted), ApprovalID: req.ApprovalID, AlreadyPosted: posting.AlreadyPosted,
			PaymentBlock: posting.PaymentBlock, InfoCode: string(errmap.Info(posting.Messages, posting.PaymentBlock))}, nil
	}
}

type holder interface {
	HoldInvoice(ctx context.Context, req erp.HoldRequest) (erp.Hold, error)
}

// defaultRecheck is how long a hold lasts when the agent names no time.
const defaultRecheck = 24 * time.Hour

// handleHoldInvoice keeps the parked invoice waiting in the gateway's
// records for what it needs: its goods receipts (the re-check scheduler
// releases it when they arrive), its pending approval's decision (which
// releases it at once), or the re-check time. An invoice has one open hold:
// a second request, whatever its key, answers that hold.
func handleHoldInvoice(h holder, m *Metrics, now func() time.Time) operationFunc {
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
		rec := recordFrom(r.Context())
		hold, err := h.HoldInvoice(r.Context(), erp.HoldRequest{InvoiceID: id, Reason: req.Reason, RecheckAt: recheckAt,
			Client: rec.client, RunID: rec.run})
		if err != nil {
			return nil, err
		}
		if hold.Created {
			m.holds.WithLabelValues("placed").Inc()
		}
		return toHold(hold), nil
	}
}

// postedByOther says whether the audit log has a finished posting of the
// invoice by another call than this client's with these arguments.
func postedByOther(ctx context.Context, audit auditReader, invoiceID, client, digest string) (bool, error) {
	entries, err := audit.Audit(ctx, records.AuditFilter{InvoiceID: invoiceID, Limit: 1000})
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		finished := e.Outcome == OutcomeOK || e.Outcome == string(errmap.ToleranceExceeded)
		if e.Operation == opPostInvoice.name && finished && (e.Client != client || e.ArgsDigest != digest) {
			return true, nil
		}
	}
	return false, nil
}
