package sim_test

import (
	"reflect"
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

// TestGoldenPaymentTerms: every golden invoice carries its supplier's
// terms of payment as SAP sends them (the periods as Edm.Decimal strings,
// the percentages with three decimals), Acme's with two cash discounts,
// and its document date as the baseline date.
func TestGoldenPaymentTerms(t *testing.T) {
	e := newEnv(t, sim.Options{})
	invoices := list(t, e.get(invSrv+"/A_SupplierInvoice"))
	if len(invoices) == 0 {
		t.Fatal("no golden invoice")
	}
	discount := []any{"ZB01", "3.000", "14", "2.000", "20", "30"}
	net30 := []any{"NT30", "0.000", "0", "0.000", "0", "30"}
	for _, inv := range invoices {
		want := net30
		if inv["InvoicingParty"] == "100042" {
			want = discount
		}
		got := []any{inv["PaymentTerms"], inv["CashDiscount1Percent"], inv["CashDiscount1Days"],
			inv["CashDiscount2Percent"], inv["CashDiscount2Days"], inv["NetPaymentDays"]}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s of %s: terms got %v, want %v", inv["SupplierInvoice"], inv["InvoicingParty"], got, want)
		}
		if base, doc := inv["DueCalculationBaseDate"], inv["DocumentDate"]; base != doc || base == nil {
			t.Errorf("%s: baseline date %v, want the document date %v", inv["SupplierInvoice"], base, doc)
		}
	}

	inv := entity(t, e.get(invSrv+"/A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"))
	if inv["PaymentTerms"] != "ZB01" || inv["DueCalculationBaseDate"] != "/Date(1795219200000)/" {
		t.Errorf("5105600102: terms %v from %v, want ZB01 from 2026-11-21", inv["PaymentTerms"], inv["DueCalculationBaseDate"])
	}
}
