package erp_test

import (
	"context"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// writeReadERP is a matchERP whose invoice read can bring along what a
// write needs; it counts both kinds of read and the posts.
type writeReadERP struct {
	*matchERP
	reads, writeReads, posts int
}

func (w *writeReadERP) Invoice(ctx context.Context, id string) (erp.Invoice, error) {
	w.reads++
	return w.matchERP.Invoice(ctx, id)
}

func (w *writeReadERP) InvoiceForWrite(ctx context.Context, id string) (erp.Invoice, error) {
	w.writeReads++
	return w.matchERP.Invoice(ctx, id)
}

func (w *writeReadERP) PostInvoice(_ context.Context, inv erp.Invoice, _ string) (erp.Posting, error) {
	w.posts++
	return erp.Posting{InvoiceID: inv.ID, FiscalYear: inv.FiscalYear, Status: erp.InvoicePosted}, nil
}

// TestPostReadsForTheWrite: the post reads its invoice once, by the read
// that can bring the write's token along, and posts once.
func TestPostReadsForTheWrite(t *testing.T) {
	ctx := context.Background()
	m := newMatchERP(1, true)
	m.inv.GrossAmount, m.inv.CompanyCode, m.inv.FiscalYear = d("100.00"), "1010", "2026"
	w := &writeReadERP{matchERP: m}
	store, _ := recordstest.SQLite(t)
	p := erp.NewProcess(w, erp.ProcessOptions{Records: store})
	a, err := p.RequestApproval(ctx, erp.ApprovalRequest{InvoiceID: m.inv.ID, ProposedAction: "post_as_invoiced",
		Justification: "Matched.", Client: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	w.reads = 0
	if _, _, err := p.PostInvoice(ctx, m.inv.ID, a.ID, "k"); err != nil {
		t.Fatal(err)
	}
	if w.reads != 0 || w.writeReads != 1 || w.posts != 1 {
		t.Errorf("post: %d plain reads, %d reads for the write, %d posts; want 0, 1, 1", w.reads, w.writeReads, w.posts)
	}
}
