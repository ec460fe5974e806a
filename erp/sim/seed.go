package sim

import (
	"time"

	"github.com/shopspring/decimal"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// seed returns the golden set: business partners with their supplier
// roles, purchase orders, goods receipts and supplier invoices in company
// code 1010, currency EUR.
func seed() *state {
	st := &state{}
	st.partners, st.suppliers = partners()

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

	// Each goods receipt is a material document of one item; its dates are
	// on the header.
	gr := func(doc, po, poItem, qty string, posted time.Time) *receipt {
		h := &materialDocument{year: "2026", doc: doc, documentDate: posted, postingDate: posted}
		st.materialDocs = append(st.materialDocs, h)
		return &receipt{header: h, item: "1", po: po, poItem: poItem, movement: "101", qty: dec(qty), unit: "EA"}
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

	// Each invoice has its supplier's terms of payment, Acme's with cash
	// discounts, and the document date as the baseline date, as SAP
	// proposes them when the invoice is entered.
	inv := func(id, supplier, ref string, docDate, postDate time.Time, po, poItem, qty, amt string) *invoice {
		terms := termsNet30
		if supplier == "100042" {
			terms = termsDiscount
		}
		return &invoice{id: id, fiscalYear: "2026", companyCode: "1010", supplier: supplier, supplierRef: ref,
			documentDate: docDate, postingDate: postDate, currency: "EUR", gross: dec(amt), status: statusParked,
			baseline: docDate, terms: terms,
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

// partners returns the golden set's business partners and the supplier
// roles among them. As on SAP, the name is kept as entered and search term
// 1 in upper case; the country is on the address. Partner and supplier
// numbers are alike except for Baltic Trading, whose partner number differs
// as it does on systems that number the two apart. Acme Retail Stores is a
// customer only: it shares the search term ACME but is no supplier.
func partners() ([]*businessPartner, []*supplier) {
	validFrom := day(2020, 1, 1)
	addr := func(id, street, house, postalCode, city, country string) bpAddress {
		return bpAddress{id: id, validFrom: validFrom, validTo: openEnd, street: street, house: house,
			postalCode: postalCode, city: city, country: country}
	}
	// Nordwind moved from Vienna to Hamburg: the old address is no longer
	// valid and comes first, as the lower address number.
	vienna := addr("23099", "Handelskai", "94", "1200", "Wien", "AT")
	vienna.validFrom, vienna.validTo = day(2015, 3, 1), time.Date(2023, time.December, 31, 23, 59, 59, 0, time.UTC)
	hamburg := addr("23100", "Am Sandtorkai", "50", "20457", "Hamburg", "DE")
	hamburg.validFrom = day(2024, 1, 1)

	bps := []*businessPartner{
		{id: "100042", supplier: "100042", category: "2", name1: "Acme Industrial Supplies GmbH", searchTerm1: "ACME", searchTerm2: "MUENCHEN",
			addresses: []bpAddress{addr("23001", "Industriestraße", "12", "80939", "München", "DE")}},
		{id: "100043", supplier: "100043", category: "2", name1: "Nordwind Logistik AG", searchTerm1: "NORDWIND", searchTerm2: "HAMBURG",
			addresses: []bpAddress{vienna, hamburg}},
		{id: "100044", supplier: "100044", category: "2", name1: "Acme Office Furniture Ltd", searchTerm1: "ACME", searchTerm2: "LONDON",
			addresses: []bpAddress{addr("23002", "Old Street", "21", "EC1V 9HL", "London", "GB")}},
		{id: "1000050", supplier: "100050", category: "2", name1: "Baltic Trading OÜ", searchTerm1: "BALTIC", searchTerm2: "TALLINN",
			addresses: []bpAddress{addr("23003", "Narva mnt", "5", "10117", "Tallinn", "EE")}},
		{id: "100070", customer: "100070", category: "2", name1: "Acme Retail Stores", searchTerm1: "ACME", searchTerm2: "BERLIN",
			addresses: []bpAddress{addr("23004", "Friedrichstraße", "101", "10117", "Berlin", "DE")}},
	}
	sups := []*supplier{
		{id: "100042", name: "Acme Industrial Supplies GmbH"},
		{id: "100043", name: "Nordwind Logistik AG"},
		{id: "100044", name: "Acme Office Furniture Ltd"},
		{id: "100050", name: "Baltic Trading OÜ", postingBlocked: true},
	}
	return bps, sups
}
