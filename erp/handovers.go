package erp

import (
	"context"

	"github.com/erpgate/erpgate/erp/records"
)

// HandOver routes the invoice to a person's queue, in the gateway's
// records; "done" means stored. A configured webhook is told through the
// records' outbox, in the same transaction. The invoice must exist in the
// ERP unless mayBeUnknown is set: an invoice the ERP does not know is
// itself something a person has to sort out.
func (p *Process) HandOver(ctx context.Context, req HandoverRequest, mayBeUnknown bool) (Handover, error) {
	if !mayBeUnknown {
		if _, err := p.client.Invoice(ctx, req.InvoiceID); err != nil {
			return Handover{}, err
		}
	}
	rec := records.Handover{
		InvoiceID: req.InvoiceID, Queue: req.Queue, Code: req.Code, Summary: req.Summary,
		Evidence: req.Evidence, History: req.History, Status: records.HandoverQueued,
		CreatedBy: req.Client, CreatedAt: p.now().UTC(), Dedupe: req.Dedupe,
	}
	h, _, err := p.records.CreateHandover(ctx, rec, p.notifyHandovers)
	if err != nil {
		return Handover{}, err
	}
	return HandoverFrom(h), nil
}

// HandoverFrom converts a stored handover.
func HandoverFrom(h records.Handover) Handover {
	return Handover{
		ID: h.ID, InvoiceID: h.InvoiceID, Queue: h.Queue, Code: h.Code, Summary: h.Summary,
		Evidence: h.Evidence, History: h.History, Status: h.Status, CreatedBy: h.CreatedBy,
		CreatedAt: h.CreatedAt, TakenBy: h.TakenBy, TakenAt: h.TakenAt, ResolvedBy: h.ResolvedBy,
		ResolvedAt: h.ResolvedAt, Note: h.Note,
	}
}
