package api

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
)

// Conversions from domain types to response types.

func amount(d decimal.Decimal) string   { return d.StringFixed(2) }
func quantity(d decimal.Decimal) string { return d.String() }
func date(t time.Time) string           { return t.UTC().Format(time.DateOnly) }

func dateTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func toInvoice(inv erp.Invoice) invoiceResponse {
	out := invoiceResponse{
		InvoiceID: inv.ID, FiscalYear: inv.FiscalYear, CompanyCode: inv.CompanyCode,
		SupplierID: inv.SupplierID, SupplierRef: inv.SupplierRef,
		DocumentDate: date(inv.DocumentDate), PostingDate: date(inv.PostingDate),
		Currency: inv.Currency, GrossAmount: amount(inv.GrossAmount), Status: string(inv.Status),
		SAPStatus: inv.SAPStatus, PaymentBlock: inv.PaymentBlock, Lines: make([]invoiceLine, 0, len(inv.Lines)),
	}
	for _, l := range inv.Lines {
		out.Lines = append(out.Lines, invoiceLine{Item: l.Item, POID: l.POID, POItem: l.POItem,
			Quantity: quantity(l.Quantity), Unit: l.Unit, Amount: amount(l.Amount), UnitPrice: amount(l.UnitPrice())})
	}
	return out
}

func toPurchaseOrder(po erp.PurchaseOrder) purchaseOrderResponse {
	out := purchaseOrderResponse{POID: po.ID, SupplierID: po.SupplierID, CompanyCode: po.CompanyCode,
		Currency: po.Currency, Deleted: po.DeletionCode != "", Items: make([]poItem, 0, len(po.Items))}
	for _, it := range po.Items {
		closed, why := it.Closed()
		if po.DeletionCode != "" && !closed {
			closed, why = true, "deletion_code_set"
		}
		out.Items = append(out.Items, poItem{Item: it.Item, Material: it.Material, Description: it.Text,
			Quantity: quantity(it.Quantity), Unit: it.Unit, NetPrice: amount(it.NetPrice), PriceUnit: quantity(it.PriceUnit),
			GoodsReceiptBased: it.GoodsReceiptBased, CompletelyDelivered: it.CompletelyDelivered,
			FinallyInvoiced: it.FinallyInvoiced, Deleted: it.DeletionCode != "", Closed: closed, ClosedReason: why})
	}
	return out
}

func toSupplier(s erp.Supplier) supplierResponse {
	return supplierResponse{SupplierID: s.ID, Name: s.Name, Country: s.Country,
		PostingBlocked: s.PostingBlocked, Deleted: s.Deleted}
}

func toGoodsReceipts(poID, item string, it erp.POItem, grs []erp.GoodsReceipt) goodsReceiptResponse {
	out := goodsReceiptResponse{POID: poID, Item: item, GoodsReceiptBased: it.GoodsReceiptBased,
		Unit: it.Unit, Receipts: make([]goodsReceipt, 0, len(grs))}
	total := decimal.Zero
	for _, g := range grs {
		total = total.Add(g.Quantity)
		out.Receipts = append(out.Receipts, goodsReceipt{MaterialDocument: g.MaterialDocument, Year: g.Year,
			DocumentItem: g.Item, Quantity: quantity(g.Quantity), Unit: g.Unit, PostingDate: date(g.PostingDate)})
	}
	out.ReceivedQuantity = quantity(total)
	return out
}

func toMatch(m erp.MatchResult) matchResponse {
	result, next := errmap.Match(m.Status)
	out := matchResponse{InvoiceID: m.InvoiceID, Result: result, NextAction: string(next),
		Currency:  m.Currency,
		Tolerance: matchTolerance{Percent: m.Tolerance.Percent.String(), Absolute: amount(m.Tolerance.Absolute)},
		Lines:     make([]matchLine, 0, len(m.Lines)), Exceeding: make([]matchVariance, 0, len(m.Exceeding))}
	for _, l := range m.Lines {
		out.Lines = append(out.Lines, matchLine{InvoiceItem: l.InvoiceItem, POID: l.POID, POItem: l.POItem,
			InvoicedQuantity: quantity(l.InvoicedQuantity), OrderedQuantity: quantity(l.OrderedQuantity),
			ReceivedQuantity: quantity(l.ReceivedQuantity), GoodsReceiptBased: l.GoodsReceiptBased,
			InvoicedUnitPrice: amount(l.InvoicedUnitPrice), POUnitPrice: amount(l.POUnitPrice),
			WithinTolerance: l.WithinTolerance})
	}
	for _, v := range m.Exceeding {
		out.Exceeding = append(out.Exceeding, matchVariance{InvoiceItem: v.InvoiceItem, Kind: string(v.Kind),
			VarianceAmount: amount(v.Amount), VariancePercent: v.Percent.StringFixed(2)})
	}
	return out
}

// outcome names the match's result for metrics: TOLERANCE_EXCEEDED is a
// named outcome even though it is a success.
func (m matchResponse) outcome() string {
	if m.Result == string(errmap.ToleranceExceeded) {
		return m.Result
	}
	return ""
}

func toApproval(a erp.Approval) approvalResponse {
	return approvalResponse{ApprovalID: a.ID, InvoiceID: a.InvoiceID, Status: string(a.Status),
		Approver: a.Approver, ProposedAction: a.ProposedAction, Justification: a.Justification,
		Amount: amount(a.Amount), Currency: a.Currency, RequestedBy: a.RequestedBy, RequestedAt: dateTime(a.RequestedAt),
		DecidedBy: a.DecidedBy, DecisionReason: a.DecisionReason, DecidedAt: dateTime(a.DecidedAt)}
}

func toHandoverRecord(h erp.Handover) handoverRecord {
	out := handoverRecord{HandoverID: h.ID, InvoiceID: h.InvoiceID, Queue: h.Queue, Code: h.Code, Status: h.Status,
		Summary: h.Summary, Evidence: h.Evidence, CreatedBy: h.CreatedBy, CreatedAt: dateTime(h.CreatedAt),
		TakenBy: h.TakenBy, TakenAt: dateTime(h.TakenAt), ResolvedBy: h.ResolvedBy, ResolvedAt: dateTime(h.ResolvedAt),
		Note: h.Note}
	if out.Evidence == nil {
		out.Evidence = []string{}
	}
	if h.History != "" {
		out.History = json.RawMessage(h.History)
	}
	return out
}

func (p postingResponse) outcome() string { return p.InfoCode }
