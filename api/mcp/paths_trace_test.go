package mcp_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/erpgate/erpgate/api"
)

// TestBothPathsTraceACallAlike sends the same tools/call, its trace context
// in params._meta, once through the SDK (SetSDKOnly) and once on the direct
// path, in each revision, and wants the same span: its name, kind, parent,
// attributes and status, and the same answer.
func TestBothPathsTraceACallAlike(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newStack(t, func(o *api.Options) { o.Tracer = tp.Tracer("test") })
	const parent = "00f067aa0ba902b7"
	v7meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`
	for i, c := range []struct {
		version, meta, invoice string
		header                 map[string]string
	}{
		{"2025-06-18", "", "5105600101", nil},
		{"2025-06-18", `"progressToken":"p-1",`, "5105600999", nil},
		{"2025-11-25", "", "<b>", nil},
		{"2026-07-28", v7meta, "5105600101", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice"}},
		{"2026-07-28", v7meta, "5105600999", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice"}},
	} {
		t.Run(fmt.Sprintf("%s %s", c.version, c.invoice), func(t *testing.T) {
			var spans [2]map[string]string
			var answers [2]string
			for j, sdkOnly := range []bool{true, false} {
				s.mcp.SetSDKOnly(sdkOnly)
				traceID := fmt.Sprintf("4bf92f3577b34da6a3ce929d0e0e%02d%02d", i, j)
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{%s"traceparent":"00-%s-%s-01"},"name":"get_invoice","arguments":{"invoice_id":%q}}}`,
					70+i, c.meta, traceID, parent, c.invoice)
				before := s.mcp.DirectAnswers()
				answers[j] = post(t, s.url, c.version, body, c.header)
				if direct := s.mcp.DirectAnswers() > before; direct == sdkOnly {
					t.Fatalf("answered by the direct path: %v, with the SDK only: %v", direct, sdkOnly)
				}
				var of []sdktrace.ReadOnlySpan
				for _, sp := range rec.Ended() {
					if sp.SpanContext().TraceID().String() == traceID && sp.Name() == "tools/call get_invoice" {
						of = append(of, sp)
					}
				}
				if len(of) != 1 {
					t.Fatalf("%d spans tools/call get_invoice in trace %s, want 1", len(of), traceID)
				}
				sp := of[0]
				got := map[string]string{"kind": sp.SpanKind().String(), "parent": sp.Parent().SpanID().String(),
					"status": sp.Status().Code.String() + " " + sp.Status().Description}
				for _, a := range sp.Attributes() {
					got[string(a.Key)] = a.Value.Emit()
				}
				spans[j] = got
			}
			if answers[0] != answers[1] {
				t.Errorf("the SDK answered\n%s\nthe direct path\n%s", answers[0], answers[1])
			}
			if !maps.Equal(spans[0], spans[1]) {
				t.Errorf("through the SDK the span is\n%v\non the direct path\n%v", spans[0], spans[1])
			}
			if spans[1]["parent"] != parent || spans[1]["gen_ai.tool.name"] != "get_invoice" || spans[1]["mcp.protocol.version"] != c.version {
				t.Errorf("span %v: want the caller's span as parent, the tool's name and the protocol version", spans[1])
			}
		})
	}
}
