package sap

import (
	"fmt"

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
}

// wireMaterialDocumentHeader is an A_MaterialDocumentHeader, expanded
// into its item as a single entity (the navigation has multiplicity 1).
type wireMaterialDocumentHeader struct {
	MaterialDocumentYear string  `json:"MaterialDocumentYear"`
	MaterialDocument     string  `json:"MaterialDocument"`
	PostingDate          sapDate `json:"PostingDate"`
}

// toDomain converts an item and its header. Without the header, or with a
// header of another document or without a posting date, the answer is
// malformed: a receipt is never given a date it does not have.
func (w wireMaterialDocumentItem) toDomain() (erp.GoodsReceipt, error) {
	if w.MaterialDocument == "" {
		return erp.GoodsReceipt{}, missing("MaterialDocument")
	}
	h := w.Header
	if h == nil {
		return erp.GoodsReceipt{}, missing(materialDocumentExpand)
	}
	if (h.MaterialDocument != "" && h.MaterialDocument != w.MaterialDocument) ||
		(h.MaterialDocumentYear != "" && h.MaterialDocumentYear != w.MaterialDocumentYear) {
		return erp.GoodsReceipt{}, fmt.Errorf("%s of material document %s %s is the header of %s %s",
			materialDocumentExpand, w.MaterialDocument, w.MaterialDocumentYear, h.MaterialDocument, h.MaterialDocumentYear)
	}
	if h.PostingDate.IsZero() {
		return erp.GoodsReceipt{}, missing(materialDocumentExpand + ".PostingDate")
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
