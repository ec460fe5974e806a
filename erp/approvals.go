package erp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/erpgate/erpgate/erp/records"
)

// RequestApproval asks the approval routing to decide on a proposed action,
// and keeps the request in the gateway's records. The amount decided on is
// the corrected amount when the fix changes it, else the invoice's gross
// amount. Within the company code's auto-approve limit the approval is
// granted at once; above it, it waits for a person of the band's approver
// group; above every band it is a *NoApproverError. The same proposal for
// the same invoice (action and amount) is the same approval: asking again
// returns it as it stands. An invoice has at most one open approval: a
// different proposal supersedes the pending one, and one granted at once
// supersedes every other (records.Store.CreateApproval).
func (p *Process) RequestApproval(ctx context.Context, req ApprovalRequest) (Approval, error) {
	inv, err := p.client.Invoice(ctx, req.InvoiceID)
	if err != nil {
		return Approval{}, err
	}
	amount := inv.GrossAmount
	if req.Corrected != nil {
		amount = *req.Corrected
	}
	group, ok := p.routing.Route(inv.CompanyCode, amount)
	if !ok {
		return Approval{}, &NoApproverError{InvoiceID: inv.ID, CompanyCode: inv.CompanyCode, Amount: amount}
	}
	now := p.now().UTC()
	rec := records.Approval{
		InvoiceID: inv.ID, FiscalYear: inv.FiscalYear, CompanyCode: inv.CompanyCode,
		Status: records.ApprovalPending, Approver: group, ProposedAction: req.ProposedAction,
		Justification: req.Justification, Amount: amount, Currency: inv.Currency,
		RequestedBy: req.Client, RequestedAt: now, SupplierID: inv.SupplierID,
		Dedupe: Digest("approval", inv.ID, inv.FiscalYear, req.ProposedAction, amount.String(), inv.Currency),
	}
	if group == AutoApprover {
		rec.Status, rec.DecidedBy, rec.DecidedAt = records.ApprovalApproved, AutoApprover, now
		rec.DecisionReason = "within the auto-approve limit"
	}
	a, _, err := p.records.CreateApproval(ctx, rec, p.notifyApprovals && rec.Status == records.ApprovalPending)
	if err != nil {
		return Approval{}, err
	}
	return ApprovalFrom(a), nil
}

// Approval returns the approval with the given id, or a *NotFoundError.
func (p *Process) Approval(ctx context.Context, id string) (Approval, error) {
	a, err := p.records.Approval(ctx, id)
	if errors.Is(err, records.ErrNotFound) {
		return Approval{}, &NotFoundError{Entity: EntityApproval, ID: id}
	}
	if err != nil {
		return Approval{}, err
	}
	return ApprovalFrom(a), nil
}

// decisionStatus is the status each verdict gives an approval.
var decisionStatus = map[Verdict]string{
	Approve:  records.ApprovalApproved,
	Reject:   records.ApprovalRejected,
	SendBack: records.ApprovalSentBack,
}

// DecideApproval records a person's decision on a pending approval:
// approved, rejected, or sent back to the agent with a question. The
// requester cannot decide their own request, a decision stands, and a
// superseded approval is no longer decidable: each is a
// *DecisionRefusedError. An unknown id is a *NotFoundError. Approving one
// supersedes the invoice's other approvals, and the decision releases the
// hold that waited for it, in the same transaction.
func (p *Process) DecideApproval(ctx context.Context, id string, d Decision) (Approval, error) {
	status, ok := decisionStatus[d.Verdict]
	if !ok {
		return Approval{}, fmt.Errorf("decide approval %s: %q is not a verdict", id, d.Verdict)
	}
	a, err := p.records.DecideApproval(ctx, id, status, d.By, d.Reason, p.now().UTC())
	switch {
	case errors.Is(err, records.ErrNotFound):
		return Approval{}, &NotFoundError{Entity: EntityApproval, ID: id}
	case errors.Is(err, records.ErrNotPending) && a.Status == records.ApprovalSuperseded:
		return ApprovalFrom(a), &DecisionRefusedError{ApprovalID: id, Reason: DecisionSuperseded,
			Status: ApprovalSuperseded, Approver: a.Approver, SupersededBy: a.SupersededBy}
	case errors.Is(err, records.ErrNotPending):
		return ApprovalFrom(a), &DecisionRefusedError{ApprovalID: id, Reason: DecisionNotPending,
			Status: ApprovalStatus(a.Status), Approver: a.Approver}
	case errors.Is(err, records.ErrSameRequester):
		cur, gerr := p.records.Approval(ctx, id)
		if gerr != nil {
			return Approval{}, gerr
		}
		return ApprovalFrom(cur), &DecisionRefusedError{ApprovalID: id, Reason: DecisionSameRequester,
			Status: ApprovalStatus(cur.Status), Approver: cur.Approver}
	case err != nil:
		return Approval{}, err
	}
	return ApprovalFrom(a), nil
}

// SentBack returns the *ApprovalSentBackError an agent meets on an
// approval a person sent back, with the question; nil for any other
// status. get_approval and post_invoice answer it, since what the agent
// must do is the same wherever it meets the approval: answer the question
// in a new request.
func (a Approval) SentBack() error {
	if a.Status != ApprovalSentBack {
		return nil
	}
	return &ApprovalSentBackError{ApprovalID: a.ID, InvoiceID: a.InvoiceID, Question: a.DecisionReason,
		AskedBy: a.DecidedBy, AskedAt: a.DecidedAt}
}

// ApprovalFrom converts a stored approval.
func ApprovalFrom(a records.Approval) Approval {
	return Approval{
		ID: a.ID, InvoiceID: a.InvoiceID, FiscalYear: a.FiscalYear, CompanyCode: a.CompanyCode,
		Status: ApprovalStatus(a.Status), Approver: a.Approver, ProposedAction: a.ProposedAction,
		Justification: a.Justification, Amount: a.Amount, Currency: a.Currency,
		RequestedBy: a.RequestedBy, RequestedAt: a.RequestedAt, DecidedBy: a.DecidedBy,
		DecisionReason: a.DecisionReason, DecidedAt: a.DecidedAt, SupersededBy: a.SupersededBy,
	}
}

// Digest is a stable hex digest of parts, for the deduplication keys of
// records and the ERP's repeatability ids.
func Digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
