package sap

import (
	"context"
	"errors"
	"testing"

	"github.com/erpgate/erpgate/erp"
)

// TestInvoiceAnswerAboutAnotherInvoice: an answer about another invoice
// than the one asked for is the ERP's fault, never taken for the invoice;
// among several, the one asked for is taken.
func TestInvoiceAnswerAboutAnotherInvoice(t *testing.T) {
	f := newFake(t, respond(200, list(invoiceJSON("5105600102", "2026", "A", ""))))
	_, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || up.Status != 200 || up.Keys["invoice_id"] != "5105600101" {
		t.Fatalf("got %v, want an ERP fault about invoice 5105600101", err)
	}
	f = newFake(t, respond(200, list(invoiceJSON("5105600102", "2026", "A", ""), invoiceJSON("5105600101", "2026", "5", ""))))
	got, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
	if err != nil || got.ID != "5105600101" || got.Status != erp.InvoicePosted {
		t.Errorf("got %+v, %v; want 5105600101, posted", got, err)
	}
}
