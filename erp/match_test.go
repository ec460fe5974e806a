package erp_test

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func input(qty, amount, poQty, poPrice, received string, grBased bool) erp.MatchInput {
	return erp.MatchInput{
		Line:     erp.InvoiceLine{Item: "1", POID: "4500018822", POItem: "10", Quantity: d(qty), Amount: d(amount)},
		POItem:   erp.POItem{Item: "10", Quantity: d(poQty), NetPrice: d(poPrice), PriceUnit: d("1"), GoodsReceiptBased: grBased},
		Received: d(received),
	}
}

func TestMatch(t *testing.T) {
	tol := erp.Tolerance{Percent: d("2"), Absolute: d("50")}
	tests := []struct {
		name      string
		in        erp.MatchInput
		status    erp.MatchStatus
		exceeding []erp.Variance
	}{
		{"exact", input("10", "1000.00", "10", "100.00", "10", true), erp.Matched, nil},
		{"under the PO price", input("10", "900.00", "10", "100.00", "10", true), erp.Matched, nil},
		{"price within percent and amount", input("10", "1015.00", "10", "100.00", "10", true), erp.Matched, nil},
		{"price 8 % over", input("100", "13500.00", "100", "125.00", "100", true), erp.ToleranceExceeded,
			[]erp.Variance{{InvoiceItem: "1", Kind: erp.PriceVariance, Amount: d("1000"), Percent: d("8"), Exceeds: true}}},
		{"small percent but over the amount", input("1000", "101500.00", "1000", "100.00", "1000", true), erp.ToleranceExceeded,
			[]erp.Variance{{InvoiceItem: "1", Kind: erp.PriceVariance, Amount: d("1500"), Percent: d("1.5"), Exceeds: true}}},
		{"small amount but over the percent", input("1", "10.50", "1", "10.00", "1", true), erp.ToleranceExceeded,
			[]erp.Variance{{InvoiceItem: "1", Kind: erp.PriceVariance, Amount: d("0.5"), Percent: d("5"), Exceeds: true}}},
		{"more invoiced than received", input("12", "1200.00", "12", "100.00", "10", true), erp.ToleranceExceeded,
			[]erp.Variance{{InvoiceItem: "1", Kind: erp.QuantityVariance, Amount: d("200"), Percent: d("20"), Exceeds: true}}},
		{"not GR-based: against the ordered quantity", input("10", "1000.00", "10", "100.00", "0", false), erp.Matched, nil},
		{"not GR-based, over the ordered quantity", input("11", "1100.00", "10", "100.00", "0", false), erp.ToleranceExceeded,
			[]erp.Variance{{InvoiceItem: "1", Kind: erp.QuantityVariance, Amount: d("100"), Percent: d("10"), Exceeds: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := erp.Match("5105600101", "EUR", []erp.MatchInput{tt.in}, tol)
			if got.Status != tt.status {
				t.Fatalf("status = %s, want %s", got.Status, tt.status)
			}
			if len(got.Exceeding) != len(tt.exceeding) {
				t.Fatalf("exceeding = %+v, want %+v", got.Exceeding, tt.exceeding)
			}
			for i, v := range got.Exceeding {
				w := tt.exceeding[i]
				if v.Kind != w.Kind || !v.Amount.Equal(w.Amount) || !v.Percent.Equal(w.Percent) || !v.Exceeds {
					t.Errorf("variance %d = %s %s %s%%, want %s %s %s%%", i, v.Kind, v.Amount, v.Percent, w.Kind, w.Amount, w.Percent)
				}
			}
			if got.Lines[0].WithinTolerance != (tt.status == erp.Matched) {
				t.Errorf("line within tolerance = %v, want %v", got.Lines[0].WithinTolerance, tt.status == erp.Matched)
			}
		})
	}
}

func TestMatchZeroTolerance(t *testing.T) {
	got := erp.Match("1", "EUR", []erp.MatchInput{input("10", "1000.01", "10", "100.00", "10", true)}, erp.Tolerance{})
	if got.Status != erp.ToleranceExceeded {
		t.Errorf("status = %s, want TOLERANCE_EXCEEDED with zero tolerance", got.Status)
	}
}

func TestPOItemClosed(t *testing.T) {
	tests := []struct {
		it     erp.POItem
		closed bool
		why    string
	}{
		{erp.POItem{}, false, ""},
		{erp.POItem{DeletionCode: "L"}, true, "deletion_code_set"},
		{erp.POItem{FinallyInvoiced: true}, false, ""},
		{erp.POItem{FinallyInvoiced: true, CompletelyDelivered: true}, true, "delivered_and_finally_invoiced"},
	}
	for _, tt := range tests {
		if closed, why := tt.it.Closed(); closed != tt.closed || why != tt.why {
			t.Errorf("%+v.Closed() = %v %q, want %v %q", tt.it, closed, why, tt.closed, tt.why)
		}
	}
}
