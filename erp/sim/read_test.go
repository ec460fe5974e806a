package sim_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

func TestGoldenInvoices(t *testing.T) {
	e := newEnv(t, sim.Options{})
	tests := []struct {
		id, fy, supplier, ref, gross, status, po, poItem, qty string
	}{
		{"5105600100", "2026", "100043", "INV-88120", "1190.00", "5", "4500018860", "10", "10.000"},
		{"5105600101", "2026", "100042", "ACME-2026-0412", "1000.00", "A", "4500018822", "10", "10.000"},
		{"5105600102", "2026", "100042", "ACME-2026-0419", "13500.00", "A", "4500018823", "10", "100.000"},
		{"5105600103", "2026", "100042", "ACME-2026-0420", "1000.00", "A", "4500019822", "10", "10.000"},
		{"5105600104", "2026", "100999", "GX-7781", "1000.00", "A", "4500018822", "10", "10.000"},
		{"5105600105", "2026", "100042", "ACME-2026-0421", "1000.00", "A", "4500018822", "20", "5.000"},
		{"5105600106", "2026", "100043", "NW-55102", "800.00", "A", "4500018830", "10", "1.000"},
		{"5105600107", "2026", "100043", "INV-88120", "1190.00", "A", "4500018860", "10", "10.000"},
		{"5105600108", "2026", "100043", "NW-55230", "250000.00", "A", "4500018840", "10", "1.000"},
		{"5105600109", "2025", "100042", "ACME-2025-1299", "600.00", "A", "4500018850", "10", "5.000"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			byKey := e.get(invSrv + "/A_SupplierInvoice(SupplierInvoice='" + tt.id + "',FiscalYear='" + tt.fy + "')" + q("$expand", "to_SuplrInvcItemPurOrdRef"))
			byFilter := list(t, e.get(invSrv+"/A_SupplierInvoice"+q("$filter", "SupplierInvoice eq '"+tt.id+"'", "$expand", "to_SuplrInvcItemPurOrdRef", "$format", "json")))
			if len(byFilter) != 1 {
				t.Fatalf("filter by id: got %d invoices, want 1", len(byFilter))
			}
			for name, inv := range map[string]map[string]any{"key": entity(t, byKey), "filter": byFilter[0]} {
				got := []any{inv["FiscalYear"], inv["InvoicingParty"], inv["SupplierInvoiceIDByInvcgParty"], inv["InvoiceGrossAmount"], inv["SupplierInvoiceStatus"], inv["CompanyCode"], inv["DocumentCurrency"]}
				want := []any{tt.fy, tt.supplier, tt.ref, tt.gross, tt.status, "1010", "EUR"}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %v, want %v", name, got, want)
				}
				items := inv["to_SuplrInvcItemPurOrdRef"].(map[string]any)["results"].([]any)
				if len(items) != 1 {
					t.Fatalf("%s: got %d items, want 1", name, len(items))
				}
				it := items[0].(map[string]any)
				got = []any{it["PurchaseOrder"], it["PurchaseOrderItem"], it["QuantityInPurchaseOrderUnit"], it["SupplierInvoiceItemAmount"], it["SupplierInvoiceItem"]}
				want = []any{tt.po, tt.poItem, tt.qty, tt.gross, "1"}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s item: got %v, want %v", name, got, want)
				}
			}
		})
	}
	if n := len(list(t, e.get(invSrv+"/A_SupplierInvoice"))); n != len(tests) {
		t.Errorf("invoice count: got %d, want %d", n, len(tests))
	}
}

