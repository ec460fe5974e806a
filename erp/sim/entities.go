package sim

import "strconv"

// Row renderers: each turns one stored object into its OData properties in
// SAP's order, without __metadata and navigation properties.

func invoiceRow(inv *invoice) obj {
	return obj{
		{"SupplierInvoice", inv.id},
		{"FiscalYear", inv.fiscalYear},
		{"CompanyCode", inv.companyCode},
		{"DocumentDate", wireDate(inv.documentDate)},
		{"PostingDate", wireDate(inv.postingDate)},
		{"InvoicingParty", inv.supplier},
		{"SupplierInvoiceIDByInvcgParty", inv.supplierRef},
		{"DocumentCurrency", inv.currency},
		{"InvoiceGrossAmount", amount(inv.gross)},
		{"PaymentTerms", inv.terms.key},
		{"DueCalculationBaseDate", optionalDate(inv.baseline)},
		{"CashDiscount1Percent", percent(inv.terms.cd1Percent)},
		{"CashDiscount1Days", strconv.Itoa(inv.terms.cd1Days)},
		{"CashDiscount2Percent", percent(inv.terms.cd2Percent)},
		{"CashDiscount2Days", strconv.Itoa(inv.terms.cd2Days)},
		{"NetPaymentDays", strconv.Itoa(inv.terms.netDays)},
		{"SupplierInvoiceStatus", inv.status},
		{"PaymentBlockingReason", inv.block},
	}
}

func invoiceItemRow(inv *invoice, l invoiceLine) obj {
	return obj{
		{"SupplierInvoice", inv.id},
		{"FiscalYear", inv.fiscalYear},
		{"SupplierInvoiceItem", l.item},
		{"PurchaseOrder", l.po},
		{"PurchaseOrderItem", l.poItem},
		{"QuantityInPurchaseOrderUnit", quantity(l.qty)},
		{"PurchaseOrderQuantityUnit", l.unit},
		{"SupplierInvoiceItemAmount", amount(l.amount)},
		{"DocumentCurrency", inv.currency},
	}
}

func orderRow(po *purchaseOrder) obj {
	return obj{
		{"PurchaseOrder", po.id},
		{"Supplier", po.supplier},
		{"CompanyCode", po.companyCode},
		{"DocumentCurrency", po.currency},
		{"PurchasingDocumentDeletionCode", po.deletion},
	}
}

func orderItemRow(po *purchaseOrder, it poItem) obj {
	return obj{
		{"PurchaseOrder", po.id},
		{"PurchaseOrderItem", it.item},
		{"Material", it.material},
		{"PurchaseOrderItemText", it.text},
		{"OrderQuantity", quantity(it.qty)},
		{"PurchaseOrderQuantityUnit", it.unit},
		{"NetPriceAmount", amount(it.netPrice)},
		{"NetPriceQuantity", it.priceUnit.String()},
		{"DocumentCurrency", po.currency},
		{"IsFinallyInvoiced", it.finallyInvoiced},
		{"IsCompletelyDelivered", it.completelyDelivered},
		{"InvoiceIsGoodsReceiptBased", it.grBased},
		{"GoodsReceiptIsExpected", it.grExpected},
		{"PurchasingDocumentDeletionCode", it.deletion},
	}
}

func receiptRow(r *receipt) obj {
	return obj{
		{"MaterialDocumentYear", r.header.year},
		{"MaterialDocument", r.header.doc},
		{"MaterialDocumentItem", r.item},
		{"GoodsMovementType", r.movement},
		{"PurchaseOrder", r.po},
		{"PurchaseOrderItem", r.poItem},
		{"EntryUnit", r.unit},
		{"QuantityInEntryUnit", quantity(r.qty)},
		{"GoodsMovementIsCancelled", r.cancelled},
	}
}

func supplierRow(s *supplier) obj {
	return obj{
		{"Supplier", s.id},
		{"PostingIsBlocked", s.postingBlocked},
		{"SupplierName", s.name},
		{"DeletionIndicator", s.deleted},
	}
}
