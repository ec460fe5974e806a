package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/cmd/internal/telemetry/otlptest"
	"github.com/erpgate/erpgate/erp/sim"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// erpRecorder is the simulated ERP behind a server that keeps the headers
// of every request it gets.
type erpRecorder struct {
	mu  sync.Mutex
	got []http.Header
}

func startRecordedERP(t *testing.T) (*erpRecorder, string) {
	t.Helper()
	rec := &erpRecorder{}
	simulator := sim.New(sim.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.got = append(rec.got, r.Header.Clone())
		rec.mu.Unlock()
		simulator.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

// of returns the headers of the requests whose traceparent is of trace.
func (e *erpRecorder) of(trace string) []http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []http.Header
	for _, h := range e.got {
		if strings.HasPrefix(h.Get("Traceparent"), "00-"+trace+"-") {
			out = append(out, h)
		}
	}
	return out
}

func (e *erpRecorder) all() []http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]http.Header(nil), e.got...)
}

// tracedGateway runs the gateway with env in front of erpURL, with the
// API key agentKey of the client "ap-agent", and returns its URL and a
// stop that shuts it down (flushing its spans) and returns its log.
func tracedGateway(t *testing.T, env map[string]string, erpURL string) (string, func() string) {
	t.Helper()
	sum := sha256.Sum256([]byte(traceAgentKey))
	args := []string{"-addr", "127.0.0.1:0", "-erp-url", erpURL, "-erp-user", "gateway", "-erp-password", "gw-secret",
		"-log-format", "json", "-data-dir", t.TempDir(), "-api-keys", "ap-agent:" + hex.EncodeToString(sum[:]) + ":read+write"}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, pw, logs)
		pw.Close()
	}()
	line := make([]byte, 0, 256)
	buf := make([]byte, 1)
	for {
		if _, err := pr.Read(buf); err != nil {
			cancel()
			t.Fatalf("the gateway did not start: %v (%s)", err, <-done)
		}
		if buf[0] == '\n' {
			break
		}
		line = append(line, buf[0])
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(string(line))
	if m == nil {
		cancel()
		t.Fatalf("start line %q does not say where it listens", line)
	}
	stopped := false
	stop := func() string {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(25 * time.Second):
				t.Fatal("the gateway did not shut down")
			}
		}
		return logs.String()
	}
	t.Cleanup(func() { stop() })
	return m[1], stop
}

const traceAgentKey = "agent-key-for-traces-0001"

// A trace context of the caller's: 00-<trace id>-<parent id>-01.
func traceparent(trace, parent string) string { return "00-" + trace + "-" + parent + "-01" }

