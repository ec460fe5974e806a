package api

import (
	"cmp"
	"context"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
)

func handleGetApproval(approvals erp.Approvals) opFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id := chi.URLParam(r, "approval_id")
		if err := checkID("approval_id", id, approvalIDPattern, "the approval_id returned by request_approval"); err != nil {
			return nil, err
		}
		a, err := approvals.Approval(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return toApproval(a), nil
	}
}

type handOverer interface {
	HandOver(ctx context.Context, req erp.HandoverRequest) (erp.Handover, error)
}

func handleHandOver(h handOverer) opFunc {
	return func(r *http.Request, body []byte) (any, error) {
		var req handoverRequest
		if err := decode(r, body, &req, false); err != nil {
			return nil, err
		}
		if err := checkID("invoice_id", req.InvoiceID, invoiceIDPattern, invoiceIDForm); err != nil {
			return nil, err
		}
		if req.Code != "" {
			if _, ok := errmap.Lookup(errmap.Code(req.Code)); !ok {
				return nil, errmap.Invalid("code", "must be one of the codes in the contract's Error schema")
			}
		}
		// Without a queue the handover goes where its code is routed, and
		// to the AP queue when the code routes nowhere.
		queue := req.Queue
		if queue == "" {
			e, _ := errmap.Lookup(errmap.Code(req.Code))
			queue = cmp.Or(e.Queue, errmap.QueueAP)
		}
		if !slices.Contains(errmap.Queues, queue) {
			return nil, checkOneOf("queue", queue, errmap.Queues)
		}
		if err := checkText("summary", req.Summary, 3, 2000); err != nil {
			return nil, err
		}
		if len(req.Evidence) > 20 {
			return nil, errmap.Invalid("evidence", "holds more than 20 items")
		}
		for _, ev := range req.Evidence {
			if err := checkText("evidence", ev, 1, 1000); err != nil {
				return nil, err
			}
		}
		ho, err := h.HandOver(r.Context(), erp.HandoverRequest{InvoiceID: req.InvoiceID, Queue: queue, Code: req.Code,
			Summary: req.Summary, Evidence: req.Evidence, IdempotencyKey: idempotencyKeyOf(r, req.IdempotencyKey)})
		if err != nil {
			return nil, err
		}
		return handoverResponse{HandoverID: ho.ID, InvoiceID: req.InvoiceID, Queue: ho.Queue,
			Status: "queued", CreatedAt: dateTime(ho.CreatedAt)}, nil
	}
}
