package sap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
)

// sapDate is an OData v2 JSON date, "/Date(ms)/" or "/Date(ms+hhmm)/" with
// ms since the epoch in UTC. null and "" are the zero time.
type sapDate struct{ time.Time }

func (d *sapDate) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		d.Time = time.Time{}
		return nil
	}
	if ms, ok := plainDate(b); ok {
		d.Time = time.UnixMilli(ms).UTC()
		return nil
	}
	s, ok := plainString(b)
	if !ok {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("date: %w", err)
		}
	}
	t, err := parseDate(s)
	if err != nil {
		return err
	}
	d.Time = t
	return nil
}

// parseDate reads "/Date(ms)/" and "/Date(ms±hhmm)/". The offset only says
// in which zone the value was entered; ms is UTC either way, so the result
// is in UTC. An RFC 3339 time is accepted as well.
func parseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	inner, ok := strings.CutPrefix(s, "/Date(")
	if !ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("date %q: not /Date(ms)/", s)
		}
		return t.UTC(), nil
	}
	inner, ok = strings.CutSuffix(inner, ")/")
	if !ok || inner == "" {
		return time.Time{}, fmt.Errorf("date %q: not /Date(ms)/", s)
	}
	// A sign after the first character starts the offset.
	if i := strings.IndexAny(inner[1:], "+-"); i >= 0 {
		off := inner[i+1:]
		inner = inner[:i+1]
		if len(off) != 5 {
			return time.Time{}, fmt.Errorf("date %q: bad offset", s)
		}
		if _, err := strconv.Atoi(off[1:]); err != nil {
			return time.Time{}, fmt.Errorf("date %q: bad offset", s)
		}
	}
	ms, err := strconv.ParseInt(inner, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("date %q: bad milliseconds", s)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// plainDate reads the milliseconds of a JSON string "/Date(ms)/" or
// "/Date(ms±hhmm)/", its slashes escaped or not, as SAP sends dates,
// without making a string of it; ok is false for anything else, which
// parseDate reads (and names what is wrong with).
func plainDate(b []byte) (ms int64, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return 0, false
	}
	in := b[1 : len(b)-1]
	if len(in) > 0 && in[0] == '\\' {
		in = in[1:]
	}
	if len(in) < len("/Date()/") || string(in[:6]) != "/Date(" {
		return 0, false
	}
	in = in[6:]
	switch {
	case len(in) >= 3 && string(in[len(in)-3:]) == ")\\/":
		in = in[:len(in)-3]
	case len(in) >= 2 && string(in[len(in)-2:]) == ")/":
		in = in[:len(in)-2]
	default:
		return 0, false
	}
	neg := len(in) > 0 && in[0] == '-'
	if neg {
		in = in[1:]
	}
	n := 0
	for n < len(in) && '0' <= in[n] && in[n] <= '9' {
		n++
	}
	if n == 0 || n > 18 {
		return 0, false
	}
	if off := in[n:]; len(off) > 0 {
		if len(off) != 5 || off[0] != '+' && off[0] != '-' {
			return 0, false
		}
		for _, c := range off[1:] {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
	}
	for _, c := range in[:n] {
		ms = ms*10 + int64(c-'0')
	}
	if neg {
		ms = -ms
	}
	return ms, true
}

// plainDecimal reads a decimal of at most 18 digits, [-]digits[.digits],
// as a JSON string or number, into the value decimal.NewFromString makes
// of it, without making a string of it; ok is false for anything else,
// which NewFromString reads.
func plainDecimal(b []byte) (v decimal.Decimal, ok bool) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	var c int64
	digits, frac, point := 0, 0, false
	for i, ch := range b {
		switch {
		case '0' <= ch && ch <= '9':
			c = c*10 + int64(ch-'0')
			digits++
			if point {
				frac++
			}
		case ch == '.' && !point && i > 0 && i < len(b)-1:
			point = true
		default:
			return decimal.Decimal{}, false
		}
	}
	if digits == 0 || digits > 18 {
		return decimal.Decimal{}, false
	}
	if neg {
		c = -c
	}
	return decimal.New(c, int32(-frac)), true
}

