package sim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp/sim"
)

// wireDate is t as an OData v2 JSON date.
func wireDate(t time.Time) string { return fmt.Sprintf("/Date(%d)/", t.UnixMilli()) }

func TestAdminGoodsReceipt(t *testing.T) {
	e := newEnv(t, sim.Options{})
	grPath := mdSrv + "/A_MaterialDocumentItem" + q("$filter",
		"PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '20' and GoodsMovementType eq '101' and GoodsMovementIsCancelled eq false",
		"$expand", "to_MaterialDocumentHeader")
	if rows := list(t, e.get(grPath)); len(rows) != 0 {
		t.Fatalf("receipts before: got %v, want none", rows)
	}

	r := e.do(http.MethodPost, "/sim/admin/goods-receipts", map[string]any{"po_id": "4500018822", "item": "20", "quantity": "5"}, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("goods receipt: got %d: %s", r.status, r.body)
	}
	var gr map[string]any
	if err := json.Unmarshal(r.body, &gr); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"material_document": "4900000108", "year": "2026", "item": "1", "po_id": "4500018822", "po_item": "20",
		"movement_type": "101", "cancelled": false, "quantity": "5", "unit": "EA", "posting_date": "2026-11-29T00:00:00Z"}
	for k, v := range want {
		if gr[k] != v {
			t.Errorf("goods receipt %s: got %v, want %v", k, gr[k], v)
		}
	}
	rows := list(t, e.get(grPath))
	if len(rows) != 1 || rows[0]["MaterialDocument"] != "4900000108" || rows[0]["QuantityInEntryUnit"] != "5.000" ||
		rows[0]["to_MaterialDocumentHeader"].(map[string]any)["PostingDate"] != wireDate(time.Date(2026, time.November, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("receipts after: got %v", rows)
	}

	doc, err := e.sim.PostGoodsReceipt("4500018822", "00020", decimal.NewFromInt(2))
	if err != nil || doc != "4900000109" {
		t.Errorf("PostGoodsReceipt: got %q, %v, want 4900000109", doc, err)
	}
	if got := column(list(t, e.get(grPath)), "MaterialDocument"); !slices.Equal(got, []string{"4900000108", "4900000109"}) {
		t.Errorf("receipts: got %v", got)
	}
	if _, err := e.sim.PostGoodsReceipt("4500018822", "30", decimal.NewFromInt(1)); !errors.Is(err, sim.ErrNoPOItem) {
		t.Errorf("PostGoodsReceipt of an unknown item: got %v, want ErrNoPOItem", err)
	}
	if _, err := e.sim.PostGoodsReceipt("4500018822", "20", decimal.Zero); !errors.Is(err, sim.ErrInvalidQuantity) {
		t.Errorf("PostGoodsReceipt of zero: got %v, want ErrInvalidQuantity", err)
	}

	bad := []struct {
		body   any
		status int
	}{
		{map[string]any{"po_id": "4500099999", "item": "10", "quantity": 1}, http.StatusNotFound},
		{map[string]any{"po_id": "4500018822", "item": "90", "quantity": 1}, http.StatusNotFound},
		{map[string]any{"po_id": "4500018822", "item": "20", "quantity": -1}, http.StatusBadRequest},
		{map[string]any{"po_id": "4500018822", "item": "20"}, http.StatusBadRequest},
		{map[string]any{"item": "20", "quantity": 1}, http.StatusBadRequest},
		{"{", http.StatusBadRequest},
	}
	for _, b := range bad {
		if r := e.do(http.MethodPost, "/sim/admin/goods-receipts", b.body, nil); r.status != b.status {
			t.Errorf("goods receipt %v: got %d, want %d: %s", b.body, r.status, b.status, r.body)
		}
	}
	if n := len(list(t, e.get(grPath))); n != 2 {
		t.Errorf("receipts after bad requests: got %d, want 2", n)
	}
}
