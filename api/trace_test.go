package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/erpgate/erpgate/api"
)

// TestOperationSpanAndExemplar: with a tracer, a call is a server span
// named by its operationId, the child of the caller's traceparent, with
// the code of its error; its latency's exemplar names the trace in the
// OpenMetrics exposition, and not in the Prometheus text one.
func TestOperationSpanAndExemplar(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	metrics := api.NewMetrics()
	srv, err := api.NewServer(api.Options{ERP: fixedERP{inv: benchInvoice()}, Records: testRecords(t), Metrics: metrics,
		Tracer: tp.Tracer("test")})
	if err != nil {
		t.Fatal(err)
	}
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, path := range []string{"/invoices/5105600101", "/invoices/5105600999"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Traceparent", "00-"+traceID+"-"+parent+"-01")
		srv.ServeHTTP(httptest.NewRecorder(), req)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for i, want := range []struct{ code, status string }{{"", "200"}, {"INVOICE_NOT_FOUND", "404"}} {
		s := spans[i]
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		if s.Name() != "get_invoice" || s.SpanKind() != trace.SpanKindServer || s.Parent().SpanID().String() != parent ||
			s.SpanContext().TraceID().String() != traceID || !s.Parent().IsRemote() {
			t.Errorf("span %d: %q kind %v parent %v", i, s.Name(), s.SpanKind(), s.Parent())
		}
		if attrs["erpgate.code"] != want.code || attrs["http.response.status_code"] != want.status ||
			attrs["http.route"] != "/invoices/{invoice_id}" || attrs["erpgate.client"] != "anonymous" {
			t.Errorf("span %d: attributes %v", i, attrs)
		}
	}

	get := func(accept string) string {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		b, _ := io.ReadAll(w.Body)
		return string(b)
	}
	om := get("application/openmetrics-text; version=1.0.0")
	if !strings.Contains(om, `erpgate_request_duration_seconds_bucket{operation="get_invoice"`) || !strings.Contains(om, `# {trace_id="`+traceID+`"}`) {
		t.Errorf("the OpenMetrics exposition has no exemplar of trace %s", traceID)
	}
	if text := get(""); strings.Contains(text, "trace_id") {
		t.Error("the Prometheus text exposition has an exemplar")
	}
}

// TestTokenCallerReachesTheERPByName: a call with an access token reaches
// the ERP with the gateway's own credentials and the token's client and
// subject in X-Erpgate-Caller, and a call with an API key with the key's
// name: never with the caller's token or key.
func TestTokenCallerReachesTheERPByName(t *testing.T) {
	iss := newTestIssuer(t)
	o := newOAuthStack(t, iss)
	token := iss.sign(t, iss.claims("ap-bot", "read"), nil)
	for _, c := range []struct {
		header, value, caller string
	}{
		{"Authorization", "Bearer " + token, `client="ap-bot", sub="user-ap-bot"`},
		{"X-API-Key", oauthAPIKey, `key="key-agent"`},
	} {
		o.mu.Lock()
		o.erpAuth, o.erpCaller = nil, nil
		o.mu.Unlock()
		req, _ := http.NewRequest(http.MethodGet, o.gw.URL+"/invoices/5105600101", nil)
		req.Header.Set(c.header, c.value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", c.header, resp.StatusCode)
		}
		o.mu.Lock()
		if len(o.erpAuth) == 0 {
			t.Errorf("%s: no request reached the ERP", c.header)
		}
		for i, auth := range o.erpAuth {
			if !strings.HasPrefix(auth, "Basic ") || strings.Contains(auth, token) || strings.Contains(auth, oauthAPIKey) {
				t.Errorf("%s: the ERP got Authorization %q, want the gateway's own", c.header, auth)
			}
			if o.erpCaller[i] != c.caller {
				t.Errorf("%s: the ERP got X-Erpgate-Caller %q, want %q", c.header, o.erpCaller[i], c.caller)
			}
		}
		o.mu.Unlock()
	}
}