// plainString returns the text of a JSON string of printable ASCII without
// escapes, as SAP sends dates and decimals, without a second JSON decoder;
// ok is false for any other value, which the caller decodes in full.
func plainString(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	for _, c := range in {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(in), true
}

// sapDecimal is an Edm.Decimal, sent by OData v2 as a JSON string
// ("1000.00"); a JSON number is accepted too. null and "" are zero.
type sapDecimal struct{ decimal.Decimal }

func (d *sapDecimal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		d.Decimal = decimal.Zero
		return nil
	}
	if v, ok := plainDecimal(b); ok {
		d.Decimal = v
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		var ok bool
		if s, ok = plainString(b); !ok {
			if err := json.Unmarshal(b, &s); err != nil {
				return err
			}
		}
		s = strings.TrimSpace(s)
	} else {
		s = string(b)
	}
	if s == "" {
		d.Decimal = decimal.Zero
		return nil
	}
	v, err := decimal.NewFromString(s)
	if err != nil {
		return fmt.Errorf("decimal %q: %w", s, err)
	}
	d.Decimal = v
	return nil
}

// itemNumber drops the leading zeros SAP may keep in item numbers
// ("00010"), so items compare equal whichever form a service uses.
func itemNumber(s string) string {
	s = strings.TrimSpace(s)
	t := strings.TrimLeft(s, "0")
	if t == "" && s != "" {
		return "0"
	}
	return t
}

// invoiceStatus maps A_SupplierInvoice's SupplierInvoiceStatus to the
// gateway's statuses. SAP's $metadata of API_SUPPLIERINVOICE_PROCESS_SRV
// gives the property (Edm.String, MaxLength 1) only the label "Invoice doc.
// status" and no value list; the values are those SAP documents for the
// data element behind it, RBSTAT (invoice document status):
//
//	A  parked                                             parked
//	B  parked and completed                               parked
//	E  parked and released                                parked
//	C  held (parked)                                      held
//	D  held (entered)                                     held
//	5  posted                                             posted
//	4  correct (posted, not completed), in the background posted
//	2  deleted                                            deleted
//	1  planned for verification in the background         other
//	3  contains errors, found in the background           other
//
// RBSTAT documents a blank status as posted by the online verification of
// older releases, but blank is also what a missing property reads as, so
// it is not taken for a posting: it is other, and a Post of such an invoice
// settles with M8/255 should it be posted. Any value not listed is other
// too. erp.Invoice.SAPStatus keeps the code itself, whatever it maps to.
//
// reversed says the document was cancelled by a reversal document or is
// one (ReverseDocument, IsReversed, IsReversal); it turns a posted document
// into a reversed one.
func invoiceStatus(code string, reversed bool) erp.InvoiceStatus {
	switch code {
	case "A", "B", "E":
		return erp.InvoiceParked
	case "C", "D":
		return erp.InvoiceHeld
	case "5", "4":
		if reversed {
			return erp.InvoiceReversed
		}
		return erp.InvoicePosted
	case "2":
		return erp.InvoiceDeleted
	}
	return erp.InvoiceOther
}

// The wire types of the entities the gateway reads (wireInvoice,
// wirePurchaseOrder, wireBusinessPartner, wireMaterialDocumentItem) read
// themselves leniently: a record whose JSON does not fit its declared
// types (a string where SAP declares a boolean, a date that is no date)
// does not fail the answer it comes in, so that a list can skip it and
// read the others. The record keeps its key and the failure, and its
// toDomain reports it as an *erp.DataError: bad data, which no retry
// mends, not an answer that cannot be read at all. JSON that is broken
// (cut short, not JSON), or a value that is no object where an entity
// belongs, still fails the whole answer.

// skipped keeps what a list read left out: the entries that cannot be
// read, each logged with its key.
type skipped struct {
	c     *Client
	r     request
	first *erp.DataError
}

// skip logs an entry the list leaves out.
func (s *skipped) skip(ctx context.Context, de *erp.DataError) {
	if s.first == nil {
		s.first = de
	}
	s.c.log.WarnContext(ctx, "sap: list entry skipped: it cannot be read", "service", string(de.Service),
		"operation", s.r.call.Operation, "entity", string(de.Entity), "key", de.Key, "error", de.Err)
}

// onlyOdd returns the list read's error when it skipped entries and kept
// none, nil otherwise. With nothing well-formed beside them, the entries
// that cannot be read may be the very ones asked for: an empty answer
// would make a fault of the data a business fact (no goods receipt, no
// such supplier).
func (s *skipped) onlyOdd(kept int) error {
	if kept > 0 || s.first == nil {
		return nil
	}
	return s.r.upstream(http.StatusOK, func(up *erp.UpstreamError) {
		up.Text = "no entry of the answer can be read"
		up.Call = erp.CallList
		up.Attempts = 1
		up.Err = s.first
	})
}

