package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// sweepGateway is the gateway as cmd/erpgate serves it: API keys, the MCP
// endpoint mounted, and the http.Server's header limit.
func sweepGateway(t *testing.T, opts ...func(*api.Options)) (*api.Server, *httptest.Server) {
	t.Helper()
	simSrv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(simSrv.Close)
	metrics := api.NewMetrics()
	runner := retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond}, metrics)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := recordstest.SQLite(t)
	o := api.Options{ERP: client, Records: store, Metrics: metrics,
		Credentials: []api.Credential{credential(t, "agent", secWriterKey, "read", "write"),
			credential(t, "viewer", secReaderKey, "read"), credential(t, "all", sweepAllKey, api.Scopes...)}}
	for _, f := range opts {
		f(&o)
	}
	srv, err := api.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := mcp.New(srv, doc, mcp.Options{Allowed: srv.Allows})
	if err != nil {
		t.Fatal(err)
	}
	srv.MountMCP(srv.RequireCredentials(m.Handler()))
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.MaxHeaderBytes = api.ServerMaxHeaderBytes
	ts.Start()
	t.Cleanup(ts.Close)
	return srv, ts
}

// sweepAllKey is the key of a client with every scope.
const sweepAllKey = "sk-sweep-all-scopes-4dQ7"

// sweepPaths fills a route pattern's parameters with ids of the right form.
var sweepPaths = strings.NewReplacer("{invoice_id}", "5105600101", "{po_id}", "4500018822", "{item}", "10",
	"{supplier_id}", "100042", "{approval_id}", "A0000001", "{hold_id}", "H0000001", "{run_id}", "run-1")

