package mcp_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
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
// the MCP endpoint, with the REST answer canned (the REST path has
// benchmarks of its own): as a client of 2025-06-18 that initialized once
// sends it, and as a client of 2026-07-28 sends it, with its protocol
// version, capabilities and name in _meta and the standard headers.
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
	for _, c := range []struct {
		version string
		msg     string
		header  map[string]string
	}{
		{"2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, nil},
		{"2026-07-28", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"loadbench","version":"1.0.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},` +
			`"arguments":{"invoice_id":"5105600101"},"name":"get_invoice"}}`,
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice"}},
	} {
		b.Run(c.version, func(b *testing.B) {
			msg := []byte(c.msg)
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(msg))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", c.version)
				for k, v := range c.header {
					req.Header.Set(k, v)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"structuredContent"`)) {
					b.Fatalf("tools/call: %d %s", w.Code, w.Body.Bytes())
				}
			}
		})
	}
}

// BenchmarkAppendResponse measures the direct path's answer of the REST
// answer to get_invoice alone: the body as text and as structured
// content, in a buffer used again.
func BenchmarkAppendResponse(b *testing.B) {
	s := newStack(b)
	status, body := s.rest(http.MethodGet, "/invoices/5105600101", nil)
	if status != http.StatusOK {
		b.Fatalf("REST get_invoice: %d %s", status, body)
	}
	info := []byte(`{"name":"erpgate","version":"1.0.0"}`)
	var out []byte
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		out = mcp.AppendResponse(out[:0], "7", status, body, info)
	}
}

// BenchmarkToolsCallTraced measures what the direct path still saves once
// tool calls are traced: one tools/call of get_invoice in 2026-07-28 with
// a traceparent in params._meta, the REST answer canned, on the direct
// path and through the SDK (SetSDKOnly), with tracing off and on (spans
// batched to an exporter that drops them, so that the figure is the
// tracing's own, not an exporter's).
func BenchmarkToolsCallTraced(b *testing.B) {
	s := newStack(b)
	status, body := s.rest(http.MethodGet, "/invoices/5105600101", nil)
	if status != http.StatusOK {
		b.Fatalf("REST get_invoice: %d %s", status, body)
	}
	doc, err := openapi.Load()
	if err != nil {
		b.Fatal(err)
	}
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},` +
		`"arguments":{"invoice_id":"5105600101"},"name":"get_invoice"}}`)
	for _, traced := range []bool{false, true} {
		for _, sdkOnly := range []bool{false, true} {
			name := "direct"
			if sdkOnly {
				name = "sdk"
			}
			if traced {
				name += "/traced"
			} else {
				name += "/untraced"
			}
			b.Run(name, func(b *testing.B) {
				opts := mcp.Options{}
				if traced {
					tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
					defer func() { _ = tp.Shutdown(context.Background()) }()
					opts.Tracer = tp.Tracer("bench")
				}
				rest := &canned{header: http.Header{"Content-Type": {"application/json"}}, status: status, body: body}
				m, err := mcp.New(rest, doc, opts)
				if err != nil {
					b.Fatal(err)
				}
				m.SetSDKOnly(sdkOnly)
				h := m.Handler()
				b.ReportAllocs()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(msg))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
					req.Header.Set("Mcp-Method", "tools/call")
					req.Header.Set("Mcp-Name", "get_invoice")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"structuredContent"`)) {
						b.Fatalf("tools/call: %d %s", w.Code, w.Body.Bytes())
					}
				}
			})
		}
	}
}

// BenchmarkToolsCallPaths measures what the direct path saves on a whole
// tools/call of get_invoice, traced as in production: the gateway's REST
// handler over the SAP client (the ERP's answer canned), the records in
// SQLite, a JSON log, every span batched to an exporter that drops it, the
// call's traceparent in params._meta. Each revision on the direct path and
// through the SDK (SetSDKOnly), one call at a time: cpu-ns/op is the
// process's CPU time per call (every goroutine's), p50-ns and p99-ns the
// latency of one call.
func BenchmarkToolsCallPaths(b *testing.B) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	calls := []struct {
		version, msg string
		header       http.Header
	}{
		{"2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"traceparent":"` + tp + `"},` +
			`"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, nil},
		{"2026-07-28", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"` + tp + `"},` +
			`"arguments":{"invoice_id":"5105600101"},"name":"get_invoice"}}`,
			http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"get_invoice"}}},
	}
	doc, err := openapi.Load()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range calls {
		for _, path := range []string{"direct", "sdk"} {
			b.Run(c.version+"/"+path, func(b *testing.B) {
				tracing := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				defer func() { _ = tracing.Shutdown(context.Background()) }()
				tracer := tracing.Tracer("bench")
				metrics := api.NewMetrics()
				client, err := sap.New("http://sap.invalid", sap.Options{
					HTTPClient: &http.Client{Transport: sim.NewReplay(sim.Options{})},
					Runner:     retry.New(retry.Policy{Tracer: tracer}, metrics),
				})
				if err != nil {
					b.Fatal(err)
				}
				store, _ := recordstest.SQLite(b)
				logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
				srv, err := api.NewServer(api.Options{ERP: client, Records: store, Metrics: metrics, Logger: logger, Tracer: tracer})
				if err != nil {
					b.Fatal(err)
				}
				m, err := mcp.New(srv, doc, mcp.Options{Tracer: tracer, Logger: logger})
				if err != nil {
					b.Fatal(err)
				}
				m.SetSDKOnly(path == "sdk")
				h := m.Handler()
				msg := []byte(c.msg)
				w := &discardWriter{h: http.Header{}}
				lat := make([]time.Duration, 0, 1<<16)
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(msg))
					req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
						"Mcp-Protocol-Version": {c.version}}
					maps.Copy(req.Header, c.header)
					clear(w.h)
					w.status = 0
					t0 := time.Now()
					h.ServeHTTP(w, req)
					lat = append(lat, time.Since(t0))
					if w.status != http.StatusOK {
						b.Fatalf("tools/call: %d", w.status)
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
			})
		}
	}
}

// processCPU is the process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discardWriter keeps an answer's status and drops its body.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }

func (w *discardWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}