// isObject reports whether data is a JSON object: only an entity that is
// one is read leniently; any other value where an entity belongs breaks
// the answer's shape.
func isObject(data []byte) bool {
	data = bytes.TrimSpace(data)
	return len(data) > 0 && data[0] == '{'
}

// keyText is the text of a key property as the answer gives it: the
// string, or the JSON of any other value; "" when absent or null.
func keyText(v jsontext.Value) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// recordKey writes a record's key in OData key form,
// Name='value',Name='value', from name and value pairs, for the log; ""
// when no value is known.
func recordKey(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pairs[i])
		b.WriteString("='")
		b.WriteString(quoteString(pairs[i+1]))
		b.WriteByte('\'')
	}
	return b.String()
}

// results is an expanded navigation property.
type results[T any] struct {
	Results []T `json:"results"`
}

// wireInvoice is an A_SupplierInvoice. ReverseDocument ("Reversed by") is
// the reversal document that cancelled the invoice; IsReversed and
// IsReversal say the invoice was reversed or is a reversal document. SAP's
// cloud $metadata declares all three, the on-premise one ReverseDocument
// and IsReversal. PaymentTerms, DueCalculationBaseDate (the baseline date)
// and the periods CashDiscount1Days, CashDiscount2Days and NetPaymentDays
// (Edm.Decimal of precision 3, scale 0) are the terms of payment; a system
// that sends none of them gives an invoice without a due date.
type wireInvoice struct {
	SupplierInvoice               string                      `json:"SupplierInvoice"`
	FiscalYear                    string                      `json:"FiscalYear"`
	CompanyCode                   string                      `json:"CompanyCode"`
	DocumentDate                  sapDate                     `json:"DocumentDate"`
	PostingDate                   sapDate                     `json:"PostingDate"`
	InvoicingParty                string                      `json:"InvoicingParty"`
	SupplierInvoiceIDByInvcgParty string                      `json:"SupplierInvoiceIDByInvcgParty"`
	DocumentCurrency              string                      `json:"DocumentCurrency"`
	InvoiceGrossAmount            sapDecimal                  `json:"InvoiceGrossAmount"`
	SupplierInvoiceStatus         string                      `json:"SupplierInvoiceStatus"`
	PaymentBlockingReason         string                      `json:"PaymentBlockingReason"`
	ReverseDocument               string                      `json:"ReverseDocument"`
	IsReversed                    bool                        `json:"IsReversed"`
	IsReversal                    bool                        `json:"IsReversal"`
	PaymentTerms                  string                      `json:"PaymentTerms"`
	DueCalculationBaseDate        sapDate                     `json:"DueCalculationBaseDate"`
	CashDiscount1Days             sapDecimal                  `json:"CashDiscount1Days"`
	CashDiscount2Days             sapDecimal                  `json:"CashDiscount2Days"`
	NetPaymentDays                sapDecimal                  `json:"NetPaymentDays"`
	Items                         results[wireInvoiceItemRef] `json:"to_SuplrInvcItemPurOrdRef"`
	// bad is why the invoice's JSON cannot be read, keeping its key.
	bad *erp.DataError
}

// UnmarshalJSON reads an invoice leniently: JSON that does not fit its
// types leaves it bad, with its key, instead of failing the answer.
func (w *wireInvoice) UnmarshalJSON(data []byte) error {
	type plain wireInvoice
	if err := unmarshal(data, (*plain)(w)); err != nil {
		if !isObject(data) {
			return err
		}
		var k struct{ SupplierInvoice, FiscalYear jsontext.Value }
		_ = unmarshal(data, &k)
		*w = wireInvoice{SupplierInvoice: keyText(k.SupplierInvoice), FiscalYear: keyText(k.FiscalYear)}
		w.bad = w.invalid(err)
	}
	return nil
}

// invalid is the DataError of an invoice that cannot be read because of err.
func (w *wireInvoice) invalid(err error) *erp.DataError {
	return &erp.DataError{Service: erp.ServiceSupplierInvoice, Entity: erp.EntityInvoice,
		Key: recordKey("SupplierInvoice", w.SupplierInvoice, "FiscalYear", w.FiscalYear), Err: err}
}

