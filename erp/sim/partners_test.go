package sim_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp/sim"
)

// dateTimeOffset is t as an OData v2 JSON Edm.DateTimeOffset.
func dateTimeOffset(t time.Time) string { return strings.TrimSuffix(wireDate(t), ")/") + "+0000)/" }

func TestMaterialDocumentHeader(t *testing.T) {
	e := newEnv(t, sim.Options{})
	nov18 := wireDate(time.Date(2026, time.November, 18, 0, 0, 0, 0, time.UTC))

	h := entity(t, e.get(mdSrv+"/A_MaterialDocumentHeader(MaterialDocumentYear='2026',MaterialDocument='4900000101')"))
	if h["PostingDate"] != nov18 || h["DocumentDate"] != nov18 {
		t.Errorf("header 4900000101: got %v, want posting and document date %s", h, nov18)
	}
	if _, ok := h["to_MaterialDocumentItem"].(map[string]any)["__deferred"]; !ok {
		t.Errorf("unexpanded to_MaterialDocumentItem: got %v, want __deferred", h["to_MaterialDocumentItem"])
	}
	if n := len(list(t, e.get(mdSrv+"/A_MaterialDocumentHeader"))); n != 7 {
		t.Errorf("headers: got %d, want 7", n)
	}

	// Header to items: a collection, expanded as {"results":[...]}.
	h = entity(t, e.get(mdSrv+"/A_MaterialDocumentHeader(MaterialDocumentYear='2026',MaterialDocument='4900000101')"+q("$expand", "to_MaterialDocumentItem")))
	items, ok := h["to_MaterialDocumentItem"].(map[string]any)["results"].([]any)
	if !ok || len(items) != 1 || items[0].(map[string]any)["PurchaseOrder"] != "4500018822" {
		t.Errorf("expanded to_MaterialDocumentItem: got %v, want one item of PO 4500018822", h["to_MaterialDocumentItem"])
	}

	// Item to header: a single entity, expanded as the entity itself.
	rows := list(t, e.get(mdSrv+"/A_MaterialDocumentItem"+q(
		"$filter", "PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '10' and GoodsMovementType eq '101' and GoodsMovementIsCancelled eq false",
		"$expand", "to_MaterialDocumentHeader")))
	if len(rows) != 1 {
		t.Fatalf("items: got %v, want one", rows)
	}
	hdr, ok := rows[0]["to_MaterialDocumentHeader"].(map[string]any)
	if !ok || hdr["MaterialDocument"] != "4900000101" || hdr["PostingDate"] != nov18 {
		t.Errorf("expanded to_MaterialDocumentHeader: got %v, want header 4900000101 posted %s", rows[0]["to_MaterialDocumentHeader"], nov18)
	}
	if _, isList := hdr["results"]; isList {
		t.Errorf("expanded to_MaterialDocumentHeader: got a results list, want the entity")
	}
	if md, _ := hdr["__metadata"].(map[string]any); md["type"] != "API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentHeaderType" {
		t.Errorf("header __metadata: got %v", hdr["__metadata"])
	}

	nav := entity(t, e.get(mdSrv+"/A_MaterialDocumentItem(MaterialDocumentYear='2026',MaterialDocument='4900000106',MaterialDocumentItem='1')/to_MaterialDocumentHeader"))
	if nav["PostingDate"] != wireDate(time.Date(2026, time.September, 30, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("item/to_MaterialDocumentHeader: got %v, want posting date 2026-09-30", nav)
	}
	wantError(t, e.get(mdSrv+"/A_MaterialDocumentHeader(MaterialDocumentYear='2026',MaterialDocument='4900009999')"), 404, "/IWBEP/CM_MGW_RT/020")

	// A posted receipt gets a header of its own, dated by the clock.
	doc, err := e.sim.PostGoodsReceipt("4500018822", "20", decimal.NewFromInt(5))
	if err != nil {
		t.Fatal(err)
	}
	h = entity(t, e.get(mdSrv+"/A_MaterialDocumentHeader(MaterialDocumentYear='2026',MaterialDocument='"+doc+"')"))
	if h["PostingDate"] != wireDate(time.Date(2026, time.November, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("header of posted receipt %s: got %v, want posting date 2026-11-29", doc, h)
	}
}

func TestBusinessPartners(t *testing.T) {
	e := newEnv(t, sim.Options{})
	expand := "to_Supplier,to_BusinessPartnerAddress"

	bp := entity(t, e.get(bpSrv+"/A_BusinessPartner('100042')"+q("$expand", expand)))
	if bp["Supplier"] != "100042" || bp["SearchTerm1"] != "ACME" || bp["BusinessPartnerFullName"] != "Acme Industrial Supplies GmbH" {
		t.Errorf("partner 100042: got %v", bp)
	}
	sup, ok := bp["to_Supplier"].(map[string]any)
	if !ok || sup["Supplier"] != "100042" || sup["PostingIsBlocked"] != false || sup["DeletionIndicator"] != false {
		t.Errorf("expanded to_Supplier: got %v, want supplier 100042 as an entity", bp["to_Supplier"])
	}
	if _, isList := sup["results"]; isList {
		t.Errorf("expanded to_Supplier: got a results list, want the entity")
	}
	addrs, ok := bp["to_BusinessPartnerAddress"].(map[string]any)["results"].([]any)
	if !ok || len(addrs) != 1 {
		t.Fatalf("expanded to_BusinessPartnerAddress: got %v, want {\"results\":[one address]}", bp["to_BusinessPartnerAddress"])
	}
	a := addrs[0].(map[string]any)
	if a["Country"] != "DE" || a["CityName"] != "München" || a["BusinessPartner"] != "100042" {
		t.Errorf("address of 100042: got %v", a)
	}
	if a["ValidityEndDate"] != dateTimeOffset(time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("ValidityEndDate: got %v, want an Edm.DateTimeOffset /Date(ms+0000)/ of 9999-12-31T23:59:59Z", a["ValidityEndDate"])
	}

	deferred := entity(t, e.get(bpSrv+"/A_BusinessPartner('100042')"))
	for _, n := range []string{"to_Supplier", "to_BusinessPartnerAddress"} {
		if _, ok := deferred[n].(map[string]any)["__deferred"]; !ok {
			t.Errorf("unexpanded %s: got %v, want __deferred", n, deferred[n])
		}
	}

	// A customer has no supplier role: to_Supplier expands to null.
	cust := entity(t, e.get(bpSrv+"/A_BusinessPartner('100070')"+q("$expand", expand)))
	if v, ok := cust["to_Supplier"]; !ok || v != nil || cust["Supplier"] != "" {
		t.Errorf("customer 100070: got Supplier %v, to_Supplier %v, want empty and null", cust["Supplier"], cust["to_Supplier"])
	}
	wantError(t, e.get(bpSrv+"/A_BusinessPartner('100070')/to_Supplier"), 404, "/IWBEP/CM_MGW_RT/020")
	wantError(t, e.get(bpSrv+"/A_BusinessPartner('100999')"), 404, "/IWBEP/CM_MGW_RT/020")

	nav := entity(t, e.get(bpSrv+"/A_BusinessPartner('1000050')/to_Supplier"))
	if nav["Supplier"] != "100050" || nav["PostingIsBlocked"] != true {
		t.Errorf("1000050/to_Supplier: got %v, want supplier 100050, posting blocked", nav)
	}
	navAddrs := list(t, e.get(bpSrv+"/A_BusinessPartner('100043')/to_BusinessPartnerAddress"))
	if got := column(navAddrs, "Country"); !reflect.DeepEqual(got, []string{"AT", "DE"}) {
		t.Errorf("addresses of 100043: got %v, want the old AT and the current DE", got)
	}
	addr := entity(t, e.get(bpSrv+"/A_BusinessPartnerAddress(BusinessPartner='100044',AddressID='23002')"))
	if addr["Country"] != "GB" {
		t.Errorf("address 100044/23002: got %v", addr)
	}
}

func TestBusinessPartnerFilters(t *testing.T) {
	e := newEnv(t, sim.Options{})
	tests := []struct {
		name, filter string
		want         []string // BusinessPartner
	}{
		{"by supplier", "Supplier eq '100042'", []string{"100042"}},
		{"by supplier numbered apart", "Supplier eq '100050'", []string{"1000050"}},
		{"unknown supplier", "Supplier eq '100999'", []string{}},
		{"search term in upper case", "substringof('ACME',SearchTerm1) eq true", []string{"100042", "100044", "100070"}},
		{"search term is case-sensitive", "substringof('acme',SearchTerm1) eq true", []string{}},
		{"suppliers only", "substringof('ACME',SearchTerm1) eq true and Supplier ne ''", []string{"100042", "100044"}},
		{"no match", "substringof('ZEPPELIN',SearchTerm1) eq true and Supplier ne ''", []string{}},
		{"name is case-sensitive", "substringof('acme',BusinessPartnerFullName) eq true", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.get(bpSrv + "/A_BusinessPartner" + q("$filter", tt.filter, "$expand", "to_Supplier,to_BusinessPartnerAddress"))
			if r.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200: %s", r.status, r.body)
			}
			if got := column(list(t, r), "BusinessPartner"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	wantError(t, e.get(bpSrv+"/A_BusinessPartner"+q("$expand", "to_Customer")), 400, "/IWBEP/CM_MGW_RT/001")
}
