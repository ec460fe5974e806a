package sap

import (
	"context"
	"errors"
	"net/http"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// PurchaseOrder returns the purchase order with its items, or a
// *erp.NotFoundError when SAP Gateway answers that it does not exist. An
// order whose answer does not fit the service's $metadata is an
// *erp.DataError inside the *erp.UpstreamError.
func (c *Client) PurchaseOrder(ctx context.Context, id string) (erp.PurchaseOrder, error) {
	r := request{
		call:   retry.Call{Service: erp.ServicePurchaseOrder, Operation: "read purchase order"},
		method: http.MethodGet,
		url:    c.url(erp.ServicePurchaseOrder, entityKey("A_PurchaseOrder", id), param{"$expand", "to_PurchaseOrderItem"}),
		keys:   map[string]string{"po_id": id},
	}
	conv := purchaseOrderOf(id)
	po, err := fetchEntity(ctx, c, r, func(w wirePurchaseOrder) (erp.PurchaseOrder, error) {
		// An order that cannot be read may have lost its id with the
		// rest: it is bad data, not an answer about another order.
		if w.bad != nil {
			return erp.PurchaseOrder{}, w.bad
		}
		return conv(w)
	})
	return po, entityNotFound(err, &erp.NotFoundError{Entity: erp.EntityPurchaseOrder, ID: id})
}

// GoodsReceipts returns the uncancelled goods receipts (movement type 101)
// of a purchase order item; an empty slice when there are none. The
// posting date is on the material document header, which comes expanded
// into each item in the same answer. An item that cannot be read is
// skipped and logged with its key, unless no item of the answer can be
// read: then the answer is an *erp.DataError, never "no receipt".
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
	odd := skipped{c: c, r: r}
	items, err := fetchList(ctx, c, r, func(w wireMaterialDocumentItem) (*erp.GoodsReceipt, error) {
		if w.bad != nil {
			odd.skip(ctx, w.bad)
			return nil, nil
		}
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
		if de, ok := errors.AsType[*erp.DataError](err); ok {
			odd.skip(ctx, de)
			return nil, nil
		}
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
	if err := odd.onlyOdd(len(grs)); err != nil {
		return nil, err
	}
	return grs, nil
}
