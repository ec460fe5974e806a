//go:build cap

// The test against SAP's own OData implementation: SAP CAP (@sap/cds 9)
// serving SAP's published $metadata of the four services, imported with
// `cds import` from shared/sapspecs beside the repository into a temporary
// project, with the simulator's golden set as data, as OData V2 through
// @cap-js-community/odata-v2-adapter (erp/sap/cap). One gateway in front
// of CAP and one in front of the simulator answer the same calls; the
// answers are compared byte for byte.
//
// It needs Node.js and erp/sap/cap/node_modules: run it with
// `bash .ci/cap.sh`, which installs them (npm ci) and runs
// `go test -tags cap -run CAP ./cmd/erpgate`.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp/sim"
)

// capPageSize is the server-side page size of both ERPs: every list longer
// than it is paged across __next, on CAP (cds.query.limit) as on the
// simulator (sim.Options.PageSize).
const capPageSize = 2

// capServices are SAP's services the gateway calls, each imported from
// shared/sapspecs/<name>.edmx, with the entity sets whose rows are copied
// from the simulator.
var capServices = map[string][]string{
	"API_SUPPLIERINVOICE_PROCESS_SRV": {"A_SupplierInvoice", "A_SuplrInvcItemPurOrdRef"},
	"API_PURCHASEORDER_PROCESS_SRV":   {"A_PurchaseOrder", "A_PurchaseOrderItem"},
	"API_MATERIAL_DOCUMENT_SRV":       {"A_MaterialDocumentHeader", "A_MaterialDocumentItem"},
	"API_BUSINESS_PARTNER":            {"A_BusinessPartner", "A_BusinessPartnerAddress", "A_Supplier"},
}

// capKnownDifferences are the calls whose answers through CAP are not the
// simulator's, with why. Every other call must answer byte for byte the
// same; a call listed here that comes to agree fails the test too, so the
// list stays true.
var capKnownDifferences = map[string]string{}

// capCalls are the reads and matches compared: every invoice, order,
// supplier and goods receipt of the golden set, ids that do not exist, a
// supplier search, and the three-way match of every invoice.
func capCalls() []string {
	var calls []string
	for i := 100; i <= 109; i++ {
		calls = append(calls, fmt.Sprintf("GET /invoices/51056%05d", i))
	}
	calls = append(calls, "GET /invoices/5105600999")
	for _, po := range []string{"4500018822", "4500018823", "4500018830", "4500018831", "4500018840", "4500018850", "4500018860", "4500019822"} {
		calls = append(calls, "GET /purchase-orders/"+po)
	}
	for _, gr := range []string{"4500018822/items/10", "4500018822/items/20", "4500018823/items/10", "4500018830/items/10",
		"4500018840/items/10", "4500018850/items/10", "4500018860/items/10", "4500019822/items/10"} {
		calls = append(calls, "GET /purchase-orders/"+gr+"/goods-receipts")
	}
	for _, s := range []string{"100042", "100043", "100999"} {
		calls = append(calls, "GET /suppliers/"+s)
	}
	calls = append(calls, "GET /suppliers?name=ac", "GET /suppliers?name=GmbH", "GET /suppliers?name=zzzz")
	for i := 100; i <= 109; i++ {
		calls = append(calls, fmt.Sprintf("POST /invoices/51056%05d/three-way-match", i))
	}
	return calls
}

