package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
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