// wireInvoiceItemRef is an A_SuplrInvcItemPurOrdRef.
type wireInvoiceItemRef struct {
	SupplierInvoice             string     `json:"SupplierInvoice"`
	FiscalYear                  string     `json:"FiscalYear"`
	SupplierInvoiceItem         string     `json:"SupplierInvoiceItem"`
	PurchaseOrder               string     `json:"PurchaseOrder"`
	PurchaseOrderItem           string     `json:"PurchaseOrderItem"`
	QuantityInPurchaseOrderUnit sapDecimal `json:"QuantityInPurchaseOrderUnit"`
	PurchaseOrderQuantityUnit   string     `json:"PurchaseOrderQuantityUnit"`
	SupplierInvoiceItemAmount   sapDecimal `json:"SupplierInvoiceItemAmount"`
	DocumentCurrency            string     `json:"DocumentCurrency"`
}

// toDomain converts an invoice; one that cannot be read is an
// *erp.DataError.
func (w wireInvoice) toDomain() (erp.Invoice, error) {
	if w.bad != nil {
		return erp.Invoice{}, w.bad
	}
	if w.SupplierInvoice == "" {
		return erp.Invoice{}, w.invalid(missing("SupplierInvoice"))
	}
	cd1, err1 := paymentDays("CashDiscount1Days", w.CashDiscount1Days.Decimal)
	cd2, err2 := paymentDays("CashDiscount2Days", w.CashDiscount2Days.Decimal)
	net, err3 := paymentDays("NetPaymentDays", w.NetPaymentDays.Decimal)
	if err := errors.Join(err1, err2, err3); err != nil {
		return erp.Invoice{}, w.invalid(err)
	}
	reversed := w.ReverseDocument != "" || w.IsReversed || w.IsReversal
	inv := erp.Invoice{
		ID:           w.SupplierInvoice,
		FiscalYear:   w.FiscalYear,
		CompanyCode:  w.CompanyCode,
		SupplierID:   w.InvoicingParty,
		SupplierRef:  w.SupplierInvoiceIDByInvcgParty,
		DocumentDate: w.DocumentDate.Time,
		PostingDate:  w.PostingDate.Time,
		Currency:     w.DocumentCurrency,
		GrossAmount:  w.InvoiceGrossAmount.Decimal,
		Status:       invoiceStatus(w.SupplierInvoiceStatus, reversed),
		SAPStatus:    w.SupplierInvoiceStatus,
		PaymentBlock: w.PaymentBlockingReason,
		PaymentTerms: w.PaymentTerms,
		BaselineDate: w.DueCalculationBaseDate.Time,

		CashDiscount1Days: cd1, CashDiscount2Days: cd2, NetPaymentDays: net,
	}
	if w.Items.Results != nil {
		inv.Lines = make([]erp.InvoiceLine, 0, len(w.Items.Results))
		for _, it := range w.Items.Results {
			inv.Lines = append(inv.Lines, erp.InvoiceLine{
				Item:     itemNumber(it.SupplierInvoiceItem),
				POID:     it.PurchaseOrder,
				POItem:   itemNumber(it.PurchaseOrderItem),
				Quantity: it.QuantityInPurchaseOrderUnit.Decimal,
				Unit:     it.PurchaseOrderQuantityUnit,
				Amount:   it.SupplierInvoiceItemAmount.Decimal,
			})
		}
	}
	return inv, nil
}

// maxPaymentDays is the most days a period of the terms of payment holds:
// SAP declares the periods Edm.Decimal of precision 3, scale 0.
var maxPaymentDays = decimal.NewFromInt(999)

// paymentDays reads the period of the terms of payment named name: a whole
// number of days from 0 to 999.
func paymentDays(name string, d decimal.Decimal) (int, error) {
	if !d.IsInteger() || d.IsNegative() || d.GreaterThan(maxPaymentDays) {
		return 0, fmt.Errorf("%s %s is no number of days from 0 to 999", name, d)
	}
	return int(d.IntPart()), nil
}

// wirePurchaseOrder is an A_PurchaseOrder.
type wirePurchaseOrder struct {
	PurchaseOrder                  string              `json:"PurchaseOrder"`
	Supplier                       string              `json:"Supplier"`
	CompanyCode                    string              `json:"CompanyCode"`
	DocumentCurrency               string              `json:"DocumentCurrency"`
	PurchasingDocumentDeletionCode string              `json:"PurchasingDocumentDeletionCode"`
	Items                          results[wirePOItem] `json:"to_PurchaseOrderItem"`
	// bad is why the order's JSON cannot be read, keeping its key.
	bad *erp.DataError
}

