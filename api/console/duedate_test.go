package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// noBaseline is the ERP as a system that gives no baseline date, and no
// terms of payment at all when noTerms.
type noBaseline struct {
	erp.Client
	noTerms bool
}

func (c noBaseline) Invoice(ctx context.Context, id string) (erp.Invoice, error) {
	inv, err := c.Client.Invoice(ctx, id)
	inv.BaselineDate = time.Time{}
	if c.noTerms {
		inv.PaymentTerms, inv.CashDiscount1Days, inv.CashDiscount2Days, inv.NetPaymentDays = "", 0, 0, 0
	}
	return inv, err
}

// TestApprovalPageWithoutDueDate: when the ERP gives no baseline date the
// approval page says the due date is not known, with the terms of payment
// when there are any, and shows the rest of the header as before.
func TestApprovalPageWithoutDueDate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noTerms bool
		want    string
	}{
		{"terms without a baseline date", false, `<dd id="due-date">not known: the ERP gives no baseline date, terms of payment ZB01</dd>`},
		{"no terms at all", true, `<dd id="due-date">not known: the ERP gives no baseline date</dd>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newERPSite(t, func(c erp.Client) erp.Client { return noBaseline{Client: c, noTerms: tc.noTerms} })
			id := s.requestApproval("accept_variance")
			b := s.browser()
			b.signIn(doeKey)
			p := b.get("/console/approvals/" + id)
			if p.status != http.StatusOK {
				t.Fatalf("approval page: %d %s", p.status, p.body)
			}
			wantAll(t, "the approval page", p, tc.want, "<dt>Document date</dt><dd>2026-11-21</dd>", `<dd id="gross">13,500.00 EUR</dd>`)
			if strings.Contains(p.body, "2026-12-21") {
				t.Error("the page shows a due date the ERP did not give")
			}
		})
	}
}
