package sap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// TestListFollowsNextOnTheSimulator reads a list longer than the
// simulator's page: every goods receipt comes back, each page a request.
func TestListFollowsNextOnTheSimulator(t *testing.T) {
	s := sim.New(sim.Options{})
	var mu sync.Mutex
	pages := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "A_MaterialDocumentItem") {
			mu.Lock()
			pages++
			mu.Unlock()
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, Options{Runner: retry.New(oneAttempt(5*time.Second), nil), Client: "100"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := c.GoodsReceipts(ctx, "4500018822", "20")
	if err != nil {
		t.Fatal(err)
	}
	want := 2*sim.DefaultPageSize + 7
	for range want - len(before) {
		if _, err := s.PostGoodsReceipt("4500018822", "20", decimal.NewFromInt(1)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	pages = 0
	mu.Unlock()
	grs, err := c.GoodsReceipts(ctx, "4500018822", "20")
	if err != nil {
		t.Fatal(err)
	}
	if len(grs) != want {
		t.Errorf("%d goods receipts, want all %d", len(grs), want)
	}
	seen := map[string]bool{}
	for _, gr := range grs {
		key := gr.Year + "/" + gr.MaterialDocument + "/" + gr.Item
		if seen[key] {
			t.Errorf("receipt %s twice", key)
		}
		seen[key] = true
	}
	mu.Lock()
	defer mu.Unlock()
	if pages != 3 {
		t.Errorf("%d page requests, want 3 for %d entries of %d a page", pages, want, sim.DefaultPageSize)
	}
}

// pagedServer serves a list of n suppliers in pages of size, each page's
// __next made by link from the page's URL and the next offset.
func pagedServer(t *testing.T, n, size int, link func(r *http.Request, next int) string) *fakeSAP {
	return newFake(t, func(w http.ResponseWriter, r *http.Request) {
		offset, _ := strconv.Atoi(r.URL.Query().Get("$skiptoken"))
		var entries []string
		for i := offset; i < min(offset+size, n); i++ {
			entries = append(entries, fmt.Sprintf(`{"Supplier":"%d"}`, 100000+i))
		}
		next := ""
		if offset+size < n {
			next = fmt.Sprintf(`,"__next":%q`, link(r, offset+size))
		}
		writeJSON(w, http.StatusOK, `{"d":{"results":[`+strings.Join(entries, ",")+`]`+next+`}}`)
	})
}

// readIDs reads the fake's list as the client's lists are read.
func readIDs(c *Client) ([]string, error) {
	r := request{call: retry.Call{Service: erp.ServiceBusinessPartner, Operation: "search suppliers"}, method: http.MethodGet,
		url: c.url(erp.ServiceBusinessPartner, "A_Supplier", param{"$filter", "SupplierName eq 'x'"})}
	return fetchList(context.Background(), c, r, func(w struct{ Supplier string }) (string, error) { return w.Supplier, nil })
}

func TestListFollowsNext(t *testing.T) {
	absolute := func(r *http.Request, next int) string {
		return "http://" + r.Host + r.URL.Path + "?$filter=SupplierName%20eq%20'x'&$skiptoken=" + strconv.Itoa(next)
	}
	relative := func(_ *http.Request, next int) string { return "A_Supplier?$skiptoken=" + strconv.Itoa(next) }
	for name, link := range map[string]func(*http.Request, int) string{"absolute": absolute, "relative": relative} {
		t.Run(name, func(t *testing.T) {
			f := pagedServer(t, 7, 3, link)
			ids, err := readIDs(f.client(Options{Client: "100"}))
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 7 || ids[0] != "100000" || ids[6] != "100006" {
				t.Errorf("ids %v, want the 7 in order", ids)
			}
			reqs := f.odata()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3 pages", len(reqs))
			}
			for _, s := range reqs[1:] {
				// The client stays the same on every page, also when the
				// link leaves it out.
				if got := s.query["sap-client"]; len(got) != 1 || got[0] != "100" {
					t.Errorf("page request %s %v: sap-client %v, want 100", s.path, s.query, got)
				}
			}
		})
	}
	// An empty last page ends the list too.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("$skiptoken") == "" {
			writeJSON(w, http.StatusOK, `{"d":{"results":[{"Supplier":"1"}],"__next":"A_Supplier?$skiptoken=1"}}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"d":{"results":[]}}`)
	})
	if ids, err := readIDs(f.client(Options{})); err != nil || len(ids) != 1 {
		t.Errorf("got %v %v, want one id", ids, err)
	}
}

