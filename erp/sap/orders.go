package sap

import (
	"context"
	"errors"
	"net/http"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// PurchaseOrder returns the purchase order with its items, or a
// *erp.NotFoundError.
func (c *Client) PurchaseOrder(ctx context.Context, id string) (erp.PurchaseOrder, error) {
	r := request{
		call:     retry.Call{Service: erp.ServicePurchaseOrder, Operation: "read purchase order"},
		method:   http.MethodGet,
		url:      c.url(erp.ServicePurchaseOrder, entityKey("A_PurchaseOrder", id), param{"$expand", "to_PurchaseOrderItem"}),
		keys:     map[string]string{"po_id": id},
		notFound: &erp.NotFoundError{Entity: erp.EntityPurchaseOrder, ID: id},
	}
	return fetchEntity(ctx, c, r, purchaseOrderOf(id))
}

// GoodsReceipts returns the uncancelled goods receipts (movement type 101)
// of a purchase order item; an empty slice when there are none. The
// posting date is on the material document header, which comes expanded
// into each item in the same answer.
func (c *Client) GoodsReceipts(ctx context.Context, poID, poItem string) ([]erp.GoodsReceipt, error) {
	r := request{
		call:   retry.Call{Service: erp.ServiceMaterialDocument, Operation: "read goods receipts"},
		method: http.MethodGet,
		url: c.url(erp.ServiceMaterialDocument, "A_MaterialDocumentItem",
			param{"$filter", "PurchaseOrder eq " + literal(poID) +
				" and PurchaseOrderItem eq " + literal(poItem) +
				" and GoodsMovementType eq '101' and GoodsMovementIsCancelled eq false"},
			param{"$expand", materialDocumentExpand}),
		keys: map[string]string{"po_id": poID, "item": poItem},
	}
	items, err := fetchList(ctx, c, r, func(w wireMaterialDocumentItem) (*erp.GoodsReceipt, error) {
		// The filter already asks for this; a server that ignores part of
		// it must not make a reversal count as a receipt.
		if err := errors.Join(asked("purchase order", w.PurchaseOrder, poID),
			asked("purchase order item", itemNumber(w.PurchaseOrderItem), itemNumber(poItem))); err != nil {
			return nil, err
		}
		if w.GoodsMovementIsCancelled || (w.GoodsMovementType != "" && w.GoodsMovementType != "101") {
			return nil, nil
		}
		gr, err := w.toDomain()
		if err != nil {
			return nil, err
		}
		return &gr, nil
	})
	if err != nil {
		return nil, err
	}
	grs := make([]erp.GoodsReceipt, 0, len(items))
	for _, gr := range items {
		if gr != nil {
			grs = append(grs, *gr)
		}
	}
	return grs, nil
}