func TestGoldenMasterData(t *testing.T) {
	e := newEnv(t, sim.Options{})
	orders := []struct {
		id, supplier, deletion string
		items                  []string
	}{
		{"4500018822", "100042", "", []string{"10", "20"}},
		{"4500018823", "100042", "", []string{"10"}},
		{"4500018830", "100043", "", []string{"10"}},
		{"4500018831", "100043", "L", []string{"10"}},
		{"4500018840", "100043", "", []string{"10"}},
		{"4500018850", "100042", "", []string{"10"}},
		{"4500018860", "100043", "", []string{"10"}},
	}
	for _, o := range orders {
		po := entity(t, e.get(poSrv+"/A_PurchaseOrder('"+o.id+"')"+q("$expand", "to_PurchaseOrderItem")))
		items := po["to_PurchaseOrderItem"].(map[string]any)["results"].([]any)
		var got []string
		for _, it := range items {
			got = append(got, it.(map[string]any)["PurchaseOrderItem"].(string))
		}
		if po["Supplier"] != o.supplier || po["PurchasingDocumentDeletionCode"] != o.deletion || !reflect.DeepEqual(got, o.items) {
			t.Errorf("PO %s: got supplier %v deletion %v items %v, want %s %q %v", o.id, po["Supplier"], po["PurchasingDocumentDeletionCode"], got, o.supplier, o.deletion, o.items)
		}
	}
	closed := entity(t, e.get(poSrv+"/A_PurchaseOrder('4500018830')"+q("$expand", "to_PurchaseOrderItem")))
	it := closed["to_PurchaseOrderItem"].(map[string]any)["results"].([]any)[0].(map[string]any)
	if it["IsCompletelyDelivered"] != true || it["IsFinallyInvoiced"] != true || it["NetPriceAmount"] != "800.00" || it["OrderQuantity"] != "1.000" {
		t.Errorf("PO 4500018830 item 10: got %v", it)
	}
	deferred := entity(t, e.get(poSrv+"/A_PurchaseOrder('4500018822')"))
	if _, ok := deferred["to_PurchaseOrderItem"].(map[string]any)["__deferred"]; !ok {
		t.Errorf("unexpanded navigation: got %v, want __deferred", deferred["to_PurchaseOrderItem"])
	}
	navItems := list(t, e.get(poSrv+"/A_PurchaseOrder('4500018822')/to_PurchaseOrderItem"))
	if got := column(navItems, "PurchaseOrderItemText"); !reflect.DeepEqual(got, []string{"Steel bolts M8", "Hex nuts M8"}) {
		t.Errorf("navigation items: got %v", got)
	}

	// A_Supplier has no Country: that is on the business partner's address.
	suppliers := map[string][]any{
		"100042": {"Acme Industrial Supplies GmbH", false, nil},
		"100043": {"Nordwind Logistik AG", false, nil},
		"100044": {"Acme Office Furniture Ltd", false, nil},
		"100050": {"Baltic Trading OÜ", true, nil},
	}
	for id, want := range suppliers {
		s := entity(t, e.get(bpSrv+"/A_Supplier('"+id+"')"))
		if got := []any{s["SupplierName"], s["PostingIsBlocked"], s["Country"]}; !reflect.DeepEqual(got, want) {
			t.Errorf("supplier %s: got %v, want %v", id, got, want)
		}
	}
	receipts := list(t, e.get(mdSrv+"/A_MaterialDocumentItem"))
	if len(receipts) != 7 {
		t.Errorf("material document items: got %d, want 7", len(receipts))
	}
	gr := entity(t, e.get(mdSrv+"/A_MaterialDocumentItem(MaterialDocumentYear='2026',MaterialDocument='4900000101',MaterialDocumentItem='1')"))
	// A_MaterialDocumentItem has no PostingDate: that is on the header.
	if _, dated := gr["PostingDate"]; gr["PurchaseOrder"] != "4500018822" || gr["QuantityInEntryUnit"] != "10.000" || dated {
		t.Errorf("receipt 4900000101: got %v", gr)
	}
}

