package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/internal/logtest"
)

// TestRefusedCallsAreLoggedOnce: a tools/call refused before its operation
// ran (arguments that are not an object, a path argument of the wrong
// type or missing, an unknown argument, an unknown tool, a header that
// disagrees with the body) writes exactly one line of the log at info, the
// access log's, as a call the REST handler serves does: the caller, the
// tool's name as operation, the refusal's code and status, the arguments
// redacted as the access log writes them (left out when not an object),
// the latency, the request id, the run id and the trace id; on the direct
// path and through the SDK alike, in both revisions. Free text never
// reaches the log.
func TestRefusedCallsAreLoggedOnce(t *testing.T) {
	const key = "sk-refused-agent-4Rt9"
	lines := &logtest.Lines{}
	logger := lines.Logger()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newStack(t, func(o *api.Options) {
		o.Logger = logger
		o.Tracer = tp.Tracer("test")
		o.Credentials = []api.Credential{{Name: "ap-agent", KeySHA256: sha256.Sum256([]byte(key)), Scopes: []string{api.ScopeRead, api.ScopeWrite}}}
	})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	v7meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`
	type want struct {
		operation, code string
		status          float64
		args            map[string]string // "" for a value that must be redacted
	}
	cases := []struct {
		name, tool, args string
		header           map[string]string
		want             want
	}{
		{"path argument of the wrong type", "get_invoice", `{"invoice_id":true,"run_id":"run-r1"}`, nil,
			want{"get_invoice", "INVALID_REQUEST", 400, map[string]string{"invoice_id": "true", "run_id": "run-r1"}}},
		{"path argument missing", "get_supplier", `{}`, nil, want{"get_supplier", "INVALID_REQUEST", 400, nil}},
		{"unknown argument with free text", "get_invoice", `{"invoice_id":"5105600101","note":"Jane Roe called"}`, nil,
			want{"get_invoice", "INVALID_REQUEST", 400, map[string]string{"invoice_id": "5105600101", "note": ""}}},
		{"arguments not an object", "get_invoice", `["Jane Roe"]`, nil, want{"get_invoice", "INVALID_REQUEST", 400, nil}},
		{"unknown tool", "delete_invoice", `{"invoice_id":"5105600101"}`, nil,
			want{"delete_invoice", "INVALID_REQUEST", 400, map[string]string{"invoice_id": "5105600101"}}},
		{"unknown tool named in prose", "Jane Roe's invoices", `{}`, nil, want{"", "INVALID_REQUEST", 400, nil}},
		{"header unlike the body", "get_invoice", `{"invoice_id":"5105600101","run_id":"run-r2"}`, map[string]string{"Mcp-Param-Run-Id": "run-other"},
			want{"get_invoice", "INVALID_REQUEST", 400, map[string]string{"invoice_id": "5105600101", "run_id": "run-r2"}}},
	}
	for _, version := range []string{"2025-06-18", "2026-07-28"} {
		for _, sdkOnly := range []bool{false, true} {
			for i, c := range cases {
				if c.header != nil && version != "2026-07-28" {
					continue // earlier revisions have no such headers
				}
				path := "direct path"
				if sdkOnly {
					path = "SDK"
				}
				t.Run(fmt.Sprintf("%s/%s/%s", version, path, c.name), func(t *testing.T) {
					s.mcp.SetSDKOnly(sdkOnly)
					meta := ""
					header := map[string]string{"X-API-Key": key, "X-Request-Id": fmt.Sprintf("req-refused-%d", i)}
					if version == "2026-07-28" {
						meta = v7meta
						header["Mcp-Method"], header["Mcp-Name"] = "tools/call", c.tool
					}
					for k, v := range c.header {
						header[k] = v
					}
					name, _ := json.Marshal(c.tool)
					body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{%s"traceparent":"00-%s-00f067aa0ba902b7-01"},"name":%s,"arguments":%s}}`,
						i+1, meta, traceID, name, c.args)
					answer := post(t, s.url, version, body, header)
					if !strings.Contains(answer, "INVALID_REQUEST") {
						t.Fatalf("not refused:\n%s", answer)
					}
					l, text := lines.Take(t)
					if len(l) != 1 {
						t.Fatalf("%d log lines, want exactly one:\n%s", len(l), text)
					}
					if strings.Contains(text, "Jane") {
						t.Errorf("free text of the call is in the log:\n%s", text)
					}
					e := l[0]
					for k, v := range map[string]any{"level": "INFO", "msg": "request", "client": "ap-agent", "code": c.want.code,
						"status": c.want.status, "request_id": fmt.Sprintf("req-refused-%d", i), "trace_id": traceID, "method": "POST", "path": "/mcp"} {
						if e[k] != v {
							t.Errorf("%s is %v, want %v: %v", k, e[k], v, e)
						}
					}
					if _, ok := e["duration_ms"].(float64); !ok {
						t.Errorf("no duration_ms: %v", e)
					}
					op, _ := e["operation"].(string)
					if c.want.operation != "" && op != c.want.operation || c.want.operation == "" && !strings.HasPrefix(op, "len=19 hash=") {
						t.Errorf("operation %q, want %q (or the name redacted)", op, c.want.operation)
					}
					if run := c.header["Mcp-Param-Run-Id"]; run != "" && e["run_id"] != run {
						t.Errorf("run_id %v, want %s", e["run_id"], run)
					}
					got, _ := e["args"].(map[string]any)
					if len(got) != len(c.want.args) {
						t.Errorf("args %v, want %v", got, c.want.args)
					}
					for k, v := range c.want.args {
						g, _ := got[k].(string)
						if v == "" && !strings.HasPrefix(g, "len=") || v != "" && g != v {
							t.Errorf("args.%s is %q, want %q (\"\": redacted)", k, g, v)
						}
					}
				})
			}
		}
	}

	// A call the REST handler serves still has its one line, its own.
	for _, sdkOnly := range []bool{false, true} {
		s.mcp.SetSDKOnly(sdkOnly)
		answer := post(t, s.url, "2025-06-18", `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600999"}}}`,
			map[string]string{"X-API-Key": key})
		if !strings.Contains(answer, "INVOICE_NOT_FOUND") {
			t.Fatalf("get_invoice of an unknown invoice:\n%s", answer)
		}
		l, text := lines.Take(t)
		if len(l) != 1 || l[0]["code"] != "INVOICE_NOT_FOUND" || l[0]["path"] != "/invoices/5105600999" || l[0]["client"] != "ap-agent" {
			t.Errorf("SDK only %v: want the REST handler's one line:\n%s", sdkOnly, text)
		}
	}
}