func TestListBeyondTheBoundFails(t *testing.T) {
	f := pagedServer(t, 100, 10, func(_ *http.Request, next int) string { return "A_Supplier?$skiptoken=" + strconv.Itoa(next) })
	_, err := readIDs(f.client(Options{MaxPages: 4}))
	var up *erp.UpstreamError
	if !errors.As(err, &up) || up.Transient || up.Config || !strings.Contains(up.Text, "longer than 4 pages") {
		t.Fatalf("got %v, want an ERP fault naming the bound", err)
	}
	if n := len(f.odata()); n != 4 {
		t.Errorf("%d pages read, want the bound of 4", n)
	}
	// The default bound is 20 pages.
	f = pagedServer(t, 1000, 10, func(_ *http.Request, next int) string { return "A_Supplier?$skiptoken=" + strconv.Itoa(next) })
	if _, err := readIDs(f.client(Options{})); err == nil || len(f.odata()) != DefaultMaxPages {
		t.Errorf("default bound: %v after %d pages, want a failure after %d", err, len(f.odata()), DefaultMaxPages)
	}
	f = pagedServer(t, 200, 10, func(_ *http.Request, next int) string { return "A_Supplier?$skiptoken=" + strconv.Itoa(next) })
	if ids, err := readIDs(f.client(Options{})); err != nil || len(ids) != 200 {
		t.Errorf("exactly 20 pages: %d ids, %v", len(ids), err)
	}
}

// TestListFollowsALinkNamingAnotherHost: a __next naming the ERP by
// another name (SAP behind a proxy or the Cloud Connector, CAP writing
// localhost when called on 127.0.0.1) is read on the configured ERP, with
// the link's path and query, and nothing is sent to the host it names.
func TestListFollowsALinkNamingAnotherHost(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the client went to the host the link names: %s %s (Authorization %q)", r.Method, r.URL, r.Header.Get("Authorization"))
	}))
	t.Cleanup(elsewhere.Close)
	links := map[string]func(r *http.Request, next int) string{
		"an unresolvable host": func(r *http.Request, next int) string {
			return "http://s4-internal.invalid:44300" + r.URL.Path + "?$skiptoken=" + strconv.Itoa(next)
		},
		"localhost for 127.0.0.1": func(r *http.Request, next int) string {
			_, port, _ := strings.Cut(r.Host, ":")
			return "http://localhost:" + port + r.URL.Path + "?$skiptoken=" + strconv.Itoa(next)
		},
		"another server": func(r *http.Request, next int) string {
			return elsewhere.URL + r.URL.Path + "?$skiptoken=" + strconv.Itoa(next)
		},
		"another scheme and port": func(r *http.Request, next int) string {
			return "https://S4.example.com:8443" + r.URL.Path + "?$skiptoken=" + strconv.Itoa(next) + "#page"
		},
		"scheme-relative": func(r *http.Request, next int) string {
			return "//" + strings.TrimPrefix(elsewhere.URL, "http://") + r.URL.Path + "?$skiptoken=" + strconv.Itoa(next)
		},
	}
	for name, link := range links {
		t.Run(name, func(t *testing.T) {
			f := pagedServer(t, 7, 3, link)
			ids, err := readIDs(f.client(Options{User: "ERPGATE_SVC", Password: "pw", Client: "100"}))
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != 7 || ids[0] != "100000" || ids[6] != "100006" {
				t.Errorf("ids %v, want the 7 in order", ids)
			}
			reqs := f.odata()
			if len(reqs) != 3 {
				t.Fatalf("%d requests to the configured ERP, want 3 pages", len(reqs))
			}
			for i, s := range reqs {
				if s.path != bpPath+"A_Supplier" || fmt.Sprint(s.query["sap-client"]) != "[100]" || s.header.Get("Authorization") == "" {
					t.Errorf("page %d: %s %v (Authorization %q), want A_Supplier of the client 100 with the credentials",
						i+1, s.path, s.query, s.header.Get("Authorization"))
				}
				if i > 0 && url.Values(s.query).Get("$skiptoken") != strconv.Itoa(3*i) {
					t.Errorf("page %d: $skiptoken %q, want the link's %d", i+1, url.Values(s.query).Get("$skiptoken"), 3*i)
				}
			}
		})
	}
}

