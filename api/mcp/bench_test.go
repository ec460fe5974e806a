package mcp_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/openapi"
)

// canned answers every request with one REST answer, so that a benchmark
// measures the MCP layer alone.
type canned struct {
	header http.Header
	status int
	body   []byte
}

func (c *canned) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	for k, v := range c.header {
		w.Header()[k] = v
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}

// BenchmarkToolsCallGetInvoice measures one tools/call of get_invoice on
// the MCP endpoint, as a client that initialized once sends it, with the
// REST answer canned (the REST path has benchmarks of its own).
func BenchmarkToolsCallGetInvoice(b *testing.B) {
	s := newStack(b)
	status, body := s.rest(http.MethodGet, "/invoices/5105600101", nil)
	if status != http.StatusOK {
		b.Fatalf("REST get_invoice: %d %s", status, body)
	}
	doc, err := openapi.Load()
	if err != nil {
		b.Fatal(err)
	}
	rest := &canned{header: http.Header{"Content-Type": {"application/json"}}, status: status, body: body}
	m, err := mcp.New(rest, doc, mcp.Options{})
	if err != nil {
		b.Fatal(err)
	}
	h := m.Handler()
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(msg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"structuredContent"`)) {
			b.Fatalf("tools/call: %d %s", w.Code, w.Body.Bytes())
		}
	}
}