func TestFilters(t *testing.T) {
	e := newEnv(t, sim.Options{})
	grFilter := func(po, item string) string {
		return "PurchaseOrder eq '" + po + "' and PurchaseOrderItem eq '" + item + "' and GoodsMovementType eq '101' and GoodsMovementIsCancelled eq false"
	}
	tests := []struct {
		name, path, column string
		want               []string
	}{
		{"duplicate check", invSrv + "/A_SupplierInvoice" + q("$filter", "InvoicingParty eq '100043' and SupplierInvoiceIDByInvcgParty eq 'INV-88120'", "$expand", "to_SuplrInvcItemPurOrdRef"), "SupplierInvoice", []string{"5105600100", "5105600107"}},
		{"unknown invoice", invSrv + "/A_SupplierInvoice" + q("$filter", "SupplierInvoice eq '5105600199'"), "SupplierInvoice", []string{}},
		{"receipt", mdSrv + "/A_MaterialDocumentItem" + q("$filter", grFilter("4500018822", "10")), "MaterialDocument", []string{"4900000101"}},
		{"item compared as number", mdSrv + "/A_MaterialDocumentItem" + q("$filter", grFilter("4500018822", "00010")), "MaterialDocument", []string{"4900000101"}},
		{"cancelled receipt filtered out", mdSrv + "/A_MaterialDocumentItem" + q("$filter", grFilter("4500018822", "20")), "MaterialDocument", []string{}},
		{"cancelled receipt", mdSrv + "/A_MaterialDocumentItem" + q("$filter", "PurchaseOrder eq '4500018822' and GoodsMovementIsCancelled eq true"), "MaterialDocument", []string{"4900000107"}},
		{"substringof", bpSrv + "/A_Supplier" + q("$filter", "substringof('Acme',SupplierName) eq true", "$top", "10"), "Supplier", []string{"100042", "100044"}},
		{"substringof is case-sensitive", bpSrv + "/A_Supplier" + q("$filter", "substringof('ACME',SupplierName) eq true"), "Supplier", []string{}},
		{"substringof with top", bpSrv + "/A_Supplier" + q("$filter", "substringof('Acme',SupplierName) eq true", "$top", "1"), "Supplier", []string{"100042"}},
		{"substringof eq false", bpSrv + "/A_Supplier" + q("$filter", "substringof('Acme',SupplierName) eq false"), "Supplier", []string{"100043", "100050"}},
		{"boolean", bpSrv + "/A_Supplier" + q("$filter", "PostingIsBlocked eq true"), "Supplier", []string{"100050"}},
		{"parentheses and select", bpSrv + "/A_Supplier" + q("$filter", "(DeletionIndicator eq false) and PostingIsBlocked eq false", "$select", "Supplier"), "Supplier", []string{"100042", "100043", "100044"}},
		{"quote in literal", bpSrv + "/A_Supplier" + q("$filter", "SupplierName eq 'O''Brien'"), "Supplier", []string{}},
		{"item set", poSrv + "/A_PurchaseOrderItem" + q("$filter", "PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '020'"), "PurchaseOrderItemText", []string{"Hex nuts M8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.get(tt.path)
			if r.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200: %s", r.status, r.body)
			}
			if got := column(list(t, r), tt.column); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBadRequestsAndNotFound(t *testing.T) {
	e := newEnv(t, sim.Options{})
	tests := []struct {
		name, path string
		status     int
		code       string
	}{
		{"or is unsupported", bpSrv + "/A_Supplier" + q("$filter", "Supplier eq '100042' or Supplier eq '100043'"), 400, "/IWBEP/CM_MGW_RT/001"},
		{"gt is unsupported", bpSrv + "/A_Supplier" + q("$filter", "Supplier gt '100042'"), 400, "/IWBEP/CM_MGW_RT/001"},
		{"unknown property", bpSrv + "/A_Supplier" + q("$filter", "Colour eq 'red'"), 400, "/IWBEP/CM_MGW_RT/001"},
		{"type mismatch", bpSrv + "/A_Supplier" + q("$filter", "PostingIsBlocked eq 'X'"), 400, "/IWBEP/CM_MGW_RT/001"},
		{"unterminated literal", bpSrv + "/A_Supplier" + q("$filter", "Supplier eq '100042"), 400, "/IWBEP/CM_MGW_RT/001"},
		{"bad top", bpSrv + "/A_Supplier" + q("$top", "ten"), 400, "/IWBEP/CM_MGW_RT/001"},
		{"unknown expand", poSrv + "/A_PurchaseOrder('4500018822')" + q("$expand", "to_Supplier"), 400, "/IWBEP/CM_MGW_RT/001"},
		{"unknown entity set", invSrv + "/A_Nothing", 404, "/IWBEP/CM_MGW_RT/020"},
		{"unknown service", "/sap/opu/odata/sap/API_NOTHING_SRV/A_Nothing", 404, "/IWFND/MED/170"},
		{"outside the gateway", "/index.html", 404, "/IWFND/CM_CONSUMER/404"},
		{"unknown invoice", invSrv + "/A_SupplierInvoice(SupplierInvoice='5105600199',FiscalYear='2026')", 404, "/IWBEP/CM_MGW_RT/020"},
		{"invoice in other year", invSrv + "/A_SupplierInvoice(SupplierInvoice='5105600109',FiscalYear='2026')", 404, "/IWBEP/CM_MGW_RT/020"},
		{"unknown PO", poSrv + "/A_PurchaseOrder('4500019822')" + q("$expand", "to_PurchaseOrderItem"), 404, "06/019"},
		{"unknown supplier", bpSrv + "/A_Supplier('100999')", 404, "/IWBEP/CM_MGW_RT/020"},
		{"process service not published", "/sap/opu/odata/sap/ZERPGATE_PROCESS_SRV/ApprovalSet('A9999999')", 404, "/IWFND/MED/170"},
		{"function import with GET", invSrv + "/Release", 405, "/IWBEP/CM_MGW_RT/003"},
	}
	for _, form := range []string{sim.EnvelopeV2, sim.EnvelopeV2Detail, sim.EnvelopeV4} {
		e.admin(http.MethodPost, "/sim/admin/envelope", map[string]string{"form": form})
		for _, tt := range tests {
			t.Run(form+"/"+tt.name, func(t *testing.T) {
				got := wantError(t, e.get(tt.path), tt.status, tt.code)
				if len(got.details) == 0 || got.details[0] != tt.code+":error" {
					t.Errorf("details: got %v, want %s:error first", got.details, tt.code)
				}
				if got.message == "" {
					t.Errorf("message: got empty")
				}
				if hasTx := got.txid != ""; hasTx != (form != sim.EnvelopeV4) {
					t.Errorf("transactionid: got %q in form %s", got.txid, form)
				}
			})
		}
	}
	po := wantError(t, e.get(poSrv+"/A_PurchaseOrder('4500019822')"), 404, "06/019")
	if po.message != "Purchase order 4500019822 does not exist" {
		t.Errorf("message: got %q", po.message)
	}
}

func TestServiceDocumentAndMetadata(t *testing.T) {
	e := newEnv(t, sim.Options{})
	r := e.get(invSrv + "/")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"A_SupplierInvoice"`) {
		t.Errorf("service document: got %d %s", r.status, r.body)
	}
	r = e.get(invSrv + "/$metadata")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `FunctionImport Name="Release"`) {
		t.Errorf("$metadata: got %d %s", r.status, r.body)
	}
	r = e.get("/sap/opu/odata/sap/API_BUSINESS_PARTNER;v=0002/A_Supplier('100042')")
	if r.status != http.StatusOK {
		t.Errorf("segment parameter: got %d, want 200", r.status)
	}
}
