package erp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// TestDuplicateCountsOnlyStandingPostings: the gateway's duplicate check
// finds another invoice with the same supplier, number, date and amount
// only when that invoice is posted; a reversed or deleted one, or one in
// any other status, is no duplicate.
func TestDuplicateCountsOnlyStandingPostings(t *testing.T) {
	date := time.Date(2026, time.November, 20, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		status erp.InvoiceStatus
		sap    string
		dup    bool
	}{
		{erp.InvoicePosted, "5", true},
		{erp.InvoicePosted, "4", true},
		{erp.InvoiceReversed, "5", false},
		{erp.InvoiceDeleted, "2", false},
		{erp.InvoiceParked, "A", false},
		{erp.InvoiceHeld, "D", false},
		{erp.InvoiceOther, "1", false},
		{erp.InvoiceOther, "Q", false},
	}
	for _, tt := range tests {
		t.Run(string(tt.status)+"/"+tt.sap, func(t *testing.T) {
			m := newMatchERP(1, true)
			m.inv.DocumentDate, m.inv.GrossAmount = date, d("1000.00")
			m.duplicate = []erp.Invoice{
				m.inv, // the invoice itself is never its own duplicate
				{ID: "5105600077", SupplierID: m.inv.SupplierID, SupplierRef: m.inv.SupplierRef, DocumentDate: date,
					GrossAmount: d("1000.00"), Status: tt.status, SAPStatus: tt.sap},
			}
			m.duplicate[0].Status = erp.InvoicePosted
			res, err := m.match(t)
			var dup *erp.DuplicateInvoiceError
			switch {
			case tt.dup && (!errors.As(err, &dup) || dup.DuplicateOf != "5105600077"):
				t.Errorf("got %+v, %v, want a duplicate of 5105600077", res, err)
			case !tt.dup && (err != nil || res.Status != erp.Matched):
				t.Errorf("got %+v, %v, want a match and no duplicate", res, err)
			}
		})
	}

	// A posted invoice with another date or amount is no duplicate either.
	for _, other := range []erp.Invoice{
		{ID: "5105600078", DocumentDate: date.AddDate(0, 0, 1), GrossAmount: d("1000.00"), Status: erp.InvoicePosted},
		{ID: "5105600079", DocumentDate: date, GrossAmount: d("1000.01"), Status: erp.InvoicePosted},
	} {
		m := newMatchERP(1, true)
		m.inv.DocumentDate, m.inv.GrossAmount = date, d("1000.00")
		m.duplicate = []erp.Invoice{other}
		if res, err := m.match(t); err != nil || res.Status != erp.Matched {
			t.Errorf("posted %s on %s for %s: got %+v, %v, want no duplicate", other.ID, other.DocumentDate.Format(time.DateOnly), other.GrossAmount, res, err)
		}
	}
}
