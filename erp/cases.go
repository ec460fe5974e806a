package erp

import (
	"context"
	"errors"

	"github.com/erpgate/erpgate/erp/records"
)

// WithRunID marks ctx as a call of the agent run id, so that the records
// the call makes (a hold, a posting, their case events) name the run that
// made them.
func WithRunID(ctx context.Context, id string) context.Context { return records.WithRunID(ctx, id) }

// RunIDFrom returns the run id WithRunID set, or "".
func RunIDFrom(ctx context.Context) string { return records.RunIDFrom(ctx) }

// caseEvents is how many of a case's events Case returns.
const caseEvents = 200

// Case returns the invoice's case with its events, oldest first. An invoice
// nothing has happened to yet has an open case at version 0, if the ERP
// knows it; otherwise it is a *NotFoundError.
func (p *Process) Case(ctx context.Context, invoiceID string) (Case, error) {
	c, err := p.records.Case(ctx, invoiceID)
	switch {
	case errors.Is(err, records.ErrNotFound):
		c = records.Case{InvoiceID: invoiceID, State: records.CaseOpen}
	case err != nil:
		return Case{}, err
	}
	if c.Version == 0 {
		// A case no record has touched yet may be one of an invoice the ERP
		// does not know: the gateway opens one for every invoice an agent
		// calls about.
		if _, err := p.client.Invoice(ctx, invoiceID); err != nil {
			return Case{}, err
		}
	}
	out := caseFrom(c)
	if c.Version == 0 {
		return out, nil
	}
	evs, err := p.records.CaseEvents(ctx, invoiceID, caseEvents)
	if err != nil {
		return Case{}, err
	}
	for _, ev := range evs {
		out.Events = append(out.Events, CaseEvent{Version: ev.Version, At: ev.At, Kind: ev.Kind,
			Ref: ev.Ref, Note: ev.Note, RunID: ev.RunID})
	}
	return out, nil
}

func caseFrom(c records.Case) Case {
	return Case{
		InvoiceID: c.InvoiceID, State: c.State, Version: c.Version, HoldID: c.HoldID,
		ApprovalID: c.ApprovalID, ApprovalStatus: ApprovalStatus(c.ApprovalStatus),
		HandoverID: c.HandoverID, HandoverStatus: c.HandoverStatus, Posted: c.Posted,
		Calls: c.Calls, Runs: c.Runs, UpdatedAt: c.UpdatedAt,
	}
}