// UnmarshalJSON reads a purchase order leniently: JSON that does not fit
// its types leaves it bad, with its key, instead of failing the answer.
func (w *wirePurchaseOrder) UnmarshalJSON(data []byte) error {
	type plain wirePurchaseOrder
	if err := unmarshal(data, (*plain)(w)); err != nil {
		if !isObject(data) {
			return err
		}
		var k struct{ PurchaseOrder jsontext.Value }
		_ = unmarshal(data, &k)
		*w = wirePurchaseOrder{PurchaseOrder: keyText(k.PurchaseOrder)}
		w.bad = w.invalid(err)
	}
	return nil
}

// invalid is the DataError of an order that cannot be read because of err.
func (w *wirePurchaseOrder) invalid(err error) *erp.DataError {
	return &erp.DataError{Service: erp.ServicePurchaseOrder, Entity: erp.EntityPurchaseOrder,
		Key: recordKey("PurchaseOrder", w.PurchaseOrder), Err: err}
}

// wirePOItem is an A_PurchaseOrderItem.
type wirePOItem struct {
	PurchaseOrder                  string     `json:"PurchaseOrder"`
	PurchaseOrderItem              string     `json:"PurchaseOrderItem"`
	Material                       string     `json:"Material"`
	PurchaseOrderItemText          string     `json:"PurchaseOrderItemText"`
	OrderQuantity                  sapDecimal `json:"OrderQuantity"`
	PurchaseOrderQuantityUnit      string     `json:"PurchaseOrderQuantityUnit"`
	NetPriceAmount                 sapDecimal `json:"NetPriceAmount"`
	NetPriceQuantity               sapDecimal `json:"NetPriceQuantity"`
	DocumentCurrency               string     `json:"DocumentCurrency"`
	IsFinallyInvoiced              bool       `json:"IsFinallyInvoiced"`
	IsCompletelyDelivered          bool       `json:"IsCompletelyDelivered"`
	InvoiceIsGoodsReceiptBased     bool       `json:"InvoiceIsGoodsReceiptBased"`
	GoodsReceiptIsExpected         bool       `json:"GoodsReceiptIsExpected"`
	PurchasingDocumentDeletionCode string     `json:"PurchasingDocumentDeletionCode"`
}

// toDomain converts a purchase order with its items; one that cannot be
// read is an *erp.DataError.
func (w wirePurchaseOrder) toDomain() (erp.PurchaseOrder, error) {
	if w.bad != nil {
		return erp.PurchaseOrder{}, w.bad
	}
	if w.PurchaseOrder == "" {
		return erp.PurchaseOrder{}, w.invalid(missing("PurchaseOrder"))
	}
	po := erp.PurchaseOrder{
		ID:           w.PurchaseOrder,
		SupplierID:   w.Supplier,
		CompanyCode:  w.CompanyCode,
		Currency:     w.DocumentCurrency,
		DeletionCode: w.PurchasingDocumentDeletionCode,
	}
	if w.Items.Results != nil {
		po.Items = make([]erp.POItem, 0, len(w.Items.Results))
		for _, it := range w.Items.Results {
			cur := it.DocumentCurrency
			if cur == "" {
				cur = w.DocumentCurrency
			}
			po.Items = append(po.Items, erp.POItem{
				Item:                 itemNumber(it.PurchaseOrderItem),
				Material:             it.Material,
				Text:                 it.PurchaseOrderItemText,
				Quantity:             it.OrderQuantity.Decimal,
				Unit:                 it.PurchaseOrderQuantityUnit,
				NetPrice:             it.NetPriceAmount.Decimal,
				PriceUnit:            it.NetPriceQuantity.Decimal,
				Currency:             cur,
				FinallyInvoiced:      it.IsFinallyInvoiced,
				CompletelyDelivered:  it.IsCompletelyDelivered,
				GoodsReceiptBased:    it.InvoiceIsGoodsReceiptBased,
				GoodsReceiptExpected: it.GoodsReceiptIsExpected,
				DeletionCode:         it.PurchasingDocumentDeletionCode,
			})
		}
	}
	return po, nil
}
