package sap

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/erpgate/erpgate/erp"
)

// materialDocumentExpand is the navigation from a material document item
// to its header, which holds the posting date: A_MaterialDocumentItem has
// none of its own.
const materialDocumentExpand = "to_MaterialDocumentHeader"

// wireMaterialDocumentItem is an A_MaterialDocumentItem read with
// $expand=to_MaterialDocumentHeader.
type wireMaterialDocumentItem struct {
	MaterialDocumentYear     string                      `json:"MaterialDocumentYear"`
	MaterialDocument         string                      `json:"MaterialDocument"`
	MaterialDocumentItem     string                      `json:"MaterialDocumentItem"`
	PurchaseOrder            string                      `json:"PurchaseOrder"`
	PurchaseOrderItem        string                      `json:"PurchaseOrderItem"`
	GoodsMovementType        string                      `json:"GoodsMovementType"`
	GoodsMovementIsCancelled bool                        `json:"GoodsMovementIsCancelled"`
	QuantityInEntryUnit      sapDecimal                  `json:"QuantityInEntryUnit"`
	EntryUnit                string                      `json:"EntryUnit"`
	Header                   *wireMaterialDocumentHeader `json:"to_MaterialDocumentHeader"`
	// bad is why the item's JSON cannot be read, keeping its key.
	bad *erp.DataError
}

// UnmarshalJSON reads a material document item leniently: JSON that does
// not fit its types leaves it bad, with its key, instead of failing the
// answer.
func (w *wireMaterialDocumentItem) UnmarshalJSON(data []byte) error {
	type plain wireMaterialDocumentItem
	if err := unmarshal(data, (*plain)(w)); err != nil {
		if !isObject(data) {
			return err
		}
		var k struct{ MaterialDocumentYear, MaterialDocument, MaterialDocumentItem jsontext.Value }
		_ = unmarshal(data, &k)
		*w = wireMaterialDocumentItem{MaterialDocumentYear: keyText(k.MaterialDocumentYear),
			MaterialDocument: keyText(k.MaterialDocument), MaterialDocumentItem: keyText(k.MaterialDocumentItem)}
		w.bad = w.invalid(err)
	}
	return nil
}

// invalid is the DataError of an item that cannot be read because of err.
func (w *wireMaterialDocumentItem) invalid(err error) *erp.DataError {
	return &erp.DataError{Service: erp.ServiceMaterialDocument, Entity: erp.EntityGoodsReceipt,
		Key: recordKey("MaterialDocumentYear", w.MaterialDocumentYear, "MaterialDocument", w.MaterialDocument,
			"MaterialDocumentItem", w.MaterialDocumentItem), Err: err}
}

// wireMaterialDocumentHeader is an A_MaterialDocumentHeader, expanded
// into its item as a single entity (the navigation has multiplicity 1).
type wireMaterialDocumentHeader struct {
	MaterialDocumentYear string  `json:"MaterialDocumentYear"`
	MaterialDocument     string  `json:"MaterialDocument"`
	PostingDate          sapDate `json:"PostingDate"`
}

// toDomain converts an item and its header. An item that cannot be read
// is an *erp.DataError, and so is one without the header, or with a
// header of another document or without a posting date: a receipt is
// never given a date it does not have.
func (w wireMaterialDocumentItem) toDomain() (erp.GoodsReceipt, error) {
	if w.bad != nil {
		return erp.GoodsReceipt{}, w.bad
	}
	if w.MaterialDocument == "" {
		return erp.GoodsReceipt{}, w.invalid(missing("MaterialDocument"))
	}
	h := w.Header
	if h == nil {
		return erp.GoodsReceipt{}, w.invalid(missing(materialDocumentExpand))
	}
	if (h.MaterialDocument != "" && h.MaterialDocument != w.MaterialDocument) ||
		(h.MaterialDocumentYear != "" && h.MaterialDocumentYear != w.MaterialDocumentYear) {
		return erp.GoodsReceipt{}, w.invalid(fmt.Errorf("%s of material document %s %s is the header of %s %s",
			materialDocumentExpand, w.MaterialDocument, w.MaterialDocumentYear, h.MaterialDocument, h.MaterialDocumentYear))
	}
	if h.PostingDate.IsZero() {
		return erp.GoodsReceipt{}, w.invalid(missing(materialDocumentExpand + ".PostingDate"))
	}
	return erp.GoodsReceipt{
		MaterialDocument: w.MaterialDocument,
		Year:             w.MaterialDocumentYear,
		Item:             itemNumber(w.MaterialDocumentItem),
		POID:             w.PurchaseOrder,
		POItem:           itemNumber(w.PurchaseOrderItem),
		Quantity:         w.QuantityInEntryUnit.Decimal,
		Unit:             w.EntryUnit,
		PostingDate:      h.PostingDate.Time,
	}, nil
}
