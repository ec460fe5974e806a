package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/cmd/internal/telemetry"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// BenchmarkTracedRead is a whole get_invoice as the gateway process does
// it, minus the sockets (as api's BenchmarkProxiedRead), with a
// traceparent: tracing off, and on with every span exported over OTLP/HTTP
// to a receiver in this process that reads and drops the exports. The
// difference of cpu-ns/op is what tracing costs a read, with the
// receiver's reading; loadbench traces measures the gateway's process
// alone, over sockets and with callers at once.
func BenchmarkTracedRead(b *testing.B) {
	for _, c := range []struct {
		name    string
		on, mcp bool
	}{{"rest/off", false, false}, {"rest/on", true, false}, {"mcp/off", false, true}, {"mcp/on", true, true}} {
		on := c.on
		b.Run(c.name, func(b *testing.B) {
			var tracing *telemetry.Tracing
			if on {
				// The receiver reads and drops the exports: decoding
				// them is the collector's cost, not the gateway's.
				receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/x-protobuf")
				}))
				defer receiver.Close()
				s, err := telemetry.FromEnv(func(k string) string {
					return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.URL}[k]
				})
				if err != nil {
					b.Fatal(err)
				}
				if tracing, err = telemetry.Start(s, nil); err != nil {
					b.Fatal(err)
				}
				defer func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_ = tracing.Shutdown(ctx)
				}()
			}
			metrics := api.NewMetrics()
			client, err := sap.New("http://sap.invalid", sap.Options{
				HTTPClient: &http.Client{Transport: sim.NewReplay(sim.Options{})},
				Runner:     retry.New(retry.Policy{Tracer: tracing.Tracer()}, metrics),
			})
			if err != nil {
				b.Fatal(err)
			}
			store, err := records.OpenTemp(context.Background(), records.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(io.Discard, nil)))
			srv, err := api.NewServer(api.Options{ERP: client, Records: store, Metrics: metrics, Logger: logger, Tracer: tracing.Tracer()})
			if err != nil {
				b.Fatal(err)
			}
			var h http.Handler = srv
			newReq := func() *http.Request {
				req := httptest.NewRequest(http.MethodGet, "/invoices/5105600101", nil)
				req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
				return req
			}
			if c.mcp {
				doc, err := openapi.Load()
				if err != nil {
					b.Fatal(err)
				}
				m, err := mcp.New(srv, doc, mcp.Options{Tracer: tracing.Tracer()})
				if err != nil {
					b.Fatal(err)
				}
				h = m.Handler()
				msg := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{},` +
					`"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},` +
					`"arguments":{"invoice_id":"5105600101"},"name":"get_invoice"}}`
				newReq = func() *http.Request {
					req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(msg))
					req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
						"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"get_invoice"}}
					return req
				}
			}
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				clear(w.h)
				w.status = 0
				h.ServeHTTP(w, newReq())
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's CPU time so far, user and system, the
// exporter's and (with tracing on) the receiver's goroutines included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type discard struct {
	h      http.Header
	status int
}

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) WriteHeader(status int)      { w.status = status }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
