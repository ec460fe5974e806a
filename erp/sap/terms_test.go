package sap

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// invoiceWithTerms is invoiceJSON of 5105600101 with the members terms
// added to its header, in a list as a read by id gets it.
func invoiceWithTerms(terms string) string {
	inv := invoiceJSON("5105600101", "2026", "A", "")
	return list(strings.Replace(inv, `"PaymentBlockingReason":""`, `"PaymentBlockingReason":"",`+terms, 1))
}

// TestInvoicePaymentTerms reads the terms of payment from the invoice's
// header and gives the net due date by SAP's rule, one case per rule.
func TestInvoicePaymentTerms(t *testing.T) {
	base := fmt.Sprintf(`"DueCalculationBaseDate":"\/Date(%d)\/"`, ms(2026, 11, 20))
	for _, tc := range []struct {
		name          string
		terms         string
		key           string
		baseline      time.Time
		cd1, cd2, net int
		due           time.Time
	}{
		{"net days", `"PaymentTerms":"ZB01",` + base + `,"CashDiscount1Percent":"3.000","CashDiscount1Days":"14",` +
			`"CashDiscount2Percent":"2.000","CashDiscount2Days":"20","NetPaymentDays":"30"`,
			"ZB01", day(2026, 11, 20), 14, 20, 30, day(2026, 12, 20)},
		{"second discount days without net days", `"PaymentTerms":"ZB02",` + base + `,"CashDiscount1Days":"10","CashDiscount2Days":"20","NetPaymentDays":"0"`,
			"ZB02", day(2026, 11, 20), 10, 20, 0, day(2026, 12, 10)},
		{"first discount days alone", `"PaymentTerms":"ZB03",` + base + `,"CashDiscount1Days":"14","CashDiscount2Days":"0","NetPaymentDays":"0"`,
			"ZB03", day(2026, 11, 20), 14, 0, 0, day(2026, 12, 4)},
		{"no days: due on the baseline date", `"PaymentTerms":"0001",` + base + `,"CashDiscount1Days":"0","CashDiscount2Days":"0","NetPaymentDays":"0"`,
			"0001", day(2026, 11, 20), 0, 0, 0, day(2026, 11, 20)},
		{"days as JSON numbers, baseline with an offset", `"PaymentTerms":"NT30",` +
			fmt.Sprintf(`"DueCalculationBaseDate":"/Date(%d+0100)/"`, ms(2026, 11, 20)) + `,"NetPaymentDays":30`,
			"NT30", day(2026, 11, 20), 0, 0, 30, day(2026, 12, 20)},
		{"terms without a baseline date", `"PaymentTerms":"NT30","DueCalculationBaseDate":null,"NetPaymentDays":"30"`,
			"NT30", time.Time{}, 0, 0, 30, time.Time{}},
		{"empty values", `"PaymentTerms":"","DueCalculationBaseDate":"","CashDiscount1Days":"","CashDiscount2Days":null,"NetPaymentDays":""`,
			"", time.Time{}, 0, 0, 0, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, respond(200, invoiceWithTerms(tc.terms)))
			inv, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
			if err != nil {
				t.Fatalf("Invoice: got error %v, want nil", err)
			}
			same(t, "terms", []any{inv.PaymentTerms, inv.BaselineDate, inv.CashDiscount1Days, inv.CashDiscount2Days, inv.NetPaymentDays},
				[]any{tc.key, tc.baseline, tc.cd1, tc.cd2, tc.net})
			if got := inv.NetDueDate(); !got.Equal(tc.due) {
				t.Errorf("net due date: got %v, want %v", got, tc.due)
			}
		})
	}
}

// TestInvoiceWithoutPaymentTerms: a system that sends no terms of payment
// (an older release) gives the invoice without them and without a due
// date, never an error.
func TestInvoiceWithoutPaymentTerms(t *testing.T) {
	body := list(invoiceJSON("5105600101", "2026", "A", ""))
	if strings.Contains(body, "PaymentTerms") || strings.Contains(body, "DueCalculationBaseDate") || strings.Contains(body, "Days") {
		t.Fatalf("the fixture has terms of payment: %s", body)
	}
	f := newFake(t, respond(200, body))
	inv, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
	if err != nil {
		t.Fatalf("Invoice: got error %v, want nil", err)
	}
	if inv.PaymentTerms != "" || !inv.BaselineDate.IsZero() || inv.CashDiscount1Days != 0 || inv.CashDiscount2Days != 0 ||
		inv.NetPaymentDays != 0 || !inv.NetDueDate().IsZero() {
		t.Errorf("got terms %q from %v (%d, %d, %d), due %v; want none", inv.PaymentTerms, inv.BaselineDate,
			inv.CashDiscount1Days, inv.CashDiscount2Days, inv.NetPaymentDays, inv.NetDueDate())
	}
	if inv.ID != "5105600101" || inv.GrossAmount.String() != "1000" {
		t.Errorf("got %+v, want the invoice read as before", inv)
	}
}

// TestInvoiceMalformedPaymentTerms: terms of payment that do not fit what
// SAP declares make the invoice a record that cannot be read
// (ERP_DATA_INVALID), as any other of its fields does.
func TestInvoiceMalformedPaymentTerms(t *testing.T) {
	for name, terms := range map[string]string{
		"baseline date that is none":   `"DueCalculationBaseDate":"/Date(tomorrow)/"`,
		"baseline date as ISO text":    `"DueCalculationBaseDate":"2026-11-20"`,
		"baseline date as a number":    `"DueCalculationBaseDate":1795132800000`,
		"net days that are no number":  `"NetPaymentDays":"30 days"`,
		"net days with a fraction":     `"NetPaymentDays":"30.5"`,
		"negative discount days":       `"CashDiscount1Days":"-14"`,
		"discount days over precision": `"CashDiscount2Days":"1000"`,
		"terms key as a number":        `"PaymentTerms":1`,
		"discount days as a boolean":   `"CashDiscount1Days":true`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, respond(200, invoiceWithTerms(terms)))
			_, err := f.client(Options{Runner: retrying()}).Invoice(context.Background(), "5105600101")
			wantBadRecord(t, f, err, erp.ServiceSupplierInvoice, erp.EntityInvoice, "SupplierInvoice='5105600101',FiscalYear='2026'")
		})
	}
}

// TestSimInvoicePaymentTerms reads the golden set's terms of payment from
// the simulator: Acme's cash discount terms, Nordwind's net 30, each from
// the document date.
func TestSimInvoicePaymentTerms(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	for _, tc := range []struct {
		id, terms string
		due       time.Time
	}{
		{"5105600102", "ZB01", day(2026, 12, 21)},
		{"5105600106", "NT30", day(2026, 12, 23)},
		{"5105600109", "ZB01", day(2026, 1, 27)},
	} {
		inv, err := c.Invoice(context.Background(), tc.id)
		if err != nil {
			t.Fatalf("Invoice(%s): %v", tc.id, err)
		}
		if inv.PaymentTerms != tc.terms || !inv.BaselineDate.Equal(inv.DocumentDate) || !inv.NetDueDate().Equal(tc.due) {
			t.Errorf("%s: terms %q from %v, due %v; want %s from the document date %v, due %v", tc.id, inv.PaymentTerms,
				inv.BaselineDate, inv.NetDueDate(), tc.terms, inv.DocumentDate, tc.due)
		}
	}
}
