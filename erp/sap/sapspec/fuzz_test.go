package sapspec

import (
	"net/http"
	"net/url"
	"testing"
)

// FuzzCheck: no request path, query or body makes the checker panic.
func FuzzCheck(f *testing.F) {
	for _, s := range []struct{ path, query, body string }{
		{"/Orders('A1')/to_Items", "$filter=Quantity gt 1M and substringof('x',Item) eq true", ""},
		{"/Items(OrderID='A1',Item='10')", "$select=to_Order/OrderID&$expand=to_Order", ""},
		{"/Approve", "OrderID='A1'&ShiftDays=true&Note=null", `{"a":1}`},
		{"/Orders", "$orderby=Amount desc&$top=1", `{"Amount":"1.0","to_Items":{"results":[{"Item":"1"}]}}`},
		{"/Orders(", "$filter=((", ""},
		{"/Orders(A=,)", "$filter=not -1 add", `[`},
		{"/Customers(guid'x')/Name/$value", "$filter=datetime'", `{"to_Customer":{"__deferred":{}}}`},
	} {
		f.Add(s.path, s.query, s.body)
	}
	spec, err := parseTestSpec()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path, query, body string) {
		u := &url.URL{Scheme: "http", Host: "h", Path: "/sap/opu/odata/sap/TEST_SRV" + path, RawQuery: query}
		for _, m := range []string{"GET", "POST", "PATCH", "DELETE"} {
			req := &http.Request{Method: m, URL: u, Header: http.Header{}}
			_ = spec.Check(req, []byte(body))
		}
		_ = spec.CheckAnswer("Orders", []byte(body))
	})
}

func parseTestSpec() (*Spec, error) {
	svc, err := Parse("test.edmx", []byte(testEDMX))
	if err != nil {
		return nil, err
	}
	return &Spec{Services: map[string]*Service{svc.Name: svc}}, nil
}
