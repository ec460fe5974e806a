package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestZeroConfig builds the gateway of the zero Config: a simulated ERP,
// temporary records, the REST API and /mcp on one handler.
func TestZeroConfig(t *testing.T) {
	gw, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := gw.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if !gw.Simulated() || gw.ERPName() != "simulated S/4HANA" || !strings.HasPrefix(gw.ERPURL(), "http://127.0.0.1:") {
		t.Errorf("ERP %q at %q, simulated %v", gw.ERPName(), gw.ERPURL(), gw.Simulated())
	}
	srv := httptest.NewServer(gw.Handler())
	defer srv.Close()
	for path, want := range map[string]int{"/invoices/5105600101": http.StatusOK, "/openapi.json": http.StatusNotFound} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	// /mcp answers an MCP initialize.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST /mcp initialize: %d", resp.StatusCode)
	}
	// Run returns once its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	gw.Run(ctx)
}

// TestAPIFirstRoutesAsTheMux holds the handler that serves the API's
// clean paths without the ServeMux to the ServeMux itself: for paths of
// the API, of the console, unclean ones and ones beside the console's,
// with several methods, both answer with the same status, Location and
// body.
func TestAPIFirstRoutesAsTheMux(t *testing.T) {
	gw, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	front, ok := gw.Handler().(apiFirst)
	if !ok {
		t.Fatalf("Handler is a %T, want apiFirst", gw.Handler())
	}
	paths := []string{"/invoices/5105600101", "/invoices/5105600101/", "/invoices//5105600101", "/invoices/./5105600101",
		"/a/../healthz", "/healthz", "/metrics", "/openapi.json", "/mcp", "/", "/docs", "/docs/", "/redoc", "/redoc/",
		"/swagger-ui", "/swagger-ui/", "/swagger-ui/x", "/console", "/console/", "/console/runs", "/console/static/console.css",
		"/consolex", "/console-x", "/documents", "/approvals", "/no/such/path", "/invoices/%2F"}
	for _, p := range paths {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodHead} {
			run := func(h http.Handler) *httptest.ResponseRecorder {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(method, "http://erpgate.test"+p, nil))
				return w
			}
			got, want := run(front), run(front.mux)
			// The request id differs between any two answers, and the
			// metrics count the requests of the test.
			body := func(w *httptest.ResponseRecorder) string {
				if p == "/metrics" {
					return ""
				}
				b := requestIDs.ReplaceAllString(w.Body.String(), "ID")
				return b[:min(len(b), 300)]
			}
			if got.Code != want.Code || got.Header().Get("Location") != want.Header().Get("Location") || body(got) != body(want) {
				t.Errorf("%s %s: %d %q %q, through the mux %d %q %q", method, p, got.Code, got.Header().Get("Location"),
					body(got), want.Code, want.Header().Get("Location"), body(want))
			}
		}
	}
}

var requestIDs = regexp.MustCompile(`[0-9a-f]{32}`)
