package sim

import (
	"time"

	"github.com/shopspring/decimal"
)

// SAP invoice statuses and payment blocks the simulator uses.
const (
	statusParked = "A"
	statusPosted = "5"

	blockPriceVariance = "R"
)

type invoice struct {
	id, fiscalYear, companyCode string
	supplier, supplierRef       string
	documentDate, postingDate   time.Time
	currency                    string
	gross                       decimal.Decimal
	status, block               string
	lines                       []invoiceLine
}

type invoiceLine struct {
	item, po, poItem string
	qty              decimal.Decimal
	unit             string
	amount           decimal.Decimal
}

type purchaseOrder struct {
	id, supplier, companyCode, currency, deletion string
	items                                         []poItem
}

type poItem struct {
	item, material, text string
	qty                  decimal.Decimal
	unit                 string
	netPrice, priceUnit  decimal.Decimal
	finallyInvoiced      bool
	completelyDelivered  bool
	grBased, grExpected  bool
	deletion             string
}

// unitPrice is the net price of one unit.
func (it poItem) unitPrice() decimal.Decimal {
	if it.priceUnit.IsZero() {
		return it.netPrice
	}
	return it.netPrice.DivRound(it.priceUnit, 4)
}

type receipt struct {
	year, doc, item string
	po, poItem      string
	movement        string
	cancelled       bool
	qty             decimal.Decimal
	unit            string
	postingDate     time.Time
}

type supplier struct {
	id, name, country string
	postingBlocked    bool
	deleted           bool
}

// state is everything the simulated ERP holds; Server.mu guards it.
type state struct {
	invoices  []*invoice
	orders    []*purchaseOrder
	receipts  []*receipt
	suppliers []*supplier

	postings []*Posting
}

func (st *state) invoice(id, fiscalYear string) *invoice {
	for _, inv := range st.invoices {
		if inv.id == id && (fiscalYear == "" || inv.fiscalYear == fiscalYear) {
			return inv
		}
	}
	return nil
}

func (st *state) order(id string) *purchaseOrder {
	for _, po := range st.orders {
		if po.id == id {
			return po
		}
	}
	return nil
}

func (po *purchaseOrder) item(item string) *poItem {
	for i := range po.items {
		if sameValue("PurchaseOrderItem", po.items[i].item, item) {
			return &po.items[i]
		}
	}
	return nil
}

func (st *state) supplier(id string) *supplier {
	for _, s := range st.suppliers {
		if s.id == id {
			return s
		}
	}
	return nil
}

// receiptsFor returns the uncancelled goods receipts (movement 101) of a PO
// item.
func (st *state) receiptsFor(po, item string) []*receipt {
	var out []*receipt
	for _, r := range st.receipts {
		if r.po == po && sameValue("PurchaseOrderItem", r.poItem, item) && r.movement == "101" && !r.cancelled {
			out = append(out, r)
		}
	}
	return out
}
