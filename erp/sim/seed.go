package sim

import (
	"time"

	"github.com/shopspring/decimal"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// seed returns the golden set: suppliers, purchase orders, goods receipts
// and supplier invoices in company code 1010, currency EUR.
func seed() *state {
	st := &state{}
	st.suppliers = []*supplier{
		{id: "100042", name: "Acme Industrial Supplies GmbH", country: "DE"},
		{id: "100043", name: "Nordwind Logistik AG", country: "DE"},
		{id: "100044", name: "Acme Office Furniture Ltd", country: "GB"},
		{id: "100050", name: "Baltic Trading OÜ", country: "EE", postingBlocked: true},
	}

	item := func(no, material, text, qty, price string) poItem {
		return poItem{item: no, material: material, text: text, qty: dec(qty), unit: "EA",
			netPrice: dec(price), priceUnit: decimal.NewFromInt(1), grBased: true, grExpected: true}
	}
	order := func(id, supplier string, items ...poItem) *purchaseOrder {
		return &purchaseOrder{id: id, supplier: supplier, companyCode: "1010", currency: "EUR", items: items}
	}
	closed := item("10", "", "Pallet transport", "1", "800.00")
	closed.completelyDelivered, closed.finallyInvoiced = true, true
	cancelled := item("10", "", "Cancelled freight", "1", "300.00")
	cancelled.deletion = "L"
	deleted := order("4500018831", "100043", cancelled)
	deleted.deletion = "L"
	st.orders = []*purchaseOrder{
		order("4500018822", "100042",
			item("10", "BOLT-M8", "Steel bolts M8", "10", "100.00"),
			item("20", "NUT-M8", "Hex nuts M8", "5", "200.00")),
		order("4500018823", "100042", item("10", "PUMP-HP20", "Hydraulic pump HP-20", "100", "125.00")),
		order("4500018830", "100043", closed),
		deleted,
		order("4500018840", "100043", item("10", "RACK-WH1", "Warehouse racking system", "1", "250000.00")),
		order("4500018850", "100042", item("10", "GLOVE-S", "Safety gloves", "5", "120.00")),
		order("4500018860", "100043", item("10", "", "Freight Hamburg-Munich", "10", "119.00")),
	}

	gr := func(doc, po, poItem, qty string, posted time.Time) *receipt {
		return &receipt{year: "2026", doc: doc, item: "1", po: po, poItem: poItem, movement: "101",
			qty: dec(qty), unit: "EA", postingDate: posted}
	}
	cancelledGR := gr("4900000107", "4500018822", "20", "5", day(2026, 11, 19))
	cancelledGR.cancelled = true
	st.receipts = []*receipt{
		gr("4900000101", "4500018822", "10", "10", day(2026, 11, 18)),
		gr("4900000102", "4500018823", "10", "100", day(2026, 11, 19)),
		gr("4900000103", "4500018830", "10", "1", day(2026, 11, 20)),
		gr("4900000104", "4500018840", "10", "1", day(2026, 11, 21)),
		gr("4900000105", "4500018850", "10", "5", day(2026, 11, 22)),
		gr("4900000106", "4500018860", "10", "10", day(2026, 9, 30)),
		cancelledGR,
	}

	inv := func(id, supplier, ref string, docDate, postDate time.Time, po, poItem, qty, amt string) *invoice {
		return &invoice{id: id, fiscalYear: "2026", companyCode: "1010", supplier: supplier, supplierRef: ref,
			documentDate: docDate, postingDate: postDate, currency: "EUR", gross: dec(amt), status: statusParked,
			lines: []invoiceLine{{item: "1", po: po, poItem: poItem, qty: dec(qty), unit: "EA", amount: dec(amt)}}}
	}
	posted := inv("5105600100", "100043", "INV-88120", day(2026, 10, 2), day(2026, 10, 5), "4500018860", "10", "10", "1190.00")
	posted.status = statusPosted
	lastYear := inv("5105600109", "100042", "ACME-2025-1299", day(2025, 12, 28), day(2025, 12, 30), "4500018850", "10", "5", "600.00")
	lastYear.fiscalYear = "2025"
	st.invoices = []*invoice{
		posted,
		inv("5105600101", "100042", "ACME-2026-0412", day(2026, 11, 20), day(2026, 11, 24), "4500018822", "10", "10", "1000.00"),
		inv("5105600102", "100042", "ACME-2026-0419", day(2026, 11, 21), day(2026, 11, 24), "4500018823", "10", "100", "13500.00"),
		inv("5105600103", "100042", "ACME-2026-0420", day(2026, 11, 22), day(2026, 11, 24), "4500019822", "10", "10", "1000.00"),
		inv("5105600104", "100999", "GX-7781", day(2026, 11, 22), day(2026, 11, 24), "4500018822", "10", "10", "1000.00"),
		inv("5105600105", "100042", "ACME-2026-0421", day(2026, 11, 23), day(2026, 11, 24), "4500018822", "20", "5", "1000.00"),
		inv("5105600106", "100043", "NW-55102", day(2026, 11, 23), day(2026, 11, 24), "4500018830", "10", "1", "800.00"),
		inv("5105600107", "100043", "INV-88120", day(2026, 10, 2), day(2026, 11, 24), "4500018860", "10", "10", "1190.00"),
		inv("5105600108", "100043", "NW-55230", day(2026, 11, 24), day(2026, 11, 25), "4500018840", "10", "1", "250000.00"),
		lastYear,
	}
	return st
}
