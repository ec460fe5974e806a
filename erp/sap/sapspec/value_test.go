package sapspec

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestCheckDecoded(t *testing.T) {
	spec := testSpec(t)
	for _, name := range []string{"TEST_SRV.OrderType", "OrderType", "Orders"} {
		if err := spec.CheckDecoded(name, []string{"OrderID", "Amount", "to_Items", "to_Customer"}); err != nil {
			t.Errorf("CheckDecoded(%s) of declared names: %v", name, err)
		}
	}
	got := Mismatches(spec.CheckDecoded("Orders", []string{"OrderID", "PostingDate", "PostingDate", "Country"}))
	want := []string{"TEST_SRV.OrderType has no property PostingDate", "TEST_SRV.OrderType has no property Country"}
	if !slices.Equal(got, want) {
		t.Errorf("CheckDecoded with undeclared names: got %q, want %q", got, want)
	}
	if got := Mismatches(spec.CheckDecoded("ApproveResult", []string{"Success", "Status"})); !slices.Equal(got, []string{"TEST_SRV.ApproveResult has no property Status"}) {
		t.Errorf("CheckDecoded of a complex type: got %q", got)
	}
	for _, name := range []string{"NoType", "OTHER_SRV.OrderType", "TEST_SRV.NoType"} {
		if err := spec.CheckDecoded(name, []string{"OrderID"}); err == nil {
			t.Errorf("CheckDecoded(%s): no error for a type that does not exist", name)
		}
	}

	shared, err := LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	got = Mismatches(shared.CheckDecoded("API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentItemType", []string{"MaterialDocument", "PostingDate"}))
	if !slices.Equal(got, []string{"API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentItemType has no property PostingDate"}) {
		t.Errorf("PostingDate on A_MaterialDocumentItem: got %q", got)
	}
	if err := shared.CheckDecoded("A_MaterialDocumentHeader", []string{"PostingDate", "to_MaterialDocumentItem"}); err != nil {
		t.Errorf("A_MaterialDocumentHeader: %v", err)
	}
}

func TestCheckEntity(t *testing.T) {
	spec := testSpec(t)
	guid := "005056a2-0000-1ed0-0000-000000000000"
	good := `{"__metadata":{"type":"TEST_SRV.OrderType","uri":"x"},"OrderID":"A1","Amount":"10.50","Created":"/Date(1700000000000)/",` +
		`"Open":false,"Token":"` + guid + `","Lines":3,"Secret":null,"to_Customer":{"__deferred":{"uri":"x"}},` +
		`"to_Items":{"results":[{"__metadata":{"type":"TEST_SRV.ItemType"},"OrderID":"A1","Item":"10","Quantity":"1.000","to_Order":{"__deferred":{"uri":"x"}}}]}}`
	if err := spec.CheckEntity("OrderType", []byte(good)); err != nil {
		t.Errorf("good entity: %v", err)
	}
	if err := spec.CheckAnswer("Orders", []byte(`{"d":{"results":[`+good+`,`+good+`]}}`)); err != nil {
		t.Errorf("good list: %v", err)
	}
	if err := spec.CheckAnswer("Orders", []byte(`{"d":`+good+`}`)); err != nil {
		t.Errorf("good entity answer: %v", err)
	}
	if err := spec.CheckAnswer("Orders", []byte(`{"d":[`+good+`]}`)); err != nil {
		t.Errorf("good list in the older form: %v", err)
	}
	if err := spec.CheckEntity("OrderType", []byte(`{"OrderID":"A1","to_Customer":null,"to_Items":[]}`)); err != nil {
		t.Errorf("entity with a null navigation to one and an empty list: %v", err)
	}

	bad := `{"__metadata":{"type":"TEST_SRV.ItemType"},"OrderID":"A12345678901","Amount":10.5,"Created":"2026-01-01T00:00:00",` +
		`"Open":"false","Token":"nope","Lines":"3","Country":"DE","to_Items":{"results":[{"OrderID":"A1","Item":"10","PostingDate":"/Date(0)/"}]},` +
		`"to_Customer":{"CustomerUUID":null}}`
	got := Mismatches(spec.CheckEntity("OrderType", []byte(bad)))
	want := []string{
		"TEST_SRV.OrderType.Amount is Edm.Decimal, written in OData v2 JSON as a string such as \"1000.00\"; found 10.5",
		"TEST_SRV.OrderType has no property Country",
		`TEST_SRV.OrderType.Created is Edm.DateTime, written in OData v2 JSON as a string "/Date(ms)/"; found "2026-01-01T00:00:00"`,
		"TEST_SRV.OrderType.Lines is Edm.Int32, written in OData v2 JSON as a number; found \"3\"",
		"TEST_SRV.OrderType.Open is Edm.Boolean, written in OData v2 JSON as true or false; found \"false\"",
		"TEST_SRV.OrderType.OrderID has MaxLength 10; found 12 characters \"A12345678901\"",
		`TEST_SRV.OrderType.Token is Edm.Guid, written in OData v2 JSON as a string such as "005056a2-0000-1ed0-0000-000000000000"; found "nope"`,
		"TEST_SRV.CustomerType.CustomerUUID is not nullable and is null",
		"TEST_SRV.ItemType has no property PostingDate",
		"TEST_SRV.OrderType: __metadata.type is TEST_SRV.ItemType",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("bad entity:\ngot  %q\nwant %q", got, want)
	}
	for _, body := range []string{`{}`, `{"d":"x"}`, `not json`, `{"d":{"results":"x"}}`} {
		if err := spec.CheckAnswer("Orders", []byte(body)); err == nil {
			t.Errorf("CheckAnswer(%s): no mismatch", body)
		}
	}
	if got := Mismatches(spec.CheckEntity("OrderType", []byte(`{"to_Items":null,"to_Customer":[]}`))); len(got) != 2 {
		t.Errorf("navigations of the wrong shape: got %q, want 2 mismatches", got)
	}
}

