package sap

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// RequestApproval submits an approval request to the process service's
// ApprovalSet. Without a fiscal year the invoice is read first to learn it.
// A non-empty IdempotencyKey is sent as a Repeatability-Request-ID derived
// from it.
func (c *Client) RequestApproval(ctx context.Context, req erp.ApprovalRequest) (erp.Approval, error) {
	fy, err := c.fiscalYear(ctx, req.InvoiceID, req.FiscalYear)
	if err != nil {
		return erp.Approval{}, err
	}
	body := wireApprovalRequest{
		SupplierInvoice: req.InvoiceID,
		FiscalYear:      fy,
		ProposedAction:  req.ProposedAction,
		Justification:   req.Justification,
		Amount:          formatAmount(req.Amount),
		Currency:        req.Currency,
	}
	return create(ctx, c, "request approval", "ApprovalSet", body, req.InvoiceID, req.IdempotencyKey, wireApproval.toDomain)
}

// Approval returns the approval with the given id, or a *erp.NotFoundError.
func (c *Client) Approval(ctx context.Context, id string) (erp.Approval, error) {
	r := request{
		call:     retry.Call{Service: erp.ServiceProcess, Operation: "read approval"},
		method:   http.MethodGet,
		url:      c.url(erp.ServiceProcess, entityKey("ApprovalSet", id)),
		keys:     map[string]string{"approval_id": id},
		notFound: &erp.NotFoundError{Entity: erp.EntityApproval, ID: id},
	}
	return fetchEntity(ctx, c, r, wireApproval.toDomain)
}

// HoldInvoice records a hold in the process service's HoldSet, which blocks
// the invoice for payment until the re-check. Without a fiscal year the
// invoice is read first to learn it.
func (c *Client) HoldInvoice(ctx context.Context, req erp.HoldRequest) (erp.Hold, error) {
	fy, err := c.fiscalYear(ctx, req.InvoiceID, req.FiscalYear)
	if err != nil {
		return erp.Hold{}, err
	}
	body := wireHoldRequest{
		SupplierInvoice: req.InvoiceID,
		FiscalYear:      fy,
		Reason:          req.Reason,
		RecheckAt:       sapDate{req.RecheckAt},
	}
	return create(ctx, c, "hold invoice", "HoldSet", body, req.InvoiceID, req.IdempotencyKey, wireHold.toDomain)
}

// HandOver stores a handover in the process service's HandoverSet.
func (c *Client) HandOver(ctx context.Context, req erp.HandoverRequest) (erp.Handover, error) {
	body := wireHandoverRequest{
		SupplierInvoice: req.InvoiceID,
		Queue:           req.Queue,
		Code:            req.Code,
		Summary:         req.Summary,
		Evidence:        req.Evidence,
		History:         req.History,
	}
	if body.Evidence == nil {
		body.Evidence = []string{}
	}
	return create(ctx, c, "hand over", "HandoverSet", body, req.InvoiceID, req.IdempotencyKey, wireHandover.toDomain)
}

// create POSTs body to an entity set of the process service and converts
// the created entity. A 404 means the invoice is unknown.
func create[B, W, D any](ctx context.Context, c *Client, op, set string, body B, invoiceID, key string, conv func(W) (D, error)) (D, error) {
	var v D
	data, err := json.Marshal(body)
	if err != nil {
		return v, err
	}
	r := request{
		call:     retry.Call{Service: erp.ServiceProcess, Operation: op, Write: true, Idempotent: true},
		method:   http.MethodPost,
		url:      c.url(erp.ServiceProcess, set),
		body:     data,
		header:   repeatabilityHeader(op, key),
		keys:     map[string]string{"invoice_id": invoiceID},
		notFound: &erp.NotFoundError{Entity: erp.EntityInvoice, ID: invoiceID},
	}
	_, err = c.write(ctx, r, func(_ http.Header, b []byte) error {
		var w W
		if err := decodeEntity(b, &w); err != nil {
			return err
		}
		d, err := conv(w)
		if err != nil {
			return err
		}
		v = d
		return nil
	})
	return v, err
}

// ReleaseHold ends a hold with the process service's ReleaseHold function
// import, POST ReleaseHold?HoldID='H0000001', which puts the invoice back
// to parked and lifts its payment block. Only h.ID is sent; h.InvoiceID
// goes into errors. An unknown hold is a *erp.NotFoundError for
// erp.EntityHold. The ERP answers a hold released before with success, so
// the call is idempotent by itself: each call carries a fresh
// Repeatability-Request-ID, kept across its retry attempts, rather than
// one derived from the hold, whose first answer the ERP would otherwise
// replay for good, failure or not.
func (c *Client) ReleaseHold(ctx context.Context, h erp.Hold) error {
	const op = "release hold"
	keys := map[string]string{"hold_id": h.ID}
	if h.InvoiceID != "" {
		keys["invoice_id"] = h.InvoiceID
	}
	r := request{
		call:     retry.Call{Service: erp.ServiceProcess, Operation: op, Write: true, Idempotent: true},
		method:   http.MethodPost,
		url:      c.url(erp.ServiceProcess, "ReleaseHold", param{"HoldID", literal(h.ID)}),
		header:   repeatabilityHeader(op, ""),
		keys:     keys,
		notFound: &erp.NotFoundError{Entity: erp.EntityHold, ID: h.ID},
	}
	_, err := c.write(ctx, r, func(_ http.Header, body []byte) error {
		w, err := decodeReleaseHold(body)
		if err == nil && w.HoldID != "" && w.HoldID != h.ID {
			err = fmt.Errorf("released hold %q, want %q", w.HoldID, h.ID)
		}
		return err
	})
	return err
}
