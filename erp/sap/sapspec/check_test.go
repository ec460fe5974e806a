package sapspec

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

const testBase = "http://s4.example.com/sap/opu/odata/sap/TEST_SRV"

// newRequest builds a request; headers are "Name: value".
func newRequest(method, target, body string, headers ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return req
}

// escapeQuery percent-encodes what a URL's query cannot hold as it is.
func escapeQuery(s string) string {
	return strings.NewReplacer(" ", "%20", "'", "%27", "+", "%2B").Replace(s)
}

func TestCheckGoodRequests(t *testing.T) {
	spec := testSpec(t)
	guid := "005056a2-0000-1ed0-0000-000000000000"
	tests := []struct {
		method, path, body string
		headers            []string
	}{
		{method: "GET", path: "/", headers: []string{"X-CSRF-Token: Fetch"}},
		{method: "HEAD", path: "/", headers: []string{"X-CSRF-Token: Fetch"}},
		{method: "GET", path: "/$metadata"},
		{method: "GET", path: "/$metadata?sap-client=100"},
		{method: "GET", path: "/Orders"},
		{method: "GET", path: "/Orders('A1')"},
		{method: "GET", path: "/Orders(OrderID='A1')"},
		{method: "GET", path: "/Orders('O%27%27Brien')"},
		{method: "GET", path: "/Items(OrderID='A1',Item='10')"},
		{method: "GET", path: "/Items(Item='10',OrderID='A1')"},
		{method: "GET", path: "/Orders('A1')/to_Items"},
		{method: "GET", path: "/Orders('A1')/to_Items(OrderID='A1',Item='10')/to_Order"},
		{method: "GET", path: "/Orders('A1')/to_Customer"},
		{method: "GET", path: "/Orders('A1')/Amount"},
		{method: "GET", path: "/Orders('A1')/Amount/$value"},
		{method: "GET", path: "/Orders/$count?" + escapeQuery("$filter=Open eq true")},
		{method: "GET", path: "/Customers(guid'" + guid + "')"},
		{method: "GET", path: "/Orders?" + escapeQuery("$filter=(OrderID eq 'A''1' or startswith(OrderID,'A')) and substringof('x',OrderID) eq true"+
			" and Amount gt 10.5M and Amount gt 10 and Created ge datetime'2026-01-01T00:00:00' and Open eq false and Token eq guid'"+guid+"'"+
			" and Lines le 3 and not (Lines eq 4) and to_Customer/Name eq 'Acme' and length(OrderID) eq 2 and Lines add 1 gt 2 and Created ne null"+
			" and year(Created) eq 2026 and tolower(OrderID) eq 'a1'")},
		{method: "GET", path: "/Orders?$select=OrderID,Amount,to_Items/Quantity&$expand=to_Items,to_Customer"},
		{method: "GET", path: "/Orders?$select=*&$expand=to_Items/to_Order/to_Customer"},
		{method: "GET", path: "/Orders?" + escapeQuery("$orderby=Amount desc,OrderID,to_Customer/Name asc")},
		{method: "GET", path: "/Orders?$top=10&$skip=5&$inlinecount=allpages&$format=json&sap-client=100&$skiptoken=abc"},
		{method: "GET", path: "/Orders('A1')?$select=OrderID&$expand=to_Items&$format=json"},
		{method: "POST", path: "/Approve?" + escapeQuery("OrderID='A1'&ShiftDays=false")},
		{method: "POST", path: "/Approve?" + escapeQuery("OrderID='A1'&ShiftDays=true&Note='hi'&sap-client=100")},
		{method: "POST", path: "/Approve?" + escapeQuery("OrderID='A1'&ShiftDays=true&Note=null")},
		{method: "GET", path: "/OrdersSince?" + escapeQuery("Since=datetime'2026-01-01T00:00'&$filter=Open eq true&$top=5")},
		{method: "POST", path: "/Orders", body: `{"__metadata":{"type":"TEST_SRV.OrderType"},"Amount":"10.00","Created":"/Date(1700000000000)/","Open":true,` +
			`"Token":"` + guid + `","Lines":2,"Secret":null,"to_Items":{"results":[{"Item":"10","Quantity":"1.000"}]},"to_Customer":{"Name":"Acme"}}`},
		{method: "POST", path: "/Orders", body: `{"Amount":"1","to_Items":[{"Item":"20"}]}`},
		{method: "PATCH", path: "/Orders('A1')", body: `{"Amount":"2.00"}`},
		{method: "POST", path: "/Orders('A1')", body: `{"Open":false}`, headers: []string{"X-HTTP-Method: MERGE"}},
		{method: "DELETE", path: "/Orders('A1')"},
		{method: "GET", path: "/Customers(CustomerUUID=guid'" + guid + "')/Name"},
	}
	for _, tt := range tests {
		req := newRequest(tt.method, testBase+tt.path, tt.body, tt.headers...)
		var body []byte
		if tt.body != "" {
			body = []byte(tt.body)
		}
		if err := spec.Check(req, body); err != nil {
			t.Errorf("%s %s: got mismatches, want none:\n%v", tt.method, tt.path, err)
		}
	}
}

