package erp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

func TestRouting(t *testing.T) {
	r := erp.DefaultRouting
	r.CompanyCodes = map[string]erp.RoutingRules{"2010": {AutoApproveLimit: d("500"),
		Bands: []erp.Band{{UpTo: d("5000"), Group: "cfo"}}}}
	for _, c := range []struct {
		cc, amount, want string
		ok               bool
	}{
		{"1010", "1000.00", erp.AutoApprover, true},
		{"1010", "10000.00", erp.AutoApprover, true},
		{"1010", "10000.01", "ap_manager", true},
		{"1010", "13500.00", "ap_manager", true},
		{"1010", "150000.00", "finance_director", true},
		{"1010", "200000.00", "finance_director", true},
		{"1010", "250000.00", "", false},
		{"2010", "400", erp.AutoApprover, true},
		{"2010", "1000", "cfo", true},
		{"2010", "5000.01", "", false},
	} {
		got, ok := r.Route(c.cc, d(c.amount))
		if got != c.want || ok != c.ok {
			t.Errorf("Route(%s, %s) = %q, %v; want %q, %v", c.cc, c.amount, got, ok, c.want, c.ok)
		}
	}
	if err := r.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseRouting(t *testing.T) {
	r, err := erp.ParseRouting([]byte(`{"default":{"auto_approve_limit":"100","bands":[{"up_to":"1000","group":"ap_manager"}]},
		"company_codes":{"1010":{"auto_approve_limit":"0","bands":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := r.Route("1010", d("0.01")); ok || g != "" {
		t.Errorf("1010 with no bands: Route = %q, %v; want no approver", g, ok)
	}
	if g, _ := r.Route("9999", d("500")); g != "ap_manager" {
		t.Errorf("default band: %q", g)
	}
	for name, bad := range map[string]string{
		"unknown field":        `{"default":{"auto_approve_limit":"1","bandz":[]}}`,
		"bands not rising":     `{"default":{"auto_approve_limit":"100","bands":[{"up_to":"1000","group":"a"},{"up_to":"900","group":"b"}]}}`,
		"band under the limit": `{"default":{"auto_approve_limit":"100","bands":[{"up_to":"50","group":"a"}]}}`,
		"group not a name":     `{"default":{"auto_approve_limit":"1","bands":[{"up_to":"5","group":"AP Manager"}]}}`,
		"group auto":           `{"default":{"auto_approve_limit":"1","bands":[{"up_to":"5","group":"auto"}]}}`,
		"negative limit":       `{"default":{"auto_approve_limit":"-1","bands":[]}}`,
		"bad company code":     `{"default":{"auto_approve_limit":"1"},"company_codes":{"10-10":{"auto_approve_limit":"1"}}}`,
		"two values":           `{"default":{"auto_approve_limit":"1"}} {}`,
	} {
		if _, err := erp.ParseRouting([]byte(bad)); err == nil {
			t.Errorf("%s: ParseRouting accepted %s", name, bad)
		}
	}
}

// approvalProcess is a Process over one invoice of the given gross amount
// and a fresh SQLite store.
func approvalProcess(t *testing.T, gross string) *erp.Process {
	t.Helper()
	m := newMatchERP(1, true)
	m.inv.GrossAmount, m.inv.CompanyCode, m.inv.FiscalYear = d(gross), "1010", "2026"
	store, _ := recordstest.SQLite(t)
	return erp.NewProcess(m, erp.ProcessOptions{Records: store})
}

func TestRequestApproval(t *testing.T) {
	ctx := context.Background()
	ask := func(p *erp.Process, action string, corrected *decimal.Decimal) (erp.Approval, error) {
		return p.RequestApproval(ctx, erp.ApprovalRequest{InvoiceID: "5105600101", ProposedAction: action,
			Justification: "Match is clean.", Corrected: corrected, Client: "agent"})
	}
	auto, err := ask(approvalProcess(t, "1000.00"), "post_as_invoiced", nil)
	if err != nil || auto.Status != erp.ApprovalApproved || auto.Approver != erp.AutoApprover || auto.DecidedBy != erp.AutoApprover ||
		auto.DecidedAt.IsZero() || auto.RequestedBy != "agent" || auto.ID != "A0000001" {
		t.Errorf("within the limit: %+v, %v; want A0000001 approved by auto at once", auto, err)
	}

	p := approvalProcess(t, "13500.00")
	pending, err := ask(p, "accept_variance", nil)
	if err != nil || pending.Status != erp.ApprovalPending || pending.Approver != "ap_manager" || !pending.DecidedAt.IsZero() {
		t.Fatalf("above the limit: %+v, %v; want pending for ap_manager", pending, err)
	}
	again, err := ask(p, "accept_variance", nil)
	if err != nil || again.ID != pending.ID {
		t.Errorf("the same proposal again: %s, %v; want the same approval %s", again.ID, err, pending.ID)
	}
	other, err := ask(p, "post_as_invoiced", nil)
	if err != nil || other.ID == pending.ID {
		t.Errorf("another action: %s, %v; want a new approval", other.ID, err)
	}
	small := d("900.00")
	corrected, err := ask(p, "correct_amount", &small)
	if err != nil || corrected.Status != erp.ApprovalApproved || !corrected.Amount.Equal(small) {
		t.Errorf("a corrected amount within the limit: %+v, %v; want approved on 900.00", corrected, err)
	}

	_, err = ask(approvalProcess(t, "250000.00"), "post_as_invoiced", nil)
	var none *erp.NoApproverError
	if !errors.As(err, &none) || none.InvoiceID != "5105600101" || none.CompanyCode != "1010" {
		t.Errorf("above every band: %v; want a *NoApproverError", err)
	}
}

func TestDecideApproval(t *testing.T) {
	ctx := context.Background()
	p := approvalProcess(t, "13500.00")
	a, err := p.RequestApproval(ctx, erp.ApprovalRequest{InvoiceID: "5105600101", ProposedAction: "accept_variance",
		Justification: "Surcharge.", Client: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	var refused *erp.DecisionRefusedError
	_, err = p.DecideApproval(ctx, a.ID, erp.Decision{Verdict: erp.Approve, By: "agent", Reason: "mine"})
	if !errors.As(err, &refused) || refused.Reason != erp.DecisionSameRequester || refused.Approver != "ap_manager" {
		t.Fatalf("the requester deciding: %v; want refused for segregation of duties", err)
	}
	if got, _ := p.Approval(ctx, a.ID); got.Status != erp.ApprovalPending {
		t.Errorf("after a refused decision the approval is %s, want still pending", got.Status)
	}
	got, err := p.DecideApproval(ctx, a.ID, erp.Decision{Verdict: erp.Approve, By: "m.keller", Reason: "Surcharge confirmed."})
	if err != nil || got.Status != erp.ApprovalApproved || got.DecidedBy != "m.keller" || got.DecisionReason != "Surcharge confirmed." {
		t.Fatalf("a person deciding: %+v, %v", got, err)
	}
	_, err = p.DecideApproval(ctx, a.ID, erp.Decision{Verdict: erp.Reject, By: "j.doe", Reason: "changed my mind"})
	if !errors.As(err, &refused) || refused.Reason != erp.DecisionNotPending || refused.Status != erp.ApprovalApproved {
		t.Errorf("a second decision: %v; want refused, the first stands", err)
	}
	var nf *erp.NotFoundError
	if _, err := p.DecideApproval(ctx, "A0009999", erp.Decision{Verdict: erp.Approve, By: "m.keller", Reason: "x"}); !errors.As(err, &nf) {
		t.Errorf("an unknown approval: %v; want *NotFoundError", err)
	}
	if _, err := p.Approval(ctx, "not-an-id"); !errors.As(err, &nf) {
		t.Errorf("a malformed id: %v; want *NotFoundError", err)
	}
}

func TestHoldInvoice(t *testing.T) {
	ctx := context.Background()
	m := newMatchERP(2, true)
	m.receipts[m.inv.Lines[1].POID+"/10"] = nil // the second line's goods have not arrived
	store, _ := recordstest.SQLite(t)
	p := erp.NewProcess(m, erp.ProcessOptions{Records: store})
	req := erp.HoldRequest{InvoiceID: m.inv.ID, Reason: "No goods receipt yet", RecheckAt: time.Now().Add(24 * time.Hour),
		Client: "agent", RunID: "run-1"}
	h, err := p.HoldInvoice(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := []erp.POItemRef{{POID: m.inv.Lines[1].POID, Item: "10"}}
	if len(h.Awaiting) != 1 || h.Awaiting[0] != want[0] || h.Released || h.CreatedBy != "agent" {
		t.Errorf("hold %+v; want it awaiting %v", h, want)
	}
	again, err := p.HoldInvoice(ctx, req)
	if err != nil || again.ID != h.ID || again.Created || !h.Created {
		t.Errorf("the same request again: %s (created %v), %v; want hold %s, not made again", again.ID, again.Created, err, h.ID)
	}
	m.inv.Status = erp.InvoicePosted
	var posted *erp.InvoicePostedError
	if _, err := p.HoldInvoice(ctx, req); !errors.As(err, &posted) {
		t.Errorf("holding a posted invoice: %v; want *InvoicePostedError", err)
	}
}

func TestNotParkedInvoiceIsNeitherPostedNorHeld(t *testing.T) {
	ctx := context.Background()
	for _, st := range []erp.InvoiceStatus{erp.InvoiceReversed, erp.InvoiceDeleted, erp.InvoiceOther} {
		m := newMatchERP(1, true)
		m.inv.GrossAmount, m.inv.CompanyCode, m.inv.Status, m.inv.SAPStatus = d("100.00"), "1010", st, "X"
		store, _ := recordstest.SQLite(t)
		p := erp.NewProcess(m, erp.ProcessOptions{Records: store})
		a, err := p.RequestApproval(ctx, erp.ApprovalRequest{InvoiceID: m.inv.ID, ProposedAction: "post_as_invoiced",
			Justification: "Matched.", Client: "agent"})
		if err != nil {
			t.Fatal(err)
		}
		var np *erp.InvoiceNotParkedError
		if _, _, err := p.PostInvoice(ctx, m.inv.ID, a.ID, ""); !errors.As(err, &np) || np.Status != st || np.SAPStatus != "X" {
			t.Errorf("posting a %s invoice: %v; want *InvoiceNotParkedError", st, err)
		}
		if _, err := p.HoldInvoice(ctx, erp.HoldRequest{InvoiceID: m.inv.ID, Reason: "waiting", RecheckAt: time.Now().Add(time.Hour)}); !errors.As(err, &np) {
			t.Errorf("holding a %s invoice: %v; want *InvoiceNotParkedError", st, err)
		}
	}
}

// TestPostNeedsTheApprovedAmount checks that an invoice is posted only while
// it holds the amount its approval was for: one changed in the ERP since,
// or a correct_amount approval whose correction the ERP does not hold yet,
// is APPROVAL_MISSING with reason amount_differs, and nothing is posted.
func TestPostNeedsTheApprovedAmount(t *testing.T) {
	ctx := context.Background()
	m := newMatchERP(1, true)
	m.inv.GrossAmount, m.inv.CompanyCode, m.inv.FiscalYear, m.inv.Currency = d("1000.00"), "1010", "2026", "EUR"
	store, _ := recordstest.SQLite(t)
	w := &writeReadERP{matchERP: m}
	p := erp.NewProcess(w, erp.ProcessOptions{Records: store})
	// Each approval in turn: approving one supersedes the other.
	small := d("900.00")
	var fix erp.Approval
	for _, req := range []erp.ApprovalRequest{
		{InvoiceID: m.inv.ID, ProposedAction: "post_as_invoiced", Justification: "Matched.", Client: "agent"},
		{InvoiceID: m.inv.ID, ProposedAction: "correct_amount", Justification: "Price per contract.", Corrected: &small, Client: "agent"},
	} {
		m.inv.GrossAmount = d("1000.00")
		a, err := p.RequestApproval(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		fix = a
		m.inv.GrossAmount = d("1200.00") // changed in the ERP after the approval
		var missing *erp.ApprovalMissingError
		_, _, err = p.PostInvoice(ctx, m.inv.ID, a.ID, "")
		if !errors.As(err, &missing) || missing.Reason != erp.ApprovalAmountDiffers ||
			!missing.Approved.Amount.Equal(a.Amount) || !missing.Invoiced.Amount.Equal(d("1200.00")) {
			t.Errorf("posting under %s (%s): %v; want amount_differs", a.ID, a.Amount, err)
		}
	}
	if w.posts != 0 {
		t.Errorf("%d posts, want none", w.posts)
	}
	m.inv.GrossAmount = small // the correction is made in the ERP
	if _, _, err := p.PostInvoice(ctx, m.inv.ID, fix.ID, ""); err != nil || w.posts != 1 {
		t.Errorf("posting under the correction once the ERP holds it: %v, %d posts; want one", err, w.posts)
	}
}
