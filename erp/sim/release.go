package sim

import (
	"fmt"
	"net/http"

	"github.com/shopspring/decimal"
)

// Price tolerance for Release: a line whose unit price is above the PO
// price by more than either limit is posted with a payment block.
var (
	tolerancePercent  = decimal.NewFromInt(2)
	toleranceAbsolute = decimal.NewFromInt(50)
)

// release is the Release function import. It checks in the order SAP's
// invoice verification reports problems: existence, status, posting
// period, duplicate, supplier, PO items, goods receipts, then price.
func (s *Server) release(st *state, w writeRequest) (response, *apiError) {
	id, err := functionParam(w, "SupplierInvoice")
	if err != nil {
		return response{}, err
	}
	fy, err := functionParam(w, "FiscalYear")
	if err != nil {
		return response{}, err
	}
	inv := st.invoice(id, fy)
	if inv == nil {
		return response{}, newError(http.StatusNotFound, "/IWBEP/CM_MGW_RT/020",
			fmt.Sprintf("Supplier invoice %s %s does not exist", id, fy))
	}
	if inv.status == statusPosted {
		return response{}, newError(http.StatusBadRequest, "M8/255",
			fmt.Sprintf("Document %s %s has already been posted", inv.id, inv.fiscalYear))
	}
	if inv.postingDate.Before(s.opts.ClosedBefore) {
		return response{}, newError(http.StatusBadRequest, "F5/201",
			fmt.Sprintf("Posting period %03d %d is not open", int(inv.postingDate.Month()), inv.postingDate.Year()))
	}
	if orig := st.duplicateOf(inv); orig != nil {
		return response{}, newError(http.StatusBadRequest, "M8/108",
			fmt.Sprintf("Check if invoice already entered under accounting doc. no. %s %s", orig.id, orig.fiscalYear))
	}
	switch sup := st.supplier(inv.supplier); {
	case sup == nil:
		return response{}, newError(http.StatusBadRequest, "06/025",
			fmt.Sprintf("Vendor %s not created (please check your input)", inv.supplier))
	case sup.postingBlocked || sup.deleted:
		return response{}, newError(http.StatusBadRequest, "F5/351",
			fmt.Sprintf("Account %s is blocked for posting in company code %s", sup.id, inv.companyCode))
	}
	for _, l := range inv.lines {
		po := st.order(l.po)
		if po == nil {
			return response{}, newError(http.StatusBadRequest, "06/019", fmt.Sprintf("Purchase order %s does not exist", l.po))
		}
		it := po.item(l.poItem)
		if it == nil {
			return response{}, newError(http.StatusBadRequest, "06/019",
				fmt.Sprintf("Purchase order %s item %s does not exist", l.po, itemNumber(l.poItem)))
		}
		switch {
		case po.deletion != "" || it.deletion != "":
			return response{}, newError(http.StatusBadRequest, "06/020",
				fmt.Sprintf("Purchase order %s item %s is flagged for deletion; no invoice can be posted", po.id, itemNumber(it.item)))
		case it.completelyDelivered && it.finallyInvoiced:
			return response{}, newError(http.StatusBadRequest, "06/020",
				fmt.Sprintf("Purchase order %s item %s is completely delivered and finally invoiced", po.id, itemNumber(it.item)))
		}
	}
	for _, l := range inv.lines {
		it := st.order(l.po).item(l.poItem)
		if it.grBased && len(st.receiptsFor(l.po, l.poItem)) == 0 {
			return response{}, newError(http.StatusBadRequest, "M8/081",
				fmt.Sprintf("No goods receipt for purchase order %s %s", l.po, itemNumber(l.poItem)))
		}
	}
	warning := ""
	for _, l := range inv.lines {
		if msg := priceVariance(l, *st.order(l.po).item(l.poItem), inv.currency); msg != "" {
			warning = msg
			break
		}
	}

	now := s.opts.Now()
	inv.status = statusPosted
	if warning != "" {
		inv.block = blockPriceVariance
	}
	st.postings = append(st.postings, &Posting{
		InvoiceID: inv.id, FiscalYear: inv.fiscalYear, PostedAt: now,
		PaymentBlock: inv.block, RepeatabilityID: w.repeatabilityID,
	})
	resp := jsonResponse(http.StatusOK, map[string]any{"d": map[string]any{"Release": obj{
		{"SupplierInvoice", inv.id},
		{"FiscalYear", inv.fiscalYear},
		{"SupplierInvoiceStatus", inv.status},
		{"PaymentBlockingReason", inv.block},
		{"PostingDate", wireDate(inv.postingDate)},
	}}})
	if warning != "" {
		resp.header.Set("sap-message", sapMessage("M8/082", warning, "warning"))
	}
	return resp, nil
}

// functionParam reads a quoted function import parameter.
func functionParam(w writeRequest, name string) (string, *apiError) {
	raw := w.query.Get(name)
	if raw == "" {
		return "", newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001",
			fmt.Sprintf("Mandatory parameter '%s' of function import is missing", name))
	}
	v, err := unquote(raw)
	if err != nil {
		return "", newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001",
			fmt.Sprintf("Invalid value for parameter '%s': %v", name, err))
	}
	return v, nil
}

// duplicateOf returns another posted invoice with the same supplier,
// supplier reference, document date and gross amount.
func (st *state) duplicateOf(inv *invoice) *invoice {
	for _, o := range st.invoices {
		if o == inv || o.status != statusPosted {
			continue
		}
		if o.supplier == inv.supplier && o.supplierRef == inv.supplierRef &&
			o.documentDate.Equal(inv.documentDate) && o.gross.Equal(inv.gross) {
			return o
		}
	}
	return nil
}

// priceVariance describes the line's price variance when it is above the
// tolerance, or returns "".
func priceVariance(l invoiceLine, it poItem, currency string) string {
	if l.qty.IsZero() {
		return ""
	}
	invPrice := l.amount.DivRound(l.qty, 4)
	poPrice := it.unitPrice()
	diff := invPrice.Sub(poPrice)
	if !diff.IsPositive() || poPrice.IsZero() {
		return ""
	}
	pct := diff.Mul(decimal.NewFromInt(100)).DivRound(poPrice, 2)
	abs := diff.Mul(l.qty).Round(2)
	if !pct.GreaterThan(tolerancePercent) && !abs.GreaterThan(toleranceAbsolute) {
		return ""
	}
	return fmt.Sprintf("Price variance for purchase order %s %s: invoice price %s %s exceeds order price %s %s by %s %%; invoice blocked for payment",
		l.po, itemNumber(l.poItem), amount(invPrice), currency, amount(poPrice), currency, pct.StringFixed(2))
}