// TestEveryRouteRefusesInFiveFields walks every route of the router and
// sends each a wrong method, an oversize body, a body that is not JSON and
// an oversize header; every refusal must be the five fields, as
// application/problem+json, with the status of its kind. /mcp, whose
// refusals the MCP transport writes, is among the routes: there the five
// fields are the data of a JSON-RPC error, but for the oversize header,
// refused before any route.
func TestEveryRouteRefusesInFiveFields(t *testing.T) {
	srv, ts := sweepGateway(t)
	type route struct{ method, path string }
	var routes []route
	err := chi.Walk(srv.Routes(), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		// /mcp is routed for every method; the MCP transport serves POST.
		if pattern != "/mcp" || method == http.MethodPost {
			routes = append(routes, route{method, sweepPaths.Replace(pattern)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 20 {
		t.Fatalf("walked %d routes, want every route of routes.go: %v", len(routes), routes)
	}
	send := func(method, path string, body io.Reader, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+sweepAllKey)
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, raw
	}
	want := func(where string, resp *http.Response, body []byte, status int) {
		t.Helper()
		if resp.StatusCode != status {
			t.Errorf("%s: status %d, want %d: %s", where, resp.StatusCode, status, body)
		}
		if strings.Contains(where, " /mcp ") && status != http.StatusRequestHeaderFieldsTooLarge {
			checkRPCFiveFields(t, where, resp, body)
		} else {
			checkFiveFields(t, where, resp, body)
		}
		if !bytes.Contains(body, []byte(`"code":"INVALID_REQUEST"`)) {
			t.Errorf("%s: code is not INVALID_REQUEST: %s", where, body)
		}
	}
	// Every route answers some method.
	methods := map[string]bool{}
	for _, rt := range routes {
		methods[rt.path+" "+rt.method] = true
	}
	for _, rt := range routes {
		where := func(what string) string { return fmt.Sprintf("%s %s (%s)", rt.method, rt.path, what) }
		for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodGet, http.MethodPost} {
			if methods[rt.path+" "+m] {
				continue
			}
			resp, body := send(m, rt.path, nil)
			want(where(m), resp, body, http.StatusMethodNotAllowed)
		}
		method := rt.method
		bodyLimit := api.DefaultMaxBodyBytes
		if rt.path == "/mcp" {
			bodyLimit = sdk.DefaultMaxRequestBodyBytes
		}
		big := bytes.Repeat([]byte(" "), bodyLimit+1)
		resp, body := send(method, rt.path, bytes.NewReader(big), "Content-Type", "application/json")
		want(where("oversize body"), resp, body, http.StatusRequestEntityTooLarge)
		if method == http.MethodPost {
			resp, body := send(method, rt.path, strings.NewReader(`{"reason":"x"}`), "Content-Type", "text/plain")
			want(where("text/plain body"), resp, body, http.StatusUnsupportedMediaType)
		}
		resp, body = send(method, rt.path, nil, "X-Filler", strings.Repeat("f", api.DefaultMaxHeaderBytes))
		want(where("oversize header"), resp, body, http.StatusRequestHeaderFieldsTooLarge)
	}
	for _, p := range []string{"/nowhere", "/invoices", "/invoices/5105600101/void", "/mcp/extra"} {
		resp, body := send(http.MethodGet, p, nil)
		want("GET "+p, resp, body, http.StatusNotFound)
	}
}

// TestMCPTransportRefusalsInFiveFields checks the refusals the MCP
// transport makes before it reads the JSON-RPC request: each is a JSON-RPC
// error answering the request's id with the five fields in its data,
// without the transport's own text, which may echo the request.
func TestMCPTransportRefusalsInFiveFields(t *testing.T) {
	_, ts := sweepGateway(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct {
		name   string
		status int
		edit   func(*http.Request)
	}{
		{"foreign Host on a loopback listener", http.StatusForbidden, func(r *http.Request) { r.Host = "evil.example" }},
		{"oversize body", http.StatusRequestEntityTooLarge, func(r *http.Request) {
			big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("p", sdk.DefaultMaxRequestBodyBytes) + `"}}`
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(big)), int64(len(big))
		}},
		{"oversize body without a length", http.StatusRequestEntityTooLarge, func(r *http.Request) {
			big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("p", sdk.DefaultMaxRequestBodyBytes) + `"}}`
			r.Body, r.ContentLength = io.NopCloser(io.MultiReader(strings.NewReader(big))), -1
		}},
		{"GET", http.StatusMethodNotAllowed, func(r *http.Request) { r.Method = http.MethodGet }},
		{"text/plain", http.StatusUnsupportedMediaType, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }},
		{"Accept without event streams", http.StatusBadRequest, func(r *http.Request) { r.Header.Set("Accept", "application/json") }},
		{"unknown protocol version", http.StatusBadRequest, func(r *http.Request) { r.Header.Set("Mcp-Protocol-Version", "1999-01-01<x>") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(initialize))
			req.Header.Set("Authorization", "Bearer "+secWriterKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			c.edit(req)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			checkRPCFiveFields(t, c.name, resp, body)
			// An oversize body is not read to its id, and a GET has none.
			if c.status != http.StatusRequestEntityTooLarge && c.name != "GET" && !bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","id":1,`)) {
				t.Errorf("the refusal does not answer the request's id 1: %s", body)
			}
			for _, echo := range []string{"evil.example", "1999-01-01", "<x>", "text/plain"} {
				if bytes.Contains(body, []byte(echo)) {
					t.Errorf("the refusal echoes %q: %s", echo, body)
				}
			}
		})
	}
}

// checkRPCFiveFields checks a refusal of the MCP transport: a JSON-RPC
// error response, as application/json, whose data is the five fields in
// their order.
func checkRPCFiveFields(t *testing.T, where string, resp *http.Response, body []byte) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: error Content-Type %q, want application/json", where, ct)
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.JSONRPC != "2.0" || msg.ID == nil || msg.Error == nil ||
		msg.Error.Code == 0 || msg.Error.Message == "" {
		t.Errorf("%s: not a JSON-RPC error response (%v): %s", where, err, body)
		return
	}
	if !fiveFields.Match(msg.Error.Data) {
		t.Errorf("%s: error data is not the five fields in order: %s", where, msg.Error.Data)
	}
}
