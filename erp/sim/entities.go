package sim

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
		{"MaterialDocumentYear", r.year},
		{"MaterialDocument", r.doc},
		{"MaterialDocumentItem", r.item},
		{"PurchaseOrder", r.po},
		{"PurchaseOrderItem", r.poItem},
		{"GoodsMovementType", r.movement},
		{"GoodsMovementIsCancelled", r.cancelled},
		{"QuantityInEntryUnit", quantity(r.qty)},
		{"EntryUnit", r.unit},
		{"PostingDate", wireDate(r.postingDate)},
	}
}

func supplierRow(s *supplier) obj {
	return obj{
		{"Supplier", s.id},
		{"SupplierName", s.name},
		{"Country", s.country},
		{"PostingIsBlocked", s.postingBlocked},
		{"DeletionIndicator", s.deleted},
	}
}

func approvalRow(a *Approval) obj {
	return obj{
		{"ApprovalID", a.ApprovalID},
		{"SupplierInvoice", a.InvoiceID},
		{"FiscalYear", a.FiscalYear},
		{"Status", a.Status},
		{"Approver", a.Approver},
		{"ProposedAction", a.ProposedAction},
		{"Justification", a.Justification},
		{"Amount", amount(a.Amount)},
		{"Currency", a.Currency},
		{"RequestedAt", wireDate(a.RequestedAt)},
		{"DecidedAt", wireDateOrNull(a.DecidedAt)},
	}
}

// holdRow reports the invoice status the hold stands for: held while it
// is in force, parked once released.
func holdRow(h *Hold) obj {
	invStatus := statusHeld
	if h.Status == HoldReleased {
		invStatus = statusParked
	}
	return obj{
		{"HoldID", h.HoldID},
		{"SupplierInvoice", h.InvoiceID},
		{"FiscalYear", h.FiscalYear},
		{"Reason", h.Reason},
		{"RecheckAt", wireDate(h.RecheckAt)},
		{"Status", h.Status},
		{"ReleasedAt", wireDateOrNull(h.ReleasedAt)},
		{"SupplierInvoiceStatus", invStatus},
	}
}

func handoverRow(h *Handover) obj {
	return obj{
		{"HandoverID", h.HandoverID},
		{"SupplierInvoice", h.InvoiceID},
		{"Queue", h.Queue},
		{"Status", h.Status},
		{"CreatedAt", wireDate(h.CreatedAt)},
	}
}