// TestListBehindAPathPrefix: with the ERP behind a proxy at a path of its
// own, a link written by a system that knows nothing of the prefix is read
// below it.
func TestListBehindAPathPrefix(t *testing.T) {
	const prefix = "/erp/s4"
	f := pagedServer(t, 5, 2, func(r *http.Request, next int) string {
		return "https://s4-internal.invalid:44300" + strings.TrimPrefix(r.URL.Path, prefix) + "?$skiptoken=" + strconv.Itoa(next)
	})
	c, err := New(f.srv.URL+prefix+"/", Options{Runner: retry.New(oneAttempt(2*time.Second), nil)})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := readIDs(c)
	if err != nil || len(ids) != 5 {
		t.Fatalf("got %v %v, want 5 ids", ids, err)
	}
	for _, s := range f.odata() {
		if s.path != prefix+bpPath+"A_Supplier" {
			t.Errorf("request to %s, want %s", s.path, prefix+bpPath+"A_Supplier")
		}
	}
}

// TestListNeverFollowsAForeignLink: a __next that leaves the service, or
// reads another client's data, is refused before anything is sent for it.
func TestListNeverFollowsAForeignLink(t *testing.T) {
	links := map[string]func(r *http.Request) string{
		"scheme-relative": func(*http.Request) string { return "//elsewhere.invalid/x" },
		"not HTTP": func(r *http.Request) string {
			return "ftp://" + r.Host + bpPath + "A_Supplier?$skiptoken=1"
		},
		"another service": func(r *http.Request) string {
			return "http://" + r.Host + "/sap/opu/odata/sap/API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder"
		},
		"outside OData": func(r *http.Request) string { return "http://" + r.Host + "/sap/bc/admin" },
		"dot segments": func(r *http.Request) string {
			return "http://" + r.Host + bpPath + "../API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder"
		},
		"relative dots": func(*http.Request) string { return "../API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder" },
		"encoded slash": func(r *http.Request) string {
			return "http://" + r.Host + bpPath + "..%2FAPI_PURCHASEORDER_PROCESS_SRV"
		},
		"user information": func(r *http.Request) string { return "http://evil@" + r.Host + bpPath + "A_Supplier?$skiptoken=1" },
		"another sap-client": func(r *http.Request) string {
			return "http://" + r.Host + bpPath + "A_Supplier?sap-client=200&$skiptoken=1"
		},
		"another sap-client on another host": func(*http.Request) string {
			return "http://s4-internal.invalid" + bpPath + "A_Supplier?$skiptoken=1&SAP-CLIENT=200"
		},
		"two sap-clients": func(r *http.Request) string {
			return "http://" + r.Host + bpPath + "A_Supplier?sap-client=100&$skiptoken=1&sap-client=200"
		},
		"a query that cannot be read": func(r *http.Request) string {
			return "http://" + r.Host + bpPath + "A_Supplier?$skiptoken=1;sap-client=200"
		},
		"backslash": func(r *http.Request) string {
			return "http://" + r.Host + bpPath + `..%5CAPI_PURCHASEORDER_PROCESS_SRV%5CA_PurchaseOrder`
		},
		"another service on another host": func(*http.Request) string {
			return "http://s4-internal.invalid/sap/opu/odata/sap/API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder?$skiptoken=1"
		},
		"the service root": func(r *http.Request) string { return "http://" + r.Host + strings.TrimSuffix(bpPath, "/") },
		"no URL":           func(*http.Request) string { return "http://[::1" },
	}
	for name, link := range links {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("$skiptoken") != "" {
					t.Errorf("the client followed %q", r.URL)
				}
				writeJSON(w, http.StatusOK, fmt.Sprintf(`{"d":{"results":[{"Supplier":"1"}],"__next":%q}}`, link(r)))
			})
			_, err := readIDs(f.client(Options{User: "ERPGATE_SVC", Password: "pw", Client: "100"}))
			var up *erp.UpstreamError
			if !errors.As(err, &up) || up.Text != "malformed response" || up.Transient || up.Status != http.StatusOK {
				t.Fatalf("got %v, want the list refused as malformed", err)
			}
			if len(f.odata()) != 1 {
				t.Errorf("%d requests, want the first page only", len(f.odata()))
			}
		})
	}
	// Without a configured client the system's default answers every
	// page: a link that names a client would read another one's data.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("$skiptoken") != "" {
			t.Errorf("the client followed %q", r.URL)
		}
		writeJSON(w, http.StatusOK, `{"d":{"results":[{"Supplier":"1"}],"__next":"A_Supplier?$skiptoken=1&sap-client=100"}}`)
	})
	if _, err := readIDs(f.client(Options{})); err == nil || !strings.Contains(err.Error(), "sap-client") {
		t.Errorf("got %v, want the link refused for its sap-client", err)
	}
}

