package api

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
)

// Conversions from domain types to response types.

// amount is d.StringFixed(2), and quantity d.String(), each written
// without math/big for a decimal whose coefficient fits an int64, as an
// ERP's amounts and quantities do (TestDecimalTextIsTheLibrarys).
func amount(d decimal.Decimal) string {
	if v, ok := scaled(d, 2); ok {
		return fixedPoint(v, 2, false)
	}
	return d.StringFixed(2)
}

func quantity(d decimal.Decimal) string {
	if e := d.Exponent(); e <= 0 && e >= -18 && d.NumDigits() <= 18 {
		return fixedPoint(d.CoefficientInt64(), int(-e), true)
	}
	return d.String()
}

// pow10 are the powers of ten an int64 holds.
var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// scaled is d rounded to places decimals as decimal.Round rounds (the
// digit after the last kept, half away from zero), times 10^places; ok is
// false when that does not fit an int64 on this path.
func scaled(d decimal.Decimal, places int32) (v int64, ok bool) {
	e := d.Exponent()
	n := int32(d.NumDigits())
	if e > 0 || e < -18 || n > 18 {
		return 0, false
	}
	c := d.CoefficientInt64()
	switch {
	case e == -places:
		return c, true
	case e > -places:
		if n+places+e > 18 {
			return 0, false
		}
		return c * pow10[places+e], true
	}
	return shorten(c, -e-places), true
}

// shorten is c / 10^drop (drop from 1 to 18) rounded as decimal.Round
// rounds: the first digit dropped, half away from zero.
func shorten(c int64, drop int32) int64 {
	q := c / pow10[drop-1]
	if q < 0 {
		q -= 5
	} else {
		q += 5
	}
	return q / 10
}

// unitPrice is amount(l.UnitPrice()), the line's amount divided by its
// quantity as DivRound divides to 4 places and then rounded to 2, worked
// out in int64 for an amount and a quantity that fit one, as an ERP's do
// (TestUnitPriceIsTheLibrarys).
func unitPrice(l erp.InvoiceLine) string {
	if l.Quantity.IsZero() {
		return amount(decimal.Zero)
	}
	if v, ok := divRound4(l.Amount, l.Quantity); ok {
		return fixedPoint(shorten(v, 2), 2, false)
	}
	return amount(l.UnitPrice())
}

// divRound4 is d.DivRound(d2, 4) times 10^4, for a non-zero d2: the
// quotient cut after 4 places, moved away from zero when the remainder is
// at least half of d2. ok is false when d, d2 or the scaled dividend or
// divisor does not fit an int64 on this path.
func divRound4(d, d2 decimal.Decimal) (q int64, ok bool) {
	e, e2 := d.Exponent(), d2.Exponent()
	n, n2 := int32(d.NumDigits()), int32(d2.NumDigits())
	if e > 0 || e < -18 || n > 18 || e2 > 0 || e2 < -18 || n2 > 18 {
		return 0, false
	}
	// d / d2 * 10^4 = num / den.
	num, den := d.CoefficientInt64(), d2.CoefficientInt64()
	if k := e + 4 - e2; k >= 0 {
		if n+k > 18 {
			return 0, false
		}
		num *= pow10[k]
	} else {
		if n2-k > 18 {
			return 0, false
		}
		den *= pow10[-k]
	}
	q, r := num/den, num%den
	absR, absDen := r, den
	if absR < 0 {
		absR = -absR
	}
	if absDen < 0 {
		absDen = -absDen
	}
	// 2|r| cannot overflow: |r| < |den| <= 10^18.
	if 2*absR >= absDen {
		if (num < 0) != (den < 0) {
			q--
		} else {
			q++
		}
	}
	return q, true
}

// fixedPoint writes v / 10^places with places decimals, or with its
// trailing zeros (and a point left bare) dropped when trim is set, as
// decimal.Decimal's String and StringFixed write it.
func fixedPoint(v int64, places int, trim bool) string {
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	var digits [20]byte
	ds := strconv.AppendUint(digits[:0], u, 10)
	var out [48]byte
	b := out[:0]
	if v < 0 {
		b = append(b, '-')
	}
	if places == 0 {
		return string(append(b, ds...))
	}
	var intPart, frac []byte
	zeros := 0
	if len(ds) > places {
		intPart, frac = ds[:len(ds)-places], ds[len(ds)-places:]
	} else {
		intPart, frac, zeros = []byte{'0'}, ds, places-len(ds)
	}
	if trim {
		for len(frac) > 0 && frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
		if len(frac) == 0 {
			zeros = 0
		}
	}
	b = append(b, intPart...)
	if zeros+len(frac) > 0 {
		b = append(b, '.')
		for range zeros {
			b = append(b, '0')
		}
		b = append(b, frac...)
	}
	return string(b)
}
func date(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// optionalDate is date of t, or "" for the zero time: a date the ERP did
// not give.
func optionalDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return date(t)
}

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
		DueDate: optionalDate(inv.NetDueDate()), PaymentTerms: inv.PaymentTerms,
		Currency: inv.Currency, GrossAmount: amount(inv.GrossAmount), Status: string(inv.Status),
		SAPStatus: inv.SAPStatus, PaymentBlock: inv.PaymentBlock, Lines: make([]invoiceLine, 0, len(inv.Lines)),
	}
	for _, l := range inv.Lines {
		out.Lines = append(out.Lines, invoiceLine{Item: l.Item, POID: l.POID, POItem: l.POItem,
			Quantity: quantity(l.Quantity), Unit: l.Unit, Amount: amount(l.Amount), UnitPrice: unitPrice(l)})
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
		DecidedBy: a.DecidedBy, DecisionReason: a.DecisionReason, DecidedAt: dateTime(a.DecidedAt),
		SupersededBy: a.SupersededBy}
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