// TestTransport: requests are checked and sent on unchanged, body
// included; mismatches are recorded once each with a count.
func TestTransport(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	tr := &Transport{Spec: testSpec(t)}
	client := &http.Client{Transport: tr}
	base := srv.URL + "/sap/opu/odata/sap/TEST_SRV"
	send := func(method, path, body string, noGetBody bool) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if noGetBody && rd != nil {
			req.Body = io.NopCloser(strings.NewReader(body))
			req.GetBody = nil
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send("GET", "/Orders('A1')", "", false)
	send("GET", "/Orders?$filter=Nope%20eq%201", "", false)
	send("GET", "/Orders?$filter=Nope%20eq%201", "", false)
	send("POST", "/Orders", `{"Amount":"1.00"}`, false)
	send("POST", "/Orders", `{"Nope":"1.00"}`, true)
	got := tr.Mismatches()
	want := []string{
		"GET TEST_SRV/Orders: $filter: TEST_SRV.OrderType has no property Nope",
		"POST TEST_SRV/Orders: body: TEST_SRV.OrderType has no property Nope",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Mismatches: got %q, want %q", got, want)
	}
	if n := tr.Count(want[0]); n != 2 {
		t.Errorf("Count: got %d, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(bodies, []string{"", "", "", `{"Amount":"1.00"}`, `{"Nope":"1.00"}`}) {
		t.Errorf("bodies the server got: %q", bodies)
	}
}

// TestKnownMismatchesAreDistinct: every entry of KnownMismatches is
// listed once and reads as Check or CheckDecoded words a mismatch.
func TestKnownMismatchesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range KnownMismatches {
		if seen[m] {
			t.Errorf("listed twice: %q", m)
		}
		seen[m] = true
		if !strings.Contains(m, ": ") && !strings.Contains(m, " has no property ") {
			t.Errorf("not a mismatch as Check or CheckDecoded word one: %q", m)
		}
	}
}

// fakeTB records what CheckedTransport reports.
type fakeTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, a ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, a...))
}
func (f *fakeTB) Fatalf(format string, a ...any) { f.Errorf(format, a...); panic("Fatalf") }

// TestCheckedTransport: at cleanup, a mismatch outside KnownMismatches
// fails the test; a known one does not.
func TestCheckedTransport(t *testing.T) {
	saved := KnownMismatches
	t.Cleanup(func() { KnownMismatches = saved })
	KnownMismatches = []string{"POST API_SUPPLIERINVOICE_PROCESS_SRV/Release: function import Release: " +
		"required parameter DiscountDaysHaveToBeShifted (Edm.Boolean) is missing"}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	ftb := &fakeTB{}
	client := &http.Client{Transport: CheckedTransport(ftb, nil)}
	send := func(path string) {
		resp, err := client.Post(srv.URL+"/sap/opu/odata/sap/API_SUPPLIERINVOICE_PROCESS_SRV/"+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send("Release?SupplierInvoice=%275105600101%27&FiscalYear=%272026%27")
	send("Post?SupplierInvoice=%275105600101%27")
	send("Post?SupplierInvoice=%275105600101%27")
	send("Post?SupplierInvoice=%275105600101%27&FiscalYear=%272026%27")
	if len(ftb.errors) != 0 {
		t.Fatalf("errors before cleanup: %q", ftb.errors)
	}
	for _, fn := range ftb.cleanups {
		fn()
	}
	want := []string{"SAP client request off SAP's published $metadata (2 times): POST API_SUPPLIERINVOICE_PROCESS_SRV/Post: " +
		"function import Post: required parameter FiscalYear (Edm.String) is missing"}
	if !slices.Equal(ftb.errors, want) {
		t.Errorf("errors at cleanup:\ngot  %q\nwant %q", ftb.errors, want)
	}
}
