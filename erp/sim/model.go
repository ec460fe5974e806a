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
	// baseline is the day the terms of payment count from (SAP's
	// DueCalculationBaseDate); zero for none.
	baseline time.Time
	terms    paymentTerms
	lines    []invoiceLine
}

// paymentTerms are the terms of payment SAP copies onto an invoice's
// header: the key, and each period in days from the baseline date with its
// cash discount percentage.
type paymentTerms struct {
	key                    string
	cd1Days, cd2Days       int
	cd1Percent, cd2Percent decimal.Decimal
	netDays                int
}

// The terms of payment of the golden set.
var (
	// termsDiscount: within 14 days 3 % cash discount, within 20 days 2 %,
	// within 30 days due net.
	termsDiscount = paymentTerms{key: "ZB01", cd1Days: 14, cd1Percent: decimal.RequireFromString("3"),
		cd2Days: 20, cd2Percent: decimal.RequireFromString("2"), netDays: 30}
	// termsNet30: within 30 days due net.
	termsNet30 = paymentTerms{key: "NT30", netDays: 30}
)

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

// materialDocument is a material document header (A_MaterialDocumentHeader):
// SAP keeps the document's dates here, not on its items.
type materialDocument struct {
	year, doc                 string
	documentDate, postingDate time.Time
}

// receipt is a material document item (A_MaterialDocumentItem) of header.
type receipt struct {
	header     *materialDocument
	item       string
	po, poItem string
	movement   string
	cancelled  bool
	qty        decimal.Decimal
	unit       string
}

// supplier is the supplier role of a business partner (A_Supplier). It has
// no country: that is on the partner's address.
type supplier struct {
	id, name       string
	postingBlocked bool
	deleted        bool
}

// businessPartner is an A_BusinessPartner. supplier and customer are the
// numbers of its roles, "" when it has none. SAP keeps searchTerm1 and
// searchTerm2 in upper case.
type businessPartner struct {
	id                       string
	customer, supplier       string
	category                 string // 1 person, 2 organization
	name1, name2             string
	searchTerm1, searchTerm2 string
	addresses                []bpAddress
}

// fullName is BusinessPartnerFullName: the organization's names joined.
func (bp *businessPartner) fullName() string {
	if bp.name2 == "" {
		return bp.name1
	}
	return bp.name1 + " " + bp.name2
}

// bpAddress is an A_BusinessPartnerAddress of a business partner.
type bpAddress struct {
	id                 string
	validFrom, validTo time.Time
	street, house      string
	postalCode, city   string
	country            string // ISO 3166-1 alpha-2
}

// state is everything the simulated ERP holds; Server.mu guards it.
type state struct {
	invoices     []*invoice
	orders       []*purchaseOrder
	materialDocs []*materialDocument
	receipts     []*receipt
	suppliers    []*supplier
	partners     []*businessPartner

	postings []*Posting
}

// invoice returns the invoice with the key id and fiscalYear, or nil.
func (st *state) invoice(id, fiscalYear string) *invoice {
	for _, inv := range st.invoices {
		if inv.id == id && inv.fiscalYear == fiscalYear {
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