func restCall(t *testing.T, base, path, tp string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+traceAgentKey)
	req.Header.Set("Traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mcpCall sends one tools/call of get_invoice, its trace context in
// params._meta: in 2026-07-28, which the direct path answers, or in
// 2025-06-18 with a member of the protocol's own in _meta, which sends it
// to the SDK (the direct path leaves such a _meta of an earlier revision
// to the SDK; the SDK takes this one as it takes any other).
func mcpCall(t *testing.T, base, protocol, invoice, tp string, id int) string {
	t.Helper()
	meta := fmt.Sprintf(`{"io.modelcontextprotocol/logLevel":"info","traceparent":%q}`, tp)
	if protocol == "2026-07-28" {
		meta = fmt.Sprintf(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":%q}`, tp)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":%s,"name":"get_invoice","arguments":{"invoice_id":%q}}}`,
		id, meta, invoice)
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", protocol)
	req.Header.Set("X-API-Key", traceAgentKey)
	if protocol == "2026-07-28" {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "get_invoice")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/call in %s: %d %s", protocol, resp.StatusCode, b)
	}
	return string(b)
}

// spansOf returns the spans of trace.
func spansOf(spans []otlptest.Span, trace string) []otlptest.Span {
	var out []otlptest.Span
	for _, s := range spans {
		if s.TraceID == trace {
			out = append(out, s)
		}
	}
	return out
}

// checkTree checks the spans of one call: one server span named name, the
// child of the caller's parent, with want among its attributes; ERP
// attempt spans its children, each the parent of the ERP request that
// carried the trace. It returns the server span.
func checkTree(t *testing.T, what string, spans []otlptest.Span, erpGot []http.Header, trace, parent, name string, want map[string]string) otlptest.Span {
	t.Helper()
	var server *otlptest.Span
	for i, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			if server != nil {
				t.Errorf("%s: two server spans, %q and %q", what, server.Name, s.Name)
			}
			server = &spans[i]
		}
	}
	if server == nil {
		t.Fatalf("%s: no server span among %+v", what, spans)
	}
	if server.Name != name || server.ParentSpanID != parent || server.Service != "erpgate-test" {
		t.Errorf("%s: server span %q, parent %s, service %q; want %q, the caller's %s, erpgate-test", what, server.Name, server.ParentSpanID, server.Service, name, parent)
	}
	for k, v := range want {
		if server.Attrs[k] != v {
			t.Errorf("%s: server span's %s is %q, want %q (all: %v)", what, k, server.Attrs[k], v, server.Attrs)
		}
	}
	attempts := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT && s.Attrs["erpgate.erp.attempt"] != "" {
			if s.ParentSpanID != server.SpanID {
				t.Errorf("%s: ERP attempt %q is the child of %s, not of the server span %s", what, s.Name, s.ParentSpanID, server.SpanID)
			}
			attempts[s.SpanID] = s
		}
	}
	if len(attempts) == 0 {
		t.Fatalf("%s: no ERP attempt span among %+v", what, spans)
	}
	if len(erpGot) != len(attempts) {
		t.Errorf("%s: %d ERP requests carried the trace, %d attempt spans", what, len(erpGot), len(attempts))
	}
	for _, h := range erpGot {
		tp := h.Get("Traceparent")
		parentID := strings.Split(tp, "-")[2]
		a, ok := attempts[parentID]
		if !ok {
			t.Errorf("%s: the ERP got traceparent %s, whose parent is no attempt span", what, tp)
			continue
		}
		if a.Attrs["erpgate.erp.attempt"] != "1" || a.Attrs["erpgate.erp.breaker_state"] != "closed" ||
			a.Attrs["erpgate.sap.service"] == "" || a.Attrs["http.response.status_code"] == "" {
			t.Errorf("%s: attempt span %q has %v", what, a.Name, a.Attrs)
		}
	}
	return *server
}

// TestTracesFromTheCallerIntoTheERP: with OTEL_EXPORTER_OTLP_ENDPOINT
// set, a REST call with a traceparent and an MCP tools/call with one in
// params._meta (on the direct path and through the SDK) make a server span
// that is the child of the caller's, with ERP attempt spans below it; every
// ERP request they cause carries a traceparent of the same trace, whose
// parent is its attempt's span, and names the caller, never with the
// caller's credentials; a failing call's span names its code; the log
// lines name the trace.
func TestTracesFromTheCallerIntoTheERP(t *testing.T) {
	receiver := otlptest.New()
	t.Cleanup(receiver.Close)
	erpGot, erpURL := startRecordedERP(t)
	base, stop := tracedGateway(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.URL(),
		"OTEL_SERVICE_NAME":           "erpgate-test",
	}, erpURL)

	const (
		restTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		directTr   = "5bf92f3577b34da6a3ce929d0e0e4737"
		sdkTrace   = "6bf92f3577b34da6a3ce929d0e0e4738"
		failTrace  = "7bf92f3577b34da6a3ce929d0e0e4739"
		restFail   = "8bf92f3577b34da6a3ce929d0e0e4730"
		callerSpan = "00f067aa0ba902b7"
	)
	if code, body := restCall(t, base, "/invoices/5105600101", traceparent(restTrace, callerSpan)); code != http.StatusOK {
		t.Fatalf("get_invoice: %d %s", code, body)
	}
	if body := mcpCall(t, base, "2026-07-28", "5105600101", traceparent(directTr, callerSpan), 41); !strings.Contains(body, `"structuredContent"`) {
		t.Fatalf("tools/call in 2026-07-28: %s", body)
	}
	if body := mcpCall(t, base, "2025-06-18", "5105600101", traceparent(sdkTrace, callerSpan), 42); !strings.Contains(body, `"structuredContent"`) {
		t.Fatalf("tools/call in 2025-06-18: %s", body)
	}
	if body := mcpCall(t, base, "2026-07-28", "5105600999", traceparent(failTrace, callerSpan), 43); !strings.Contains(body, `"isError":true`) ||
		!strings.Contains(body, `INVOICE_NOT_FOUND`) {
		t.Fatalf("tools/call of an unknown invoice: %s", body)
	}
	if code, body := restCall(t, base, "/invoices/5105600999", traceparent(restFail, callerSpan)); code != http.StatusNotFound {
		t.Fatalf("get_invoice of an unknown invoice: %d %s", code, body)
	}
	logs := stop()
	spans := receiver.Spans()
	t.Logf("%d spans from %d exports; %d ERP requests", len(spans), receiver.Exports(), len(erpGot.all()))

	rest := checkTree(t, "REST", spansOf(spans, restTrace), erpGot.of(restTrace), restTrace, callerSpan, "get_invoice", map[string]string{
		"http.request.method": "GET", "http.route": "/invoices/{invoice_id}", "http.response.status_code": "200",
		"erpgate.invoice_id": "5105600101", "erpgate.client": "ap-agent"})
	if _, ok := rest.Attrs["erpgate.code"]; ok {
		t.Errorf("REST: a success has erpgate.code %q", rest.Attrs["erpgate.code"])
	}
	mcpWant := map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_invoice",
		"erpgate.invoice_id": "5105600101", "erpgate.client": "ap-agent", "erpgate.operation": "get_invoice"}
	direct := checkTree(t, "MCP direct", spansOf(spans, directTr), erpGot.of(directTr), directTr, callerSpan, "tools/call get_invoice", mcpWant)
	if direct.Attrs["jsonrpc.request.id"] != "41" || direct.Attrs["mcp.protocol.version"] != "2026-07-28" {
		t.Errorf("MCP direct: %v", direct.Attrs)
	}
	viaSDK := checkTree(t, "MCP through the SDK", spansOf(spans, sdkTrace), erpGot.of(sdkTrace), sdkTrace, callerSpan, "tools/call get_invoice", mcpWant)
	if viaSDK.Attrs["jsonrpc.request.id"] != "42" || viaSDK.Attrs["mcp.protocol.version"] != "2025-06-18" {
		t.Errorf("MCP through the SDK: %v", viaSDK.Attrs)
	}
	failed := checkTree(t, "MCP not found", spansOf(spans, failTrace), erpGot.of(failTrace), failTrace, callerSpan, "tools/call get_invoice",
		map[string]string{"erpgate.code": "INVOICE_NOT_FOUND", "error.type": "tool_error"})
	if !failed.Error {
		t.Error("MCP not found: the span's status is not an error")
	}
	checkTree(t, "REST not found", spansOf(spans, restFail), erpGot.of(restFail), restFail, callerSpan, "get_invoice",
		map[string]string{"erpgate.code": "INVOICE_NOT_FOUND", "error.type": "INVOICE_NOT_FOUND", "http.response.status_code": "404"})

	// Every request to the ERP names the caller and carries the gateway's
	// own credentials, never the caller's.
	gatewayAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("gateway:gw-secret"))
	for _, h := range erpGot.all() {
		if got := h.Get("Authorization"); got != gatewayAuth {
			t.Errorf("the ERP got Authorization %q, want the gateway's own", got)
		}
		if h.Get("X-Api-Key") != "" {
			t.Error("the ERP got the caller's X-API-Key")
		}
		for k, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, traceAgentKey) {
					t.Errorf("the ERP got the caller's key in %s", k)
				}
			}
		}
		if h.Get("Traceparent") != "" && h.Get("X-Erpgate-Caller") != `key="ap-agent"` {
			t.Errorf("the ERP got X-Erpgate-Caller %q for a call of ap-agent", h.Get("X-Erpgate-Caller"))
		}
	}
	// The access log's line of the REST call names its trace and span.
	line := regexp.MustCompile(`(?m)^.*"msg":"request".*"path":"/invoices/5105600101".*$`).FindString(logs)
	if !strings.Contains(line, `"trace_id":"`+restTrace+`"`) || !strings.Contains(line, `"span_id":"`+rest.SpanID+`"`) {
		t.Errorf("the access log's line of the REST call does not name its trace and span: %s", line)
	}
}

// TestTraceContextPassedOnWithTracingOff: without OTEL_* variables no
// span is made, and an ERP request carries the caller's traceparent as it
// came (the gateway takes no part in the trace), and none when the call
// brought none.
func TestTraceContextPassedOnWithTracingOff(t *testing.T) {
	erpGot, erpURL := startRecordedERP(t)
	base, stop := tracedGateway(t, nil, erpURL)
	const trace, parent = "9bf92f3577b34da6a3ce929d0e0e4731", "00f067aa0ba902b7"
	if code, body := restCall(t, base, "/invoices/5105600101", traceparent(trace, parent)); code != http.StatusOK {
		t.Fatalf("get_invoice: %d %s", code, body)
	}
	got := erpGot.of(trace)
	if len(got) == 0 {
		t.Fatal("no ERP request carried the caller's trace")
	}
	for _, h := range got {
		if h.Get("Traceparent") != traceparent(trace, parent) || h.Get("X-Erpgate-Caller") != `key="ap-agent"` {
			t.Errorf("the ERP got traceparent %q and caller %q", h.Get("Traceparent"), h.Get("X-Erpgate-Caller"))
		}
	}
	before := len(erpGot.all())
	req, _ := http.NewRequest(http.MethodGet, base+"/invoices/5105600102", nil)
	req.Header.Set("X-API-Key", traceAgentKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, h := range erpGot.all()[before:] {
		if tp := h.Get("Traceparent"); tp != "" {
			t.Errorf("a call without a traceparent reached the ERP with %q", tp)
		}
	}
	if logs := stop(); !strings.Contains(logs, `"trace_id":"`+trace+`"`) {
		t.Error("no log line names the caller's trace")
	}
}
