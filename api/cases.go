package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
)

type caseReader interface {
	Case(ctx context.Context, invoiceID string) (erp.Case, error)
}

// handleGetCase answers the invoice's case: its state, its version, the
// records it holds open, its history, and the call that moves it on.
func handleGetCase(cases caseReader) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id, err := invoiceParam(r)
		if err != nil {
			return nil, err
		}
		c, err := cases.Case(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return toCase(c), nil
	}
}

type holdReader interface {
	Hold(ctx context.Context, id string) (erp.Hold, error)
}

// handleGetHold answers a hold: its state, what it waits for, and its
// events.
func handleGetHold(holds holdReader) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id := chi.URLParam(r, "hold_id")
		if err := checkID("hold_id", id, holdIDPattern, "the hold_id returned by hold_invoice, e.g. H0000001"); err != nil {
			return nil, err
		}
		h, err := holds.Hold(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return toHold(h), nil
	}
}

// Hold statuses as agents see them: a hold that ended because its invoice
// was posted or is gone is closed, not released.
const (
	holdHeld     = "held"
	holdReleased = "released"
	holdClosed   = "closed"
)

func toHold(h erp.Hold) holdResponse {
	out := holdResponse{HoldID: h.ID, InvoiceID: h.InvoiceID, Status: holdHeld, Reason: h.Reason,
		RecheckAt: dateTime(h.RecheckAt), Checks: h.Checks, RunID: h.RunID, CreatedAt: dateTime(h.CreatedAt),
		ReleasedAt: dateTime(h.ReleasedAt),
		WaitsFor:   holdWaitsFor{GoodsReceipts: []poItemRecord{}, ApprovalID: h.ApprovalID, Until: dateTime(h.Until)}}
	for _, a := range h.Awaiting {
		out.WaitsFor.GoodsReceipts = append(out.WaitsFor.GoodsReceipts, poItemRecord{POID: a.POID, Item: a.Item})
	}
	if h.Released {
		out.Status = holdReleased
		if n := len(h.Events); n > 0 && h.Events[n-1].Kind == holdClosed {
			out.Status = holdClosed
		}
	} else {
		out.NextCheckAt = dateTime(h.NextCheckAt)
	}
	for _, ev := range h.Events {
		out.Events = append(out.Events, holdEventRecord{At: dateTime(ev.At), Kind: ev.Kind, Note: ev.Note})
	}
	return out
}

func toCase(c erp.Case) caseResponse {
	out := caseResponse{InvoiceID: c.InvoiceID, State: c.State, Version: c.Version, HoldID: c.HoldID,
		ApprovalID: c.ApprovalID, ApprovalStatus: string(c.ApprovalStatus), HandoverID: c.HandoverID,
		HandoverStatus: c.HandoverStatus, Posted: c.Posted, Calls: c.Calls, Runs: c.Runs,
		UpdatedAt: dateTime(c.UpdatedAt), Next: nextFor(c), Events: []caseEventRecord{}}
	for _, ev := range c.Events {
		out.Events = append(out.Events, caseEventRecord{Version: ev.Version, At: dateTime(ev.At), Kind: ev.Kind,
			Ref: ev.Ref, Note: ev.Note, RunID: ev.RunID})
	}
	return out
}

// nextFor is the call that moves the case on, as a webhook receiver or an
// agent resuming a run reads it. It is advice: the gateway's answers to
// the calls themselves stay the authority.
func nextFor(c erp.Case) caseNext {
	inv := c.InvoiceID
	switch c.State {
	case records.CasePosted:
		return caseNext{Operation: "none", Why: "Invoice " + inv + " is posted."}
	case records.CaseHandedOver:
		return caseNext{Operation: "none", Why: "A person has invoice " + inv + " (handover " + c.HandoverID + ")."}
	case records.CaseResolved:
		return caseNext{Operation: "none", Why: "A person resolved handover " + c.HandoverID + " of invoice " + inv + "."}
	case records.CaseOnHold:
		return caseNext{Operation: opGetHold.name, Method: http.MethodGet, Path: "/holds/" + c.HoldID,
			Why: "Invoice " + inv + " waits on hold " + c.HoldID + "; go on once it is released."}
	case records.CaseAwaitingApproval:
		return caseNext{Operation: opHoldInvoice.name, Method: http.MethodPost, Path: "/invoices/" + inv + "/hold",
			ApprovalID: c.ApprovalID, Why: "Approval " + c.ApprovalID + " awaits a person: hold the invoice until the decision."}
	case records.CaseReady:
		return caseNext{Operation: opPostInvoice.name, Method: http.MethodPost, Path: "/invoices/" + inv + "/post",
			ApprovalID: c.ApprovalID, Why: "Approval " + c.ApprovalID + " is approved: post the invoice with it."}
	}
	if c.ApprovalStatus == erp.ApprovalSentBack {
		return caseNext{Operation: opGetApproval.name, Method: http.MethodGet, Path: "/approvals/" + c.ApprovalID,
			ApprovalID: c.ApprovalID, Why: "Approval " + c.ApprovalID + " was sent back with a question: read it (get_approval), then request approval again answering it."}
	}
	if c.ApprovalStatus == erp.ApprovalRejected {
		return caseNext{Operation: opHandOver.name, Method: http.MethodPost, Path: "/handovers",
			ApprovalID: c.ApprovalID, Why: "Approval " + c.ApprovalID + " was rejected: hand the invoice over with the reason (get_approval)."}
	}
	return caseNext{Operation: opThreeWayMatch.name, Method: http.MethodPost, Path: "/invoices/" + inv + "/three-way-match",
		Why: "Match invoice " + inv + " against its purchase order and goods receipts."}
}
