package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp"
)

func handleGetPurchaseOrder(orders erp.PurchaseOrders) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id := chi.URLParam(r, "po_id")
		if err := checkID("po_id", id, poIDPattern, "10 digits, e.g. 4500018822"); err != nil {
			return nil, err
		}
		po, err := orders.PurchaseOrder(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return toPurchaseOrder(po), nil
	}
}

type receiptReader interface {
	GoodsReceipt(ctx context.Context, poID, item string) (erp.POItem, []erp.GoodsReceipt, error)
}

func handleGetGoodsReceipt(g receiptReader) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		po, item := chi.URLParam(r, "po_id"), chi.URLParam(r, "item")
		if err := checkID("po_id", po, poIDPattern, "10 digits, e.g. 4500018822"); err != nil {
			return nil, err
		}
		if err := checkID("item", item, itemPattern, "the PO item number, 1 to 5 digits, e.g. 10"); err != nil {
			return nil, err
		}
		item = alpha(item)
		it, grs, err := g.GoodsReceipt(r.Context(), po, item)
		if err != nil {
			return nil, err
		}
		return toGoodsReceipts(po, item, it, grs), nil
	}
}
