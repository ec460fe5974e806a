package erp

import "github.com/shopspring/decimal"

// Tolerance is how far an invoice line may exceed its purchase order and
// goods receipt before a person has to decide. A variance exceeds the
// tolerance when it is above either limit, as with SAP's tolerance keys.
type Tolerance struct {
	Percent  decimal.Decimal // e.g. 2 for 2 %
	Absolute decimal.Decimal // in the document currency, e.g. 50
}

// DefaultTolerance is 2 % or 50 in the document currency.
var DefaultTolerance = Tolerance{Percent: decimal.NewFromInt(2), Absolute: decimal.NewFromInt(50)}

// MatchStatus is the outcome of a three-way match.
type MatchStatus string

// The two outcomes of a three-way match.
const (
	Matched           MatchStatus = "matched"
	ToleranceExceeded MatchStatus = "tolerance_exceeded"
)

// VarianceKind says what a variance is in.
type VarianceKind string

// The kinds of variance the match measures.
const (
	PriceVariance    VarianceKind = "price"
	QuantityVariance VarianceKind = "quantity"
)

// MatchLine is one invoice line set against its PO item and receipts.
type MatchLine struct {
	InvoiceItem       string
	POID              string
	POItem            string
	InvoicedQuantity  decimal.Decimal
	OrderedQuantity   decimal.Decimal
	ReceivedQuantity  decimal.Decimal
	GoodsReceiptBased bool
	InvoicedUnitPrice decimal.Decimal
	POUnitPrice       decimal.Decimal
	Variances         []Variance // every non-zero variance above the PO or receipt
	WithinTolerance   bool
}

// Variance is by how much a line is over its PO price or its received (or,
// for items not receipt-based, ordered) quantity.
type Variance struct {
	InvoiceItem string
	Kind        VarianceKind
	Amount      decimal.Decimal // value of the variance in the document currency
	Percent     decimal.Decimal // relative to the PO price or the reference quantity
	Exceeds     bool
}

// MatchResult is the three-way match of one invoice.
type MatchResult struct {
	InvoiceID string
	Status    MatchStatus
	Currency  string
	Tolerance Tolerance
	Lines     []MatchLine
	Exceeding []Variance // the variances above the tolerance, in line order
}

// MatchInput is one invoice line with the PO item and received quantity it
// is matched against.
type MatchInput struct {
	Line     InvoiceLine
	POItem   POItem
	Received decimal.Decimal // sum of uncancelled goods receipts
}

// Match compares each invoice line with its PO item price and with the
// quantity received (or ordered, when the item is not goods-receipt based).
// Only variances in the supplier's favour count: an invoice below the PO
// price or quantity is within tolerance.
func Match(invoiceID, currency string, inputs []MatchInput, tol Tolerance) MatchResult {
	res := MatchResult{InvoiceID: invoiceID, Status: Matched, Currency: currency, Tolerance: tol}
	hundred := decimal.NewFromInt(100)
	for _, in := range inputs {
		poPrice := in.POItem.UnitPrice()
		refQty := in.POItem.Quantity
		if in.POItem.GoodsReceiptBased {
			refQty = in.Received
		}
		line := MatchLine{
			InvoiceItem:       in.Line.Item,
			POID:              in.Line.POID,
			POItem:            in.Line.POItem,
			InvoicedQuantity:  in.Line.Quantity,
			OrderedQuantity:   in.POItem.Quantity,
			ReceivedQuantity:  in.Received,
			GoodsReceiptBased: in.POItem.GoodsReceiptBased,
			InvoicedUnitPrice: in.Line.UnitPrice(),
			POUnitPrice:       poPrice,
			WithinTolerance:   true,
		}
		if diff := line.InvoicedUnitPrice.Sub(poPrice); diff.IsPositive() {
			v := Variance{InvoiceItem: in.Line.Item, Kind: PriceVariance,
				Amount: diff.Mul(in.Line.Quantity).Round(2), Percent: percent(diff, poPrice, hundred)}
			line.Variances = append(line.Variances, v)
		}
		if diff := in.Line.Quantity.Sub(refQty); diff.IsPositive() {
			v := Variance{InvoiceItem: in.Line.Item, Kind: QuantityVariance,
				Amount: diff.Mul(poPrice).Round(2), Percent: percent(diff, refQty, hundred)}
			line.Variances = append(line.Variances, v)
		}
		for i := range line.Variances {
			v := &line.Variances[i]
			v.Exceeds = v.Percent.GreaterThan(tol.Percent) || v.Amount.GreaterThan(tol.Absolute)
			if v.Exceeds {
				line.WithinTolerance = false
				res.Exceeding = append(res.Exceeding, *v)
			}
		}
		res.Lines = append(res.Lines, line)
	}
	if len(res.Exceeding) > 0 {
		res.Status = ToleranceExceeded
	}
	return res
}

// percent is diff as a percentage of base, rounded to two places; a variance
// against a zero base is 100 %.
func percent(diff, base, hundred decimal.Decimal) decimal.Decimal {
	if base.IsZero() {
		return hundred
	}
	return diff.Mul(hundred).DivRound(base, 2)
}
