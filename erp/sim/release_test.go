package sim_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

// TestReleaseLiftsPaymentBlock: Release releases a posted invoice blocked
// for payment and answers with ReleaseInvoiceExportParameters; it posts
// nothing. An invoice without a block, parked or posted, is M8/382.
func TestReleaseLiftsPaymentBlock(t *testing.T) {
	e := newEnv(t, sim.Options{})
	// Parked: nothing is blocked for payment yet.
	got := wantError(t, e.releaseBlock("5105600102", "2026", false), http.StatusBadRequest, "M8/382")
	if got.message != "Invoice 5105600102 2026 is not blocked for payment" {
		t.Errorf("message: got %q", got.message)
	}
	if r := e.postInvoice("5105600102", "2026"); r.status != http.StatusOK {
		t.Fatalf("post: got %d: %s", r.status, r.body)
	}
	invoice := invSrv + "/A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"
	if b := entity(t, e.get(invoice))["PaymentBlockingReason"]; b != "R" {
		t.Fatalf("block after post: got %v, want R", b)
	}

	r := e.releaseBlock("5105600102", "2026", true)
	if r.status != http.StatusOK {
		t.Fatalf("release: got %d: %s", r.status, r.body)
	}
	var v struct {
		D map[string]map[string]json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("release answer: %v: %s", err, r.body)
	}
	res := v.D["Release"]
	if len(v.D) != 1 || string(res["Success"]) != "true" || len(res) != 2 ||
		metadataType(res["__metadata"]) != "API_SUPPLIERINVOICE_PROCESS_SRV.ReleaseInvoiceExportParameters" {
		t.Errorf(`release answer: got %s, want {"d":{"Release":{"__metadata":{...ReleaseInvoiceExportParameters},"Success":true}}}`, r.body)
	}
	inv := entity(t, e.get(invoice))
	if inv["PaymentBlockingReason"] != "" || inv["SupplierInvoiceStatus"] != "5" {
		t.Errorf("invoice after release: got status %v block %v, want 5 and no block", inv["SupplierInvoiceStatus"], inv["PaymentBlockingReason"])
	}
	if l := e.sim.Ledger().Postings; len(l) != 1 || l[0].PaymentBlock != "R" {
		t.Errorf("ledger: got %+v, want the one posting, blocked R when posted", l)
	}
	// Released once, the invoice is blocked no more: a repeat finds
	// nothing blocked.
	wantError(t, e.releaseBlock("5105600102", "2026", true), http.StatusBadRequest, "M8/382")
	wantError(t, e.releaseBlock("5105600102", "2026", false), http.StatusBadRequest, "M8/382")
	wantError(t, e.releaseBlock("5105600100", "2026", false), http.StatusBadRequest, "M8/382")
	wantError(t, e.releaseBlock("5105600199", "2026", false), http.StatusNotFound, "/IWBEP/CM_MGW_RT/020")
}

// TestReleaseParameters: Release requires all three parameters SAP
// declares, DiscountDaysHaveToBeShifted as an Edm.Boolean literal.
func TestReleaseParameters(t *testing.T) {
	e := newEnv(t, sim.Options{})
	if r := e.postInvoice("5105600102", "2026"); r.status != http.StatusOK {
		t.Fatalf("post: got %d: %s", r.status, r.body)
	}
	for _, rel := range []string{
		"/Release",
		"/Release?SupplierInvoice='5105600102'&FiscalYear='2026'",
		"/Release?SupplierInvoice='5105600102'&DiscountDaysHaveToBeShifted=false",
		"/Release?FiscalYear='2026'&DiscountDaysHaveToBeShifted=false",
		"/Release?SupplierInvoice='5105600102'&FiscalYear='2026'&DiscountDaysHaveToBeShifted='false'",
		"/Release?SupplierInvoice='5105600102'&FiscalYear='2026'&DiscountDaysHaveToBeShifted=X",
		"/Release?SupplierInvoice='5105600102'&FiscalYear='2026'&DiscountDaysHaveToBeShifted=1",
		"/Release?SupplierInvoice='5105600102'&FiscalYear='2026'&DiscountDaysHaveToBeShifted=",
		"/Release?SupplierInvoice=5105600102&FiscalYear='2026'&DiscountDaysHaveToBeShifted=false",
	} {
		t.Run(rel, func(t *testing.T) {
			wantError(t, e.post(invSrv, rel, nil), http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001")
		})
	}
	invoice := invSrv + "/A_SupplierInvoice(SupplierInvoice='5105600102',FiscalYear='2026')"
	if b := entity(t, e.get(invoice))["PaymentBlockingReason"]; b != "R" {
		t.Errorf("block after refused releases: got %v, want R", b)
	}
}

// metadataType is the type named in a __metadata object, or "".
func metadataType(raw json.RawMessage) string {
	var v struct{ Type string }
	_ = json.Unmarshal(raw, &v)
	return v.Type
}
