package sap

import (
	"context"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/erp"
)

// TestInvoiceStatuses maps every invoice document status SAP documents
// (RBSTAT), with and without a reversal, and carries any other code
// without failing the answer.
func TestInvoiceStatuses(t *testing.T) {
	tests := []struct {
		sap      string
		reversal string // JSON members added to the invoice
		want     erp.InvoiceStatus
	}{
		{"A", "", erp.InvoiceParked},
		{"B", "", erp.InvoiceParked},
		{"E", "", erp.InvoiceParked},
		{"C", "", erp.InvoiceHeld},
		{"D", "", erp.InvoiceHeld},
		{"5", "", erp.InvoicePosted},
		{"4", "", erp.InvoicePosted},
		{"2", "", erp.InvoiceDeleted},
		{"1", "", erp.InvoiceOther},
		{"3", "", erp.InvoiceOther},
		// Blank is posted only for the online verification of older
		// releases, and is what a missing status reads as: not a posting.
		{"", "", erp.InvoiceOther},
		{"Q", "", erp.InvoiceOther},
		{"a", "", erp.InvoiceOther},
		{"55", "", erp.InvoiceOther},
		{"5", `"ReverseDocument":"5105600177","ReverseDocumentFiscalYear":"2026",`, erp.InvoiceReversed},
		{"5", `"IsReversed":true,`, erp.InvoiceReversed},
		{"5", `"IsReversal":true,`, erp.InvoiceReversed},
		{"4", `"ReverseDocument":"5105600177",`, erp.InvoiceReversed},
		{"5", `"ReverseDocument":"","IsReversed":false,"IsReversal":false,`, erp.InvoicePosted},
		{"5", `"ReverseDocument":null,"IsReversed":null,`, erp.InvoicePosted},
		// Only a posted document can be reversed.
		{"A", `"ReverseDocument":"5105600177",`, erp.InvoiceParked},
		{"2", `"IsReversal":true,`, erp.InvoiceDeleted},
	}
	for _, tt := range tests {
		t.Run(tt.sap+"/"+tt.reversal, func(t *testing.T) {
			entry := strings.Replace(invoiceJSON("5105600101", "2026", tt.sap, "H"), `"PaymentBlockingReason"`, tt.reversal+`"PaymentBlockingReason"`, 1)
			f := newFake(t, respond(200, list(entry)))
			got, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
			if err != nil {
				t.Fatalf("got error %v, want the invoice", err)
			}
			if got.Status != tt.want || got.SAPStatus != tt.sap || got.PaymentBlock != "H" || got.ID != "5105600101" || len(got.Lines) != 1 {
				t.Errorf("got status %q SAP status %q block %q, want %q, %q and H", got.Status, got.SAPStatus, got.PaymentBlock, tt.want, tt.sap)
			}
		})
	}
}

// TestInvoiceStatusMissing: an invoice without SupplierInvoiceStatus reads
// as one in no status the gateway acts on, not as a malformed answer.
func TestInvoiceStatusMissing(t *testing.T) {
	f := newFake(t, respond(200, `{"d":{"results":[{"SupplierInvoice":"5105600101","FiscalYear":"2026"}]}}`))
	got, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
	if err != nil || got.Status != erp.InvoiceOther || got.SAPStatus != "" {
		t.Fatalf("got %+v, %v, want status other and no SAP status", got, err)
	}
}

// TestInvoiceStatusesInAList: one invoice in an unknown status does not
// fail the list it comes in, such as the duplicate search.
func TestInvoiceStatusesInAList(t *testing.T) {
	f := newFake(t, respond(200, list(invoiceJSON("5105600100", "2026", "5", ""), invoiceJSON("5105600107", "2026", "Z", ""),
		invoiceJSON("5105600108", "2026", "2", ""))))
	got, err := f.client(Options{}).InvoicesBySupplierRef(context.Background(), "100043", "INV-88120")
	if err != nil || len(got) != 3 {
		t.Fatalf("got %+v, %v, want three invoices", got, err)
	}
	for i, want := range []erp.InvoiceStatus{erp.InvoicePosted, erp.InvoiceOther, erp.InvoiceDeleted} {
		if got[i].Status != want {
			t.Errorf("invoice %s: got %q, want %q", got[i].ID, got[i].Status, want)
		}
	}
}
