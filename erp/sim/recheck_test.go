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

func holdBody(invoice string) map[string]string {
	return map[string]string{"SupplierInvoice": invoice, "FiscalYear": "2026", "Reason": "GR_MISSING", "RecheckAt": "/Date(1796083200000)/"}
}

// wireDate is t as an OData v2 JSON date.
func wireDate(t time.Time) string { return fmt.Sprintf("/Date(%d)/", t.UnixMilli()) }

func releaseHoldPath(id string) string { return "/ReleaseHold?HoldID='" + id + "'" }

// result decodes {"d":{"ReleaseHold":{...}}}.
func releaseHoldResult(t *testing.T, r reply) map[string]any {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("release hold: got %d: %s", r.status, r.body)
	}
	inner, _ := entity(t, r)["ReleaseHold"].(map[string]any)
	if inner == nil {
		t.Fatalf("release hold: no ReleaseHold result in %s", r.body)
	}
	return inner
}

func TestReleaseHold(t *testing.T) {
	e := newEnv(t, sim.Options{})
	if r := e.post(procSrv, "/HoldSet", holdBody("5105600105"), ""); r.status != http.StatusCreated {
		t.Fatalf("hold: got %d: %s", r.status, r.body)
	}
	invPath := invSrv + "/A_SupplierInvoice(SupplierInvoice='5105600105',FiscalYear='2026')"

	got := releaseHoldResult(t, e.post(procSrv, releaseHoldPath("H0000001"), nil, "rel-1"))
	want := map[string]any{"HoldID": "H0000001", "SupplierInvoice": "5105600105", "FiscalYear": "2026",
		"Status": "RELEASED", "SupplierInvoiceStatus": "A"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("release hold %s: got %v, want %v", k, got[k], v)
		}
	}
	inv := entity(t, e.get(invPath))
	if inv["SupplierInvoiceStatus"] != "A" || inv["PaymentBlockingReason"] != "" {
		t.Errorf("invoice after release: got status %v block %v, want A and no block", inv["SupplierInvoiceStatus"], inv["PaymentBlockingReason"])
	}
	h := entity(t, e.get(procSrv+"/HoldSet('H0000001')"))
	if h["Status"] != "RELEASED" || h["SupplierInvoiceStatus"] != "A" || h["ReleasedAt"] != wireDate(clock) {
		t.Errorf("hold after release: got %v", h)
	}

	// Released again, under another repeatability id or none: still 200.
	again := releaseHoldResult(t, e.post(procSrv, releaseHoldPath("H0000001"), nil, "rel-2"))
	if again["Status"] != "RELEASED" || again["SupplierInvoiceStatus"] != "A" {
		t.Errorf("second release: got %v", again)
	}
	l := e.sim.Ledger()
	if len(l.Holds) != 1 || l.Holds[0].Status != sim.HoldReleased || !l.Holds[0].ReleasedAt.Equal(clock) {
		t.Errorf("ledger hold: got %+v, want released at %v", l.Holds, clock)
	}
	var raw struct {
		Holds []map[string]any `json:"holds"`
	}
	if err := json.Unmarshal(e.admin(http.MethodGet, "/sim/admin/ledger", nil).body, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Holds) != 1 || raw.Holds[0]["released_at"] != "2026-11-29T10:00:00Z" || raw.Holds[0]["status"] != "RELEASED" {
		t.Errorf("admin ledger hold: got %v", raw.Holds)
	}

	wantError(t, e.post(procSrv, releaseHoldPath("H0000099"), nil, ""), http.StatusNotFound, "/IWBEP/CM_MGW_RT/020")
	wantError(t, e.post(procSrv, "/ReleaseHold", nil, ""), http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001")
	if r := e.do(http.MethodPost, procSrv+releaseHoldPath("H0000001"), nil, nil); r.status != http.StatusForbidden {
		t.Errorf("release without CSRF token: got %d, want 403", r.status)
	}
}

func TestReleaseHoldKeepsOtherHolds(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.post(procSrv, "/HoldSet", holdBody("5105600105"), "")
	e.post(procSrv, "/HoldSet", holdBody("5105600105"), "")
	invPath := invSrv + "/A_SupplierInvoice(SupplierInvoice='5105600105',FiscalYear='2026')"

	if got := releaseHoldResult(t, e.post(procSrv, releaseHoldPath("H0000001"), nil, "")); got["SupplierInvoiceStatus"] != "C" {
		t.Errorf("release of one of two holds: got invoice status %v, want C", got["SupplierInvoiceStatus"])
	}
	if inv := entity(t, e.get(invPath)); inv["SupplierInvoiceStatus"] != "C" || inv["PaymentBlockingReason"] != "H" {
		t.Errorf("invoice with a hold left: got %v %v, want C H", inv["SupplierInvoiceStatus"], inv["PaymentBlockingReason"])
	}
	if got := releaseHoldResult(t, e.post(procSrv, releaseHoldPath("H0000002"), nil, "")); got["SupplierInvoiceStatus"] != "A" {
		t.Errorf("release of the last hold: got invoice status %v, want A", got["SupplierInvoiceStatus"])
	}
}

func TestReleaseHoldOfPostedInvoice(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.post(procSrv, "/HoldSet", holdBody("5105600101"), "")
	if r := e.release("5105600101", "2026", ""); r.status != http.StatusOK {
		t.Fatalf("release of held invoice: got %d: %s", r.status, r.body)
	}
	if got := releaseHoldResult(t, e.post(procSrv, releaseHoldPath("H0000001"), nil, "")); got["SupplierInvoiceStatus"] != "5" {
		t.Errorf("hold release of a posted invoice: got status %v, want 5", got["SupplierInvoiceStatus"])
	}
	inv := entity(t, e.get(invSrv+"/A_SupplierInvoice(SupplierInvoice='5105600101',FiscalYear='2026')"))
	if inv["SupplierInvoiceStatus"] != "5" || inv["PaymentBlockingReason"] != "" {
		t.Errorf("posted invoice after hold release: got %v block %v, want 5 and no block", inv["SupplierInvoiceStatus"], inv["PaymentBlockingReason"])
	}
}

func TestAdminGoodsReceipt(t *testing.T) {
	e := newEnv(t, sim.Options{})
	grPath := mdSrv + "/A_MaterialDocumentItem" + q("$filter",
		"PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '20' and GoodsMovementType eq '101' and GoodsMovementIsCancelled eq false")
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
		rows[0]["PostingDate"] != wireDate(time.Date(2026, time.November, 29, 0, 0, 0, 0, time.UTC)) {
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