func TestCheckBadRequests(t *testing.T) {
	spec := testSpec(t)
	guid := "005056a2-0000-1ed0-0000-000000000000"
	tests := []struct {
		name, method, path, body string
		want                     []string // one per mismatch, each a part of it
	}{
		{"property that does not exist in $filter", "GET", "/Orders?" + escapeQuery("$filter=Nope eq 'x'"),
			"", []string{"GET TEST_SRV/Orders: $filter: TEST_SRV.OrderType has no property Nope"}},
		{"property that does not exist in $select", "GET", "/Orders?$select=OrderID,Nope",
			"", []string{"$select: TEST_SRV.OrderType has no property Nope"}},
		{"property that does not exist in $orderby", "GET", "/Orders?$orderby=Nope",
			"", []string{"$orderby: TEST_SRV.OrderType has no property Nope"}},
		{"property that is not sortable", "GET", "/Orders?$orderby=Secret",
			"", []string{`$orderby: property Secret of TEST_SRV.OrderType is not sortable (sap:sortable="false")`}},
		{"property that is not filterable", "GET", "/Orders?" + escapeQuery("$filter=Secret eq 'x'"),
			"", []string{`$filter: property Secret of TEST_SRV.OrderType is not filterable`}},
		{"key literal of the wrong type", "GET", "/Orders(42)",
			"", []string{"GET TEST_SRV/Orders(42): key property OrderID of TEST_SRV.OrderType is Edm.String, written '...'; 42 is an Edm.Int32 literal"}},
		{"string literal for a GUID key", "GET", "/Customers('" + guid + "')",
			"", []string{"key property CustomerUUID of TEST_SRV.CustomerType is Edm.Guid, written guid'"}},
		{"bare word as a key", "GET", "/Orders(A1)",
			"", []string{"key predicate (A1) of OrderType is not Name=literal"}},
		{"one unnamed value for a two-part key", "GET", "/Items('10')",
			"", []string{"key predicate ('10') gives one unnamed value; TEST_SRV.ItemType has the key (OrderID, Item)"}},
		{"key part missing", "GET", "/Items(OrderID='A1')",
			"", []string{"key predicate (OrderID='A1') lacks key property Item of TEST_SRV.ItemType"}},
		{"key part that is not a key", "GET", "/Items(OrderID='A1',Item='10',Quantity='1')",
			"", []string{"Quantity is not a key property of TEST_SRV.ItemType"}},
		{"key part given twice", "GET", "/Items(OrderID='A1',OrderID='A2',Item='10')",
			"", []string{"gives OrderID twice"}},
		{"function import parameter missing", "POST", "/Approve?" + escapeQuery("OrderID='A1'"),
			"", []string{"POST TEST_SRV/Approve: function import Approve: required parameter ShiftDays (Edm.Boolean) is missing"}},
		{"function import parameters missing", "POST", "/Approve",
			"", []string{"required parameter OrderID (Edm.String) is missing", "required parameter ShiftDays (Edm.Boolean) is missing"}},
		{"function import parameter literals of the wrong type", "POST", "/Approve?" + escapeQuery("OrderID=A1&ShiftDays='no'"),
			"", []string{"parameter OrderID: A1 is not a literal", "parameter ShiftDays is Edm.Boolean, written true or false; 'no' is an Edm.String literal"}},
		{"function import parameter null", "POST", "/Approve?" + escapeQuery("OrderID=null&ShiftDays=true"),
			"", []string{"parameter OrderID is mandatory and cannot be null"}},
		{"function import parameter that does not exist", "POST", "/Approve?" + escapeQuery("OrderID='A1'&ShiftDays=true&Other='x'"),
			"", []string{"function import Approve has no parameter Other (its parameters: OrderID, ShiftDays, Note)"}},
		{"function import with the wrong method", "GET", "/Approve?" + escapeQuery("OrderID='A1'&ShiftDays=true"),
			"", []string{"GET TEST_SRV/Approve: function import Approve is called with POST (m:HttpMethod), not GET"}},
		{"function import with a body", "POST", "/Approve?" + escapeQuery("OrderID='A1'&ShiftDays=true"),
			`{"OrderID":"A1"}`, []string{"function import Approve takes its parameters in the query"}},
		{"function import with a path after it", "POST", "/Approve/x?" + escapeQuery("OrderID='A1'&ShiftDays=true"),
			"", []string{"nothing follows a function import in the path"}},
		{"read with POST", "POST", "/Orders('A1')",
			"", []string{"POST creates an entity in a collection"}},
		{"create in a set that is not creatable", "POST", "/Items", `{"Item":"10"}`,
			[]string{`POST creates an entity only in a creatable entity set; Items is sap:creatable="false"`}},
		{"create through an association set that is not creatable", "POST", "/Orders('A1')/to_Items", `{"Item":"10"}`,
			[]string{`POST creates through navigation to_Items only where its association set is creatable; assoc_items_set is sap:creatable="false"`}},
		{"update of a set that is not updatable", "PUT", "/Items(OrderID='A1',Item='10')", `{"Quantity":"1"}`,
			[]string{`PUT changes an entity only in an updatable entity set; Items is sap:updatable="false"`}},
		{"delete from a set that is not deletable", "DELETE", "/Items(OrderID='A1',Item='10')", "",
			[]string{`DELETE removes an entity only from a deletable entity set; Items is sap:deletable="false"`}},
		{"delete of a collection", "DELETE", "/Orders", "", []string{"DELETE does not apply to this path"}},
		{"navigation that does not exist", "GET", "/Orders('A1')/to_Nothing",
			"", []string{"GET TEST_SRV/Orders('A1')/to_Nothing: TEST_SRV.OrderType has no property or navigation property to_Nothing"}},
		{"navigation from a collection", "GET", "/Orders/to_Items",
			"", []string{"to_Items follows a collection; a key predicate must pick one entity first"}},
		{"key after a navigation to one", "GET", "/Orders('A1')/to_Customer(guid'" + guid + "')",
			"", []string{"navigation property to_Customer of TEST_SRV.OrderType leads to one entity and takes no key predicate"}},
		{"$expand of a navigation that does not exist", "GET", "/Orders?$expand=to_Nothing",
			"", []string{"$expand: TEST_SRV.OrderType has no navigation property to_Nothing"}},
		{"$expand of a property", "GET", "/Orders?$expand=Amount",
			"", []string{"$expand: Amount is a property of TEST_SRV.OrderType, not a navigation property"}},
		{"$expand two levels down to nothing", "GET", "/Orders?$expand=to_Items/to_Nothing",
			"", []string{"$expand: TEST_SRV.ItemType has no navigation property to_Nothing"}},
		{"$select below a navigation not expanded", "GET", "/Orders?$select=to_Items/Quantity",
			"", []string{"$select: to_Items/Quantity selects below navigation to_Items, which $expand does not expand"}},
		{"$filter literal of the wrong type", "GET", "/Orders?" + escapeQuery("$filter=Lines eq '3' and Open eq 'true' and Created eq '2026-01-01' and OrderID eq 10"),
			"", []string{
				"$filter: Lines (Edm.Int32) is compared (eq) with '3' (an Edm.String literal); Edm.Int32 is written digits",
				"$filter: Open (Edm.Boolean) is compared (eq) with 'true'",
				"$filter: Created (Edm.DateTime) is compared (eq) with '2026-01-01'",
				"$filter: OrderID (Edm.String) is compared (eq) with 10 (an Edm.Int32 literal); Edm.String is written '...'",
			}},
		{"$filter literal on the left", "GET", "/Orders?" + escapeQuery("$filter=true eq OrderID"),
			"", []string{"$filter: OrderID (Edm.String) is compared (eq) with true (an Edm.Boolean literal)"}},
		{"$filter comparing two properties of different types", "GET", "/Orders?" + escapeQuery("$filter=OrderID eq Lines"),
			"", []string{"$filter: OrderID (Edm.String) is compared (eq) with Lines (Edm.Int32)"}},
		{"$filter syntax error", "GET", "/Orders?" + escapeQuery("$filter=OrderID eq"),
			"", []string{"$filter: syntax error at 10: want a property, a literal, a function call or (, found the end"}},
		{"$filter unbalanced", "GET", "/Orders?" + escapeQuery("$filter=(OrderID eq 'x'"),
			"", []string{"$filter: syntax error"}},
		{"$filter unterminated string", "GET", "/Orders?" + escapeQuery("$filter=OrderID eq 'x"),
			"", []string{"$filter: unterminated quote"}},
		{"$filter through a navigation to many", "GET", "/Orders?" + escapeQuery("$filter=to_Items/Quantity eq 1M"),
			"", []string{"$filter: navigation property to_Items of TEST_SRV.OrderType leads to many entities"}},
		{"$filter malformed datetime", "GET", "/Orders?" + escapeQuery("$filter=Created eq datetime'2026-13'"),
			"", []string{"$filter: at 11: malformed datetime literal datetime'2026-13'"}},
		{"$filter unknown function", "GET", "/Orders?" + escapeQuery("$filter=foo(OrderID) eq 'x'"),
			"", []string{"$filter: foo is not an OData v2 filter function"}},
		{"$filter function argument of the wrong type", "GET", "/Orders?" + escapeQuery("$filter=substringof(1,OrderID) eq true"),
			"", []string{"$filter: argument 1 of substringof takes Edm.String, 1 (an Edm.Int32 literal) is not"}},
		{"$filter function with too few arguments", "GET", "/Orders?" + escapeQuery("$filter=startswith(OrderID)"),
			"", []string{"$filter: startswith takes 2 arguments, startswith(OrderID) has 1"}},
		{"$filter and of a string", "GET", "/Orders?" + escapeQuery("$filter=OrderID and Open"),
			"", []string{"$filter: an operand of and must be Edm.Boolean, OrderID (Edm.String) is not"}},
		{"$filter that is not boolean", "GET", "/Orders?" + escapeQuery("$filter=OrderID"),
			"", []string{"$filter: the filter must be Edm.Boolean, OrderID (Edm.String) is not"}},
		{"$filter on one entity", "GET", "/Orders('A1')?" + escapeQuery("$filter=Open eq true"),
			"", []string{"$filter does not apply here"}},
		{"$format other than json", "GET", "/Orders?$format=xml", "", []string{"$format=xml: the client reads JSON, $format=json"}},
		{"$top not a number", "GET", "/Orders?$top=ten", "", []string{"$top=ten is not a non-negative integer"}},
		{"$inlinecount unknown", "GET", "/Orders?$inlinecount=some", "", []string{"$inlinecount=some: want allpages or none"}},
		{"unknown system query option", "GET", "/Orders?$search=x", "", []string{"$search is not an OData v2 system query option"}},
		{"custom query option", "GET", "/Orders?foo=bar", "", []string{"query option foo is neither a system query option nor sap-client"}},
		{"query option twice", "GET", "/Orders?$top=1&$top=2", "", []string{"query option $top is given more than once"}},
		{"unknown service", "GET", "http://s4.example.com/sap/opu/odata/sap/NOPE_SRV/Orders", "",
			[]string{"GET NOPE_SRV/Orders: SAP publishes no service NOPE_SRV here (known: TEST_SRV)"}},
		{"unknown entity set", "GET", "/Nope", "", []string{"GET TEST_SRV/Nope: TEST_SRV has no entity set or function import Nope"}},
		{"not an OData path", "GET", "http://s4.example.com/other/path", "",
			[]string{"GET /other/path: not an OData service path /sap/opu/odata/sap/<SERVICE>/..."}},
		{"write to the service root", "POST", "/", "", []string{"the service root is only read"}},
		{"$metadata with a filter", "GET", "/$metadata?$filter=x", "", []string{"$filter does not apply here"}},
		{"$batch", "POST", "/$batch", "", []string{"a $batch request is not checked part by part"}},
		{"$count of one entity", "GET", "/Orders('A1')/$count", "", []string{"$count follows a collection only"}},
		{"$value of an entity", "GET", "/Orders('A1')/$value", "", []string{"$value follows a property only"}},
		{"body with a property that does not exist and values of the wrong form", "POST", "/Orders",
			`{"Amount":10,"Nope":1,"OrderID":"X","Created":"2026-01-01","Open":"true","Lines":"3","Token":"x","to_Items":[{"Item":"10","Junk":1}]}`,
			[]string{
				"body: TEST_SRV.OrderType.Amount is Edm.Decimal, written in OData v2 JSON as a string such as \"1000.00\"; found 10",
				`body: TEST_SRV.OrderType.Created is Edm.DateTime, written in OData v2 JSON as a string "/Date(ms)/"; found "2026-01-01"`,
				"body: TEST_SRV.OrderType.Lines is Edm.Int32, written in OData v2 JSON as a number; found \"3\"",
				"body: TEST_SRV.OrderType has no property Nope",
				"body: TEST_SRV.OrderType.Open is Edm.Boolean, written in OData v2 JSON as true or false; found \"true\"",
				`body: TEST_SRV.OrderType.OrderID is sap:creatable="false" and is set on create`,
				"body: TEST_SRV.OrderType.Token is Edm.Guid",
				"body: TEST_SRV.ItemType has no property Junk",
			}},
		{"create without a body", "POST", "/Orders", "", []string{"a POST of TEST_SRV.OrderType carries the entity as JSON; the request has no body"}},
		{"update of a property that is not updatable", "PATCH", "/Customers(guid'" + guid + "')", `{"CustomerUUID":null}`,
			[]string{"body: TEST_SRV.CustomerType.CustomerUUID is not nullable and is null"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.path
			if !strings.HasPrefix(target, "http") {
				target = testBase + target
			}
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			got := Mismatches(spec.Check(newRequest(tt.method, target, tt.body), body))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d mismatches, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for _, w := range tt.want {
				n := 0
				for _, g := range got {
					if strings.Contains(g, w) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("want one mismatch containing %q, got:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// TestCheckClientRequests holds the requests the SAP client sends to SAP's
// published metadata, as the client writes them: all match but the
// Release, which lacks a mandatory parameter.
func TestCheckClientRequests(t *testing.T) {
	spec, err := LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	const base = "http://127.0.0.1:1/sap/opu/odata/sap/"
	good := []struct{ method, url string }{
		{"GET", base + "API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice?$filter=SupplierInvoice%20eq%20%275105600101%27&$expand=to_SuplrInvcItemPurOrdRef"},
		{"GET", base + "API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice?$filter=InvoicingParty%20eq%20%27100043%27%20and%20SupplierInvoiceIDByInvcgParty%20eq%20%27INV-88120%27&$expand=to_SuplrInvcItemPurOrdRef"},
		{"GET", base + "API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice(SupplierInvoice='5105600101',FiscalYear='2026')?$expand=to_SuplrInvcItemPurOrdRef&sap-client=100"},
		{"GET", base + "API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder('4500018822')?$expand=to_PurchaseOrderItem"},
		{"GET", base + "API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentItem?$filter=PurchaseOrder%20eq%20%274500018822%27%20and%20PurchaseOrderItem%20eq%20%2710%27%20and%20GoodsMovementType%20eq%20%27101%27%20and%20GoodsMovementIsCancelled%20eq%20false"},
		{"GET", base + "API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentHeader?$filter=MaterialDocumentYear%20eq%20%272026%27&$select=MaterialDocument,PostingDate"},
		{"GET", base + "API_BUSINESS_PARTNER/A_Supplier('100042')"},
		{"GET", base + "API_BUSINESS_PARTNER/A_Supplier('O%27%27Brien')"},
		{"GET", base + "API_BUSINESS_PARTNER/A_Supplier?$filter=substringof(%27acme%27%2CSupplierName)%20eq%20true&$top=10"},
		{"GET", base + "API_SUPPLIERINVOICE_PROCESS_SRV/"},
		{"POST", base + "API_SUPPLIERINVOICE_PROCESS_SRV/Release?SupplierInvoice=%275105600101%27&FiscalYear=%272026%27&DiscountDaysHaveToBeShifted=false"},
	}
	for _, r := range good {
		req := newRequest(r.method, r.url, "", "X-CSRF-Token: Fetch")
		if err := spec.Check(req, nil); err != nil {
			t.Errorf("%s %s: got mismatches, want none:\n%v", r.method, r.url, err)
		}
	}
	release := newRequest("POST", base+"API_SUPPLIERINVOICE_PROCESS_SRV/Release?SupplierInvoice=%275105600101%27&FiscalYear=%272026%27", "")
	got := Mismatches(spec.Check(release, nil))
	want := "POST API_SUPPLIERINVOICE_PROCESS_SRV/Release: function import Release: required parameter DiscountDaysHaveToBeShifted (Edm.Boolean) is missing"
	if !slices.Equal(got, []string{want}) {
		t.Errorf("Release without DiscountDaysHaveToBeShifted: got %q, want [%q]", got, want)
	}
	// Typical mistakes, on SAP's own services.
	bad := map[string]string{
		base + "API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder(4500018822)":                                                  "key property PurchaseOrder of API_PURCHASEORDER_PROCESS_SRV.A_PurchaseOrderType is Edm.String",
		base + "API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentItem?$filter=PostingDate%20eq%20datetime%272026-11-24T00:00%27": "API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentItemType has no property PostingDate",
		base + "API_BUSINESS_PARTNER/A_Supplier?$select=Supplier,Country":                                                   "$select: API_BUSINESS_PARTNER.A_SupplierType has no property Country",
		base + "API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder('4500018822')?$expand=to_Items":                               "$expand: API_PURCHASEORDER_PROCESS_SRV.A_PurchaseOrderType has no navigation property to_Items",
		base + "API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice('5105600101')":                                            "gives one unnamed value",
	}
	for u, want := range bad {
		got := Mismatches(spec.Check(newRequest("GET", u, ""), nil))
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("GET %s: got %q, want one mismatch with %q", u, got, want)
		}
	}
	post := newRequest("POST", base+"API_SUPPLIERINVOICE_PROCESS_SRV/A_SuplrInvcItemPurOrdRef", `{"SupplierInvoice":"1"}`)
	if got := Mismatches(spec.Check(post, []byte(`{"SupplierInvoice":"1"}`))); len(got) != 2 || !strings.Contains(got[0], `A_SuplrInvcItemPurOrdRef is sap:creatable="false"`) ||
		!strings.Contains(got[1], `A_SuplrInvcItemPurOrdRefType.SupplierInvoice is sap:creatable="false" and is set on create`) {
		t.Errorf("POST into A_SuplrInvcItemPurOrdRef: got %q", got)
	}
}