func TestNextPageKeepsTheLink(t *testing.T) {
	c, err := New("https://s4.example.com:44300/proxy", Options{Client: "100"})
	if err != nil {
		t.Fatal(err)
	}
	cur := c.url(erp.ServiceBusinessPartner, "A_Supplier", param{"$top", "500"})
	const page = "https://s4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/"
	tests := []struct{ link, want string }{
		{"https://S4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$top=500&$skiptoken=50&sap-client=100",
			page + "A_Supplier?$top=500&$skiptoken=50&sap-client=100"},
		{"A_Supplier?$skiptoken=50", page + "A_Supplier?$skiptoken=50&sap-client=100"},
		{"A_Supplier?$skiptoken=50#frag", page + "A_Supplier?$skiptoken=50&sap-client=100"},
		// Another host, scheme or port: the same path on the configured ERP.
		{"http://s4hana.corp.internal:8000/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=50",
			page + "A_Supplier?$skiptoken=50&sap-client=100"},
		{"https://s4.example.com.evil.test/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=50&sap-client=100",
			page + "A_Supplier?$skiptoken=50&sap-client=100"},
		// Without the proxy's prefix, as the system behind it writes it.
		{"http://s4hana.corp.internal:8000/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=50",
			page + "A_Supplier?$skiptoken=50&sap-client=100"},
		{"/sap/opu/odata/sap/api_business_partner/A_Supplier?$skiptoken=50", page + "A_Supplier?$skiptoken=50&sap-client=100"},
		// Escapes in the path and the query are kept as written.
		{"/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_BusinessPartner('1%2042')/to_Supplier?$filter=A%20eq%20'x'&$skiptoken=5",
			page + "A_BusinessPartner('1%2042')/to_Supplier?$filter=A%20eq%20'x'&$skiptoken=5&sap-client=100"},
	}
	for _, tt := range tests {
		got, err := c.nextPage(erp.ServiceBusinessPartner, cur, tt.link)
		if err != nil || got != tt.want {
			t.Errorf("nextPage(%q) = %q, %v; want %q", tt.link, got, err, tt.want)
		}
	}
	for _, link := range []string{
		"https://s4.example.com:44300/other/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=1",
		"https://s4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER_X/A_Supplier?$skiptoken=1",
		"https://s4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/",
		"/sap/opu/odata/sap/API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder",
		"A_Supplier?$skiptoken=1&sap-client=200",
	} {
		if got, err := c.nextPage(erp.ServiceBusinessPartner, cur, link); err == nil {
			t.Errorf("%s accepted as %s", link, got)
		}
	}
	// Without a prefix, the path must be the service's below the root.
	c, _ = New("https://s4.example.com", Options{})
	cur = c.url(erp.ServiceBusinessPartner, "A_Supplier")
	if got, err := c.nextPage(erp.ServiceBusinessPartner, cur, "https://s4.example.com:443/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier"); err == nil {
		t.Errorf("a path below another prefix accepted as %s", got)
	}
	got, err := c.nextPage(erp.ServiceBusinessPartner, cur, "https://localhost:4004/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=1")
	if want := "https://s4.example.com/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=1"; err != nil || got != want {
		t.Errorf("got %q %v, want %q", got, err, want)
	}
}

// TestListPageRetriedWhole: a page whose entries fail to convert on one
// attempt and succeed on the next is counted once.
func TestListPageRetriedWhole(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			writeJSON(w, http.StatusOK, `{"d":{"results":[{"Supplier":"1"},{"Supplier":""}]}}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"d":{"results":[{"Supplier":"1"},{"Supplier":"2"}]}}`)
	})
	c := f.client(Options{Runner: retry.New(retry.Policy{AttemptTimeout: 2 * time.Second, MaxAttempts: 2,
		Sleep: func(context.Context, time.Duration) error { return nil }, Breaker: retry.BreakerSettings{Disabled: true}}, nil)})
	r := request{call: retry.Call{Service: erp.ServiceBusinessPartner, Operation: "search suppliers"}, method: http.MethodGet,
		url: c.url(erp.ServiceBusinessPartner, "A_Supplier")}
	ids, err := fetchList(context.Background(), c, r, func(w struct{ Supplier string }) (string, error) {
		if w.Supplier == "" {
			return "", missing("Supplier")
		}
		return w.Supplier, nil
	})
	if err != nil || fmt.Sprint(ids) != "[1 2]" {
		t.Errorf("got %v %v, want [1 2] from the second attempt alone", ids, err)
	}
}
