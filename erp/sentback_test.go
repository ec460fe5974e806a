package erp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// TestSendBack follows an approval sent back with a question: the agent
// meets the question wherever it uses the approval, posts nothing with it,
// and answers with a new request that a person approves.
func TestSendBack(t *testing.T) {
	ctx := context.Background()
	m := newMatchERP(1, true)
	m.inv.GrossAmount, m.inv.CompanyCode, m.inv.FiscalYear = d("13500.00"), "1010", "2026"
	store, _ := recordstest.SQLite(t)
	w := &writeReadERP{matchERP: m}
	p := erp.NewProcess(w, erp.ProcessOptions{Records: store})
	req := erp.ApprovalRequest{InvoiceID: m.inv.ID, ProposedAction: "accept_variance", Justification: "Surcharge.", Client: "agent"}
	a, err := p.RequestApproval(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	const question = "Which clause of the contract allows the surcharge?"

	var refused *erp.DecisionRefusedError
	if _, err := p.DecideApproval(ctx, a.ID, erp.Decision{Verdict: erp.SendBack, By: "agent", Reason: question}); !errors.As(err, &refused) ||
		refused.Reason != erp.DecisionSameRequester {
		t.Errorf("the requester sending it back: %v; want refused for segregation of duties", err)
	}
	if _, err := p.DecideApproval(ctx, a.ID, erp.Decision{Verdict: "maybe", By: "m.keller", Reason: question}); err == nil ||
		errors.As(err, &refused) {
		t.Errorf("an unknown verdict: %v; want an error that is no refusal", err)
	}
	back, err := p.DecideApproval(ctx, a.ID, erp.Decision{Verdict: erp.SendBack, By: "m.keller", Reason: question})
	if err != nil || back.Status != erp.ApprovalSentBack || back.DecidedBy != "m.keller" || back.DecisionReason != question {
		t.Fatalf("sent back: %+v, %v; want sent_back by m.keller with the question", back, err)
	}

	// The agent meets the question on the approval and on a post with it.
	read, err := p.Approval(ctx, a.ID)
	if err != nil || read.Status != erp.ApprovalSentBack {
		t.Fatalf("the approval read: %s, %v; want sent_back", read.Status, err)
	}
	var sent *erp.ApprovalSentBackError
	if !errors.As(read.SentBack(), &sent) || *sent != (erp.ApprovalSentBackError{ApprovalID: a.ID, InvoiceID: m.inv.ID,
		Question: question, AskedBy: "m.keller", AskedAt: back.DecidedAt}) || back.DecidedAt.IsZero() {
		t.Errorf("SentBack: %+v; want the question asked by m.keller at %v", sent, back.DecidedAt)
	}
	if _, _, err := p.PostInvoice(ctx, m.inv.ID, a.ID, ""); !errors.As(err, &sent) || sent.Question != question {
		t.Errorf("posting with the approval sent back: %v; want *ApprovalSentBackError", err)
	}
	if w.posts != 0 {
		t.Errorf("%d posts with the approval sent back, want none", w.posts)
	}
	// A decision stands.
	if _, err := p.DecideApproval(ctx, a.ID, erp.Decision{Verdict: erp.Approve, By: "j.doe", Reason: "fine"}); !errors.As(err, &refused) ||
		refused.Reason != erp.DecisionNotPending || refused.Status != erp.ApprovalSentBack {
		t.Errorf("approving the approval sent back: %v; want refused, not pending", err)
	}

	// The same proposal, the question answered, is a new approval.
	req.Justification = "Clause 4.2 of contract 4711 allows an 8 % surcharge on alloy prices."
	answer, err := p.RequestApproval(ctx, req)
	if err != nil || answer.ID == a.ID || answer.Status != erp.ApprovalPending || answer.Justification != req.Justification {
		t.Fatalf("the answer: %+v, %v; want a new pending approval with the answer", answer, err)
	}
	if answer.SentBack() != nil {
		t.Errorf("SentBack of a pending approval: %v, want nil", answer.SentBack())
	}
	if _, err := p.DecideApproval(ctx, answer.ID, erp.Decision{Verdict: erp.Approve, By: "m.keller", Reason: "Clause 4.2 confirmed."}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.PostInvoice(ctx, m.inv.ID, answer.ID, ""); err != nil || w.posts != 1 {
		t.Errorf("posting with the answer approved: %v, %d posts; want one", err, w.posts)
	}
}