func TestCAPAgreesWithTheSimulator(t *testing.T) {
	now := time.Date(2026, time.December, 1, 22, 9, 59, 0, time.UTC)
	clock := func() time.Time { return now }

	s := sim.New(sim.Options{PageSize: capPageSize, Now: clock})
	simURL, stop, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(context.Background()) })

	capURL, skiptokens := startCAP(t, simURL)

	gw := func(erpURL string, client *http.Client) http.Handler {
		g, err := gateway.New(context.Background(), gateway.Config{ERPURL: erpURL, ERPHTTPClient: client, Now: clock})
		if err != nil {
			t.Fatalf("gateway in front of %s: %v", erpURL, err)
		}
		t.Cleanup(func() { g.Close() })
		return g.Handler()
	}
	onSim := gw(simURL, nil)
	onCAP := gw(capURL, &http.Client{Transport: skiptokens, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})

	var same, differ []string
	for _, call := range capCalls() {
		a, b := capCall(onSim, call, ""), capCall(onCAP, call, "")
		why, known := capKnownDifferences[call]
		switch {
		case a == b && known:
			t.Errorf("%s: listed as differing (%s), but CAP's answer is the simulator's now: %s", call, why, a)
		case a == b:
			same = append(same, call)
		case known:
			differ = append(differ, call)
			t.Logf("%s: differs, as known (%s)\n  simulator: %s\n  CAP:       %s", call, why, a, b)
		default:
			differ = append(differ, call)
			t.Errorf("%s: CAP's answer is not the simulator's\n  simulator: %s\n  CAP:       %s", call, a, b)
		}
	}
	t.Logf("%d answers byte for byte the same, %d differ", len(same), len(differ))
	if n := skiptokens.paged.Load(); n == 0 {
		t.Errorf("no read through CAP followed a __next link ($skiptoken): paging untested")
	} else {
		t.Logf("%d pages read through CAP's __next links (CAP names the host localhost, the gateway calls 127.0.0.1)", n)
	}

	// CAP names the host of its __next links as it is called through the
	// adapter (localhost), not as the gateway calls it (127.0.0.1): the
	// pages above were followed on the configured ERP all the same.
	if next := capNext(t, capURL+"/sap/opu/odata/sap/API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice?$format=json"); !strings.HasPrefix(next, "http://localhost:") {
		t.Errorf("CAP's __next link is %q, not on localhost: the re-pointing of another host name is untested", next)
	}

	// The post: approval granted at once, then post_invoice, on both.
	approve := `{"proposed_action":"post_as_invoiced","justification":"Three-way match MATCHED on all lines."}`
	a, b := capCall(onSim, "POST /invoices/5105600101/approvals", approve), capCall(onCAP, "POST /invoices/5105600101/approvals", approve)
	if a != b || !strings.HasPrefix(a, "200 ") {
		t.Fatalf("request_approval:\n  simulator: %s\n  CAP:       %s", a, b)
	}
	var approval struct {
		ID string `json:"approval_id"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(a, " ", 2)[1]), &approval); err != nil || approval.ID == "" {
		t.Fatalf("request_approval answered no approval_id: %s", a)
	}
	post := `{"approval_id":"` + approval.ID + `"}`
	a, b = capCall(onSim, "POST /invoices/5105600101/post", post), capCall(onCAP, "POST /invoices/5105600101/post", post)
	if a != b || !strings.Contains(a, `"status":"posted"`) {
		t.Errorf("post_invoice:\n  simulator: %s\n  CAP:       %s", a, b)
	}
	a, b = capCall(onSim, "GET /invoices/5105600101", ""), capCall(onCAP, "GET /invoices/5105600101", "")
	if a != b || !strings.Contains(a, `"status":"posted"`) {
		t.Errorf("get_invoice after the post:\n  simulator: %s\n  CAP:       %s", a, b)
	}
	if n := skiptokens.posts.Load(); n != 1 {
		t.Errorf("%d Post requests reached CAP, want 1", n)
	}
}

// capCall makes one call ("METHOD /path") to a gateway's handler and
// returns its status code and body.
func capCall(h http.Handler, call, body string) string {
	method, target, _ := strings.Cut(call, " ")
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" || method == http.MethodPost {
		r.Header.Set("Content-Type", "application/json")
		if body == "" {
			r.Body = io.NopCloser(strings.NewReader("{}"))
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return fmt.Sprintf("%d %s", w.Code, strings.TrimSpace(w.Body.String()))
}

// capCounter counts the requests to CAP that follow a __next link and the
// Post function imports.
type capCounter struct {
	base         http.RoundTripper
	paged, posts atomic.Int64
}

func (c *capCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Has("$skiptoken") {
		c.paged.Add(1)
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Post") {
		c.posts.Add(1)
	}
	resp, err := c.base.RoundTrip(r)
	if os.Getenv("ERPGATE_TEST_CAP_DEBUG") != "" && err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		fmt.Fprintf(os.Stderr, "CAP %s %s -> %d %.600s\n", r.Method, r.URL, resp.StatusCode, b)
	}
	return resp, err
}

// startCAP builds CAP's project in a temporary directory (erp/sap/cap's
// package.json and server.js, its node_modules linked, SAP's EDMX files
// imported, the simulator's entity sets as data), starts it on a free
// loopback port, and returns its URL (http://127.0.0.1:<port>) and the
// counting transport to reach it with. CAP stops at the test's end.
func startCAP(t *testing.T, simURL string) (string, *capCounter) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	capDir := filepath.Join(root, "erp", "sap", "cap")
	specs := filepath.Join(root, "..", "shared", "sapspecs")
	howTo := "run this test with `bash .ci/cap.sh`, which installs SAP CAP (npm ci in erp/sap/cap) and runs it"
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (SAP CAP needs Node.js 20 or later): %s", howTo)
	}
	for _, p := range []string{"@sap/cds", "@sap/cds-dk", "@cap-js/sqlite", "@cap-js-community/odata-v2-adapter"} {
		if _, err := os.Stat(filepath.Join(capDir, "node_modules", p, "package.json")); err != nil {
			t.Fatalf("%s is not installed in erp/sap/cap/node_modules: %s", p, howTo)
		}
	}
	for svc := range capServices {
		if _, err := os.Stat(filepath.Join(specs, svc+".edmx")); err != nil {
			t.Fatalf("SAP's $metadata %s.edmx is missing from %s (shared/sapspecs beside the repository)", svc, specs)
		}
	}

	dir := t.TempDir()
	pkg, err := os.ReadFile(filepath.Join(capDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest map[string]any
	if err := json.Unmarshal(pkg, &manifest); err != nil {
		t.Fatal(err)
	}
	manifest["cds"] = map[string]any{
		"requires": map[string]any{"db": map[string]any{"kind": "sqlite", "credentials": map[string]any{"url": ":memory:"}}},
		"query":    map[string]any{"limit": map[string]any{"default": capPageSize, "max": capPageSize}},
	}
	writeJSON(t, filepath.Join(dir, "package.json"), manifest)
	js, err := os.ReadFile(filepath.Join(capDir, "server.js"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "server.js"), js, 0o644))
	must(t, os.Symlink(filepath.Join(capDir, "node_modules"), filepath.Join(dir, "node_modules")))
	must(t, os.MkdirAll(filepath.Join(dir, "srv"), 0o755))

	// cds import, the four services at once.
	cdsBin := filepath.Join(capDir, "node_modules", "@sap", "cds-dk", "bin", "cds.js")
	var using strings.Builder
	var wg sync.WaitGroup
	errs := make(chan error, len(capServices))
	for svc := range capServices {
		fmt.Fprintf(&using, "using from './external/%s';\n", svc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(node, cdsBin, "import", filepath.Join(specs, svc+".edmx"), "--no-save", "--as", "cds", "--force")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("cds import %s.edmx: %v\n%s", svc, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "srv", "services.cds"), []byte(using.String()), 0o644))

	// The golden set: every entity set, as the simulator answers it.
	for svc, sets := range capServices {
		must(t, os.MkdirAll(filepath.Join(dir, "data", svc), 0o755))
		for _, set := range sets {
			writeJSON(t, filepath.Join(dir, "data", svc, set+".json"), readSet(t, simURL+"/sap/opu/odata/sap/"+svc+"/"+set))
		}
	}

	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules", "@sap", "cds", "bin", "serve.js"), "all", "--port", port)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_ENV=test")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	ready := make(chan string, 1)
	var log bytes.Buffer
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if strings.HasPrefix(sc.Text(), "erpgate-cap ready") {
				ready <- sc.Text()
			}
		}
	}()
	select {
	case line := <-ready:
		t.Log("SAP CAP on 127.0.0.1:" + port + ": " + line)
	case <-time.After(60 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("SAP CAP did not start within 60s:\n%s\n%s", log.String(), stderr.String())
	}
	return "http://127.0.0.1:" + port, &capCounter{base: http.DefaultTransport.(*http.Transport).Clone()}
}

// readSet reads every entity of an entity set from the simulator, across
// its __next links, as the simulator answers them.
func readSet(t *testing.T, setURL string) []json.RawMessage {
	t.Helper()
	var all []json.RawMessage
	next := setURL + "?$format=json"
	for next != "" {
		resp, err := http.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			D struct {
				Results []json.RawMessage `json:"results"`
				Next    string            `json:"__next"`
			} `json:"d"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("reading %s from the simulator: %d %v", next, resp.StatusCode, err)
		}
		all = append(all, page.D.Results...)
		next = page.D.Next
		if next != "" {
			if u, err := url.Parse(next); err == nil && u.Query().Get("$format") == "" {
				q := u.Query()
				q.Set("$format", "json")
				u.RawQuery = q.Encode()
				next = u.String()
			}
		}
	}
	if len(all) == 0 {
		t.Fatalf("the simulator has no entities in %s", setURL)
	}
	return all
}

// capNext returns the __next link of a list read straight from CAP.
func capNext(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		D struct {
			Next string `json:"__next"`
		} `json:"d"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	return page.D.Next
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(path, b, 0o644))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
