package sap

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// invoiceStatus maps SupplierInvoiceStatus to the gateway's statuses: A
// parked, B parked and completed, E parked and released are all not yet
// posted; C parked and held and D entered and held are on hold; 5 posted.
func invoiceStatus(s string) (erp.InvoiceStatus, error) {
	switch s {
	case "A", "B", "E":
		return erp.InvoiceParked, nil
	case "5":
		return erp.InvoicePosted, nil
	case "C", "D":
		return erp.InvoiceHeld, nil
	}
	return "", fmt.Errorf("unknown SupplierInvoiceStatus %q", s)
}

// results is an expanded navigation property.
type results[T any] struct {
	Results []T `json:"results"`
}

// wireInvoice is an A_SupplierInvoice.
type wireInvoice struct {
	SupplierInvoice               string                       `json:"SupplierInvoice"`
	FiscalYear                    string                       `json:"FiscalYear"`
	CompanyCode                   string                       `json:"CompanyCode"`
	DocumentDate                  sapDate                      `json:"DocumentDate"`
	PostingDate                   sapDate                      `json:"PostingDate"`
	InvoicingParty                string                       `json:"InvoicingParty"`
	SupplierInvoiceIDByInvcgParty string                       `json:"SupplierInvoiceIDByInvcgParty"`
	DocumentCurrency              string                       `json:"DocumentCurrency"`
	InvoiceGrossAmount            sapDecimal                   `json:"InvoiceGrossAmount"`
	SupplierInvoiceStatus         string                       `json:"SupplierInvoiceStatus"`
	PaymentBlockingReason         string                       `json:"PaymentBlockingReason"`
	Items                         *results[wireInvoiceItemRef] `json:"to_SuplrInvcItemPurOrdRef"`
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

func (w wireInvoice) toDomain() (erp.Invoice, error) {
	if w.SupplierInvoice == "" {
		return erp.Invoice{}, missing("SupplierInvoice")
	}
	st, err := invoiceStatus(w.SupplierInvoiceStatus)
	if err != nil {
		return erp.Invoice{}, err
	}
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
		Status:       st,
		PaymentBlock: w.PaymentBlockingReason,
	}
	if w.Items != nil {
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

// wireRelease is the result of the Release function import.
type wireRelease struct {
	SupplierInvoice       string  `json:"SupplierInvoice"`
	FiscalYear            string  `json:"FiscalYear"`
	SupplierInvoiceStatus string  `json:"SupplierInvoiceStatus"`
	PaymentBlockingReason string  `json:"PaymentBlockingReason"`
	PostingDate           sapDate `json:"PostingDate"`
}

// decodeRelease reads {"d":{"Release":{...}}}, the v2 form of a function
// import's complex result, or the result directly in "d".
func decodeRelease(body []byte) (wireRelease, error) {
	var d map[string]jsontext.Value
	if err := decodeEntity(body, &d); err != nil {
		return wireRelease{}, err
	}
	var w wireRelease
	var err error
	if inner, ok := d["Release"]; ok {
		err = unmarshal(inner, &w)
	} else {
		err = decodeEntity(body, &w)
	}
	if err != nil {
		return wireRelease{}, err
	}
	if w.SupplierInvoiceStatus == "" {
		return wireRelease{}, missing("SupplierInvoiceStatus")
	}
	if _, err := invoiceStatus(w.SupplierInvoiceStatus); err != nil {
		return wireRelease{}, err
	}
	return w, nil
}

// wirePurchaseOrder is an A_PurchaseOrder.
type wirePurchaseOrder struct {
	PurchaseOrder                  string               `json:"PurchaseOrder"`
	Supplier                       string               `json:"Supplier"`
	CompanyCode                    string               `json:"CompanyCode"`
	DocumentCurrency               string               `json:"DocumentCurrency"`
	PurchasingDocumentDeletionCode string               `json:"PurchasingDocumentDeletionCode"`
	Items                          *results[wirePOItem] `json:"to_PurchaseOrderItem"`
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

func (w wirePurchaseOrder) toDomain() (erp.PurchaseOrder, error) {
	if w.PurchaseOrder == "" {
		return erp.PurchaseOrder{}, missing("PurchaseOrder")
	}
	po := erp.PurchaseOrder{
		ID:           w.PurchaseOrder,
		SupplierID:   w.Supplier,
		CompanyCode:  w.CompanyCode,
		Currency:     w.DocumentCurrency,
		DeletionCode: w.PurchasingDocumentDeletionCode,
	}
	if w.Items != nil {
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

// wireMaterialDocumentItem is an A_MaterialDocumentItem.
type wireMaterialDocumentItem struct {
	MaterialDocumentYear     string     `json:"MaterialDocumentYear"`
	MaterialDocument         string     `json:"MaterialDocument"`
	MaterialDocumentItem     string     `json:"MaterialDocumentItem"`
	PurchaseOrder            string     `json:"PurchaseOrder"`
	PurchaseOrderItem        string     `json:"PurchaseOrderItem"`
	GoodsMovementType        string     `json:"GoodsMovementType"`
	GoodsMovementIsCancelled bool       `json:"GoodsMovementIsCancelled"`
	QuantityInEntryUnit      sapDecimal `json:"QuantityInEntryUnit"`
	EntryUnit                string     `json:"EntryUnit"`
	PostingDate              sapDate    `json:"PostingDate"`
}

func (w wireMaterialDocumentItem) toDomain() erp.GoodsReceipt {
	return erp.GoodsReceipt{
		MaterialDocument: w.MaterialDocument,
		Year:             w.MaterialDocumentYear,
		Item:             itemNumber(w.MaterialDocumentItem),
		POID:             w.PurchaseOrder,
		POItem:           itemNumber(w.PurchaseOrderItem),
		Quantity:         w.QuantityInEntryUnit.Decimal,
		Unit:             w.EntryUnit,
		PostingDate:      w.PostingDate.Time,
	}
}

// wireSupplier is an A_Supplier.
type wireSupplier struct {
	Supplier          string `json:"Supplier"`
	SupplierName      string `json:"SupplierName"`
	Country           string `json:"Country"`
	PostingIsBlocked  bool   `json:"PostingIsBlocked"`
	DeletionIndicator bool   `json:"DeletionIndicator"`
}

func (w wireSupplier) toDomain() (erp.Supplier, error) {
	if w.Supplier == "" {
		return erp.Supplier{}, missing("Supplier")
	}
	return erp.Supplier{
		ID:             w.Supplier,
		Name:           w.SupplierName,
		Country:        w.Country,
		PostingBlocked: w.PostingIsBlocked,
		Deleted:        w.DeletionIndicator,
	}, nil
}
