package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

// page is one page of a collection read.
type page struct {
	Count   string            `json:"__count"`
	Results []json.RawMessage `json:"results"`
	Next    string            `json:"__next"`
}

func (e *env) page(path string) page {
	e.t.Helper()
	r := e.get(path)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var env struct {
		D page `json:"d"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		e.t.Fatalf("GET %s: %v: %s", path, err, r.body)
	}
	return env.D
}

// receipts posts goods receipts for PO 4500018822 item 20 until it has n.
func (e *env) receipts(n int) {
	e.t.Helper()
	had, err := strconv.Atoi(e.page(receiptsOf20 + "&$inlinecount=allpages").Count)
	if err != nil || had > n {
		e.t.Fatalf("the item has %d receipts (%v), want at most %d", had, err, n)
	}
	for range n - had {
		r := e.do(http.MethodPost, "/sim/admin/goods-receipts", map[string]any{"po_id": "4500018822", "item": "20", "quantity": "1"}, nil)
		if r.status != http.StatusOK && r.status != http.StatusCreated {
			e.t.Fatalf("goods receipt: %d %s", r.status, r.body)
		}
	}
}

// follow reads a collection page by page along its __next links and
// returns how many entries each page had.
func (e *env) follow(path string) []int {
	e.t.Helper()
	var sizes []int
	for i := 0; path != ""; i++ {
		if i > 100 {
			e.t.Fatal("more than 100 pages")
		}
		p := e.page(path)
		sizes = append(sizes, len(p.Results))
		if p.Next == "" {
			break
		}
		if !strings.HasPrefix(p.Next, e.url+mdSrv+"/") {
			e.t.Fatalf("__next %q is not an absolute link into the service", p.Next)
		}
		path = strings.TrimPrefix(p.Next, e.url)
	}
	return sizes
}

var receiptsOf20 = mdSrv + "/A_MaterialDocumentItem?$filter=" +
	url.QueryEscape("PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '20'")

func TestListPagesAtTheDefaultSize(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.receipts(sim.DefaultPageSize + 10)
	first := e.page(receiptsOf20 + "&$inlinecount=allpages")
	if len(first.Results) != sim.DefaultPageSize || first.Next == "" {
		t.Fatalf("first page: %d entries, __next %q; want %d and a link", len(first.Results), first.Next, sim.DefaultPageSize)
	}
	if first.Count != fmt.Sprint(sim.DefaultPageSize+10) {
		t.Errorf("__count %q, want every entry, %d", first.Count, sim.DefaultPageSize+10)
	}
	if !strings.Contains(first.Next, "$skiptoken=50") || !strings.Contains(first.Next, "$filter=") ||
		!strings.Contains(first.Next, "$inlinecount=allpages") {
		t.Errorf("__next %q does not keep the query options and add $skiptoken=50", first.Next)
	}
	if got := e.follow(receiptsOf20); fmt.Sprint(got) != fmt.Sprint([]int{50, 10}) {
		t.Errorf("pages %v, want [50 10]", got)
	}
}

func TestListPaging(t *testing.T) {
	e := newEnv(t, sim.Options{PageSize: 2})
	e.receipts(5)
	if got := e.follow(receiptsOf20); fmt.Sprint(got) != "[2 2 1]" {
		t.Errorf("pages %v, want [2 2 1]", got)
	}
	// $skip and $top choose the window that is paged.
	if got := e.follow(receiptsOf20 + "&$skip=1&$top=3"); fmt.Sprint(got) != "[2 1]" {
		t.Errorf("pages of $skip=1 $top=3: %v, want [2 1]", got)
	}
	// A list that fits a page has no link.
	if p := e.page(receiptsOf20 + "&$top=2"); len(p.Results) != 2 || p.Next != "" {
		t.Errorf("$top=2: %d entries, __next %q; want 2 and no link", len(p.Results), p.Next)
	}
	// The pages hold different entries, together all of them once.
	seen := map[string]bool{}
	for path := receiptsOf20; path != ""; {
		p := e.page(path)
		for _, r := range p.Results {
			var row struct {
				MaterialDocument string
			}
			if err := json.Unmarshal(r, &row); err != nil {
				t.Fatal(err)
			}
			if seen[row.MaterialDocument] {
				t.Errorf("material document %s on two pages", row.MaterialDocument)
			}
			seen[row.MaterialDocument] = true
		}
		path = strings.TrimPrefix(p.Next, e.url)
	}
	if len(seen) != 5 {
		t.Errorf("%d distinct material documents over the pages, want 5", len(seen))
	}
	wantError(t, e.get(receiptsOf20+"&$skiptoken=soon"), http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001")
	// A navigation is paged like an entity set.
	one := newEnv(t, sim.Options{PageSize: 1})
	nav := one.page(poSrv + "/A_PurchaseOrder('4500018822')/to_PurchaseOrderItem")
	if len(nav.Results) != 1 || nav.Next != one.url+poSrv+"/A_PurchaseOrder('4500018822')/to_PurchaseOrderItem?$skiptoken=1" {
		t.Errorf("navigation page: %d entries, __next %q", len(nav.Results), nav.Next)
	}
}

func TestListPagingOff(t *testing.T) {
	e := newEnv(t, sim.Options{PageSize: -1})
	e.receipts(sim.DefaultPageSize + 1)
	if p := e.page(receiptsOf20); len(p.Results) != sim.DefaultPageSize+1 || p.Next != "" {
		t.Errorf("without paging: %d entries, __next %q", len(p.Results), p.Next)
	}
}
