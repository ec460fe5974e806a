package sap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestListNeverFollowsAForeignLink: a __next that leaves the ERP's host or
// the service is refused before anything is sent to it.
func TestListNeverFollowsAForeignLink(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the client followed a foreign link: %s %s (Authorization %q)", r.Method, r.URL, r.Header.Get("Authorization"))
	}))
	t.Cleanup(elsewhere.Close)
	links := map[string]func(r *http.Request) string{
		"another host": func(*http.Request) string {
			return elsewhere.URL + "/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=1"
		},
		"another scheme":  func(r *http.Request) string { return "https://" + r.Host + r.URL.Path + "?$skiptoken=1" },
		"scheme-relative": func(*http.Request) string { return "//" + strings.TrimPrefix(elsewhere.URL, "http://") + "/x" },
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
}

func TestNextPageKeepsTheLink(t *testing.T) {
	c, err := New("https://s4.example.com:44300/proxy", Options{Client: "100"})
	if err != nil {
		t.Fatal(err)
	}
	cur := c.url(erp.ServiceBusinessPartner, "A_Supplier", param{"$top", "500"})
	tests := []struct{ link, want string }{
		{"https://S4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$top=500&$skiptoken=50&sap-client=100",
			"https://S4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$top=500&$skiptoken=50&sap-client=100"},
		{"A_Supplier?$skiptoken=50",
			"https://s4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=50&sap-client=100"},
		{"A_Supplier?$skiptoken=50#frag",
			"https://s4.example.com:44300/proxy/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=50&sap-client=100"},
	}
	for _, tt := range tests {
		got, err := c.nextPage(erp.ServiceBusinessPartner, cur, tt.link)
		if err != nil || got != tt.want {
			t.Errorf("nextPage(%q) = %q, %v; want %q", tt.link, got, err, tt.want)
		}
	}
	c, _ = New("https://s4.example.com", Options{})
	cur = c.url(erp.ServiceBusinessPartner, "A_Supplier")
	for _, link := range []string{"https://s4.example.com:443/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=1"} {
		if _, err := c.nextPage(erp.ServiceBusinessPartner, cur, link); err != nil {
			t.Errorf("the default port written out: %v", err)
		}
	}
	for _, link := range []string{"https://s4.example.com:8443/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=1",
		"https://s4.example.com.evil.test/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier?$skiptoken=1"} {
		if _, err := c.nextPage(erp.ServiceBusinessPartner, cur, link); err == nil {
			t.Errorf("%s accepted", link)
		}
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
