package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/internal/logtest"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// accessLogKey is the API key of the access log's tests.
const accessLogKey = "sk-access-log-agent-7Hq2"

// loggedGateway is the gateway with its MCP endpoint, over the simulated
// ERP through the SAP client, tracing on, and every line of its log (the
// REST side's and the MCP endpoint's) in lines.
func loggedGateway(t *testing.T) (*httptest.Server, *logtest.Lines) {
	t.Helper()
	simSrv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(simSrv.Close)
	metrics := api.NewMetrics()
	runner := retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond}, metrics)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	lines := &logtest.Lines{}
	logger := lines.Logger()
	store, _ := recordstest.SQLite(t)
	srv, err := api.NewServer(api.Options{ERP: client, Records: store, Metrics: metrics, Logger: logger, Tracer: tp.Tracer("test"),
		Credentials: []api.Credential{credential(t, "ap-agent", accessLogKey, "read", "write")}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := mcp.New(srv, doc, mcp.Options{Allowed: srv.Allows, Logger: logger, Tracer: tp.Tracer("test")})
	if err != nil {
		t.Fatal(err)
	}
	srv.MountMCP(srv.RequireCredentials(m.Handler()))
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts, lines
}

// send makes one call of the gateway and returns its status and body.
func send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	req.Header.Set("X-API-Key", accessLogKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// oneEntry returns the one line of lines, failing unless there is exactly
// one: an invocation is one entry of the log.
func oneEntry(t *testing.T, what string, lines []map[string]any, text string) map[string]any {
	t.Helper()
	if len(lines) != 1 {
		t.Fatalf("%s: %d log lines, want exactly one:\n%s", what, len(lines), text)
	}
	return lines[0]
}

// TestAccessLogOneEntryPerInvocation: a REST call and an MCP tools/call
// (on the direct path and on the SDK's) each write exactly one line of
// the log, with the caller, the operation, the arguments (ids as they
// are), the ERP's services and entity sets called, the status, the code,
// the latency, the run id, the request id and the trace id.
func TestAccessLogOneEntryPerInvocation(t *testing.T) {
	ts, lines := loggedGateway(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	tp := "00-" + traceID + "-00f067aa0ba902b7-01"
	check := func(what string, e map[string]any, run string, status float64, code string) {
		t.Helper()
		args, _ := e["args"].(map[string]any)
		for k, want := range map[string]any{"msg": "request", "client": "ap-agent", "operation": "get_invoice",
			"status": status, "run_id": run, "trace_id": traceID} {
			if e[k] != want {
				t.Errorf("%s: %s is %v, want %v: %v", what, k, e[k], want, e)
			}
		}
		if code != "" && e["code"] != code {
			t.Errorf("%s: code %v, want %s", what, e["code"], code)
		}
		if args["invoice_id"] == nil || e["request_id"] == "" || e["duration_ms"] == nil {
			t.Errorf("%s: no invoice_id, request_id or duration_ms: %v", what, e)
		}
		if e["erp_calls"] != "API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice" {
			t.Errorf("%s: erp_calls %q, want the supplier invoice's entity set", what, e["erp_calls"])
		}
	}

	for _, c := range []struct {
		id     string
		status float64
		code   string
	}{{"5105600101", 200, ""}, {"5105600999", 404, "INVOICE_NOT_FOUND"}} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/invoices/"+c.id, nil)
		req.Header.Set("Traceparent", tp)
		req.Header.Set("X-Run-Id", "run-rest-"+c.id)
		if status, body := send(t, req); status != int(c.status) {
			t.Fatalf("REST %s: %d %s", c.id, status, body)
		}
		l, text := lines.Take(t)
		e := oneEntry(t, "REST "+c.id, l, text)
		check("REST "+c.id, e, "run-rest-"+c.id, c.status, c.code)
		if args := e["args"].(map[string]any); args["invoice_id"] != c.id {
			t.Errorf("REST: args %v, want the invoice id as it is", args)
		}
	}

	for i, protocol := range []string{"2026-07-28", "2025-06-18"} {
		meta := fmt.Sprintf(`{"traceparent":%q}`, tp)
		if protocol == "2026-07-28" {
			meta = fmt.Sprintf(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":%q}`, tp)
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":%s,"name":"get_invoice","arguments":{"invoice_id":"5105600101","run_id":"run-mcp-%d"}}}`, i+1, meta, i)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", protocol)
		req.Header.Set("X-Run-Id", fmt.Sprintf("run-mcp-%d", i))
		if protocol == "2026-07-28" {
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "get_invoice")
		}
		if status, body := send(t, req); status != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Fatalf("MCP %s: %d %s", protocol, status, body)
		}
		l, text := lines.Take(t)
		check("MCP "+protocol, oneEntry(t, "MCP "+protocol, l, text), fmt.Sprintf("run-mcp-%d", i), 200, "")
	}
}

// TestAccessLogRedactsPersonalData: the free text of a call's arguments
// (a justification, a supplier search's name) never reaches the log, only
// its length and a hash, the same for the same text; the ids do, as they
// are.
func TestAccessLogRedactsPersonalData(t *testing.T) {
	ts, lines := loggedGateway(t)
	const secret = "Jane Roe (jane.roe@example.com) confirmed the surcharge by phone"
	approval := func() map[string]any {
		t.Helper()
		body := fmt.Sprintf(`{"proposed_action":"accept_variance","justification":%q,"run_id":"run-log-2"}`, secret)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/invoices/5105600102/approvals", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "key-log-2")
		status, answer := send(t, req)
		if status >= 500 {
			t.Fatalf("request_approval: %d %s", status, answer)
		}
		l, text := lines.Take(t)
		if strings.Contains(text, "Jane") || strings.Contains(text, "example.com") {
			t.Fatalf("the justification's text is in the log:\n%s", text)
		}
		e := oneEntry(t, "request_approval", l, text)
		if e["operation"] != "request_approval" {
			t.Fatalf("operation %v", e["operation"])
		}
		return e["args"].(map[string]any)
	}
	args := approval()
	want := fmt.Sprintf("len=%d hash=", len([]rune(secret)))
	j, _ := args["justification"].(string)
	if !strings.HasPrefix(j, want) || len(j) != len(want)+12 {
		t.Errorf("justification logged as %q, want %q and 12 hex digits", j, want)
	}
	if args["invoice_id"] != "5105600102" || args["proposed_action"] != "accept_variance" || args["run_id"] != "run-log-2" {
		t.Errorf("the ids and the enumeration are not logged as they are: %v", args)
	}
	if again := approval(); again["justification"] != j {
		t.Errorf("the same text hashed as %v, then as %v", j, again["justification"])
	}

	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/suppliers?name=Roe%20Jane&limit=5", nil)
	if status, body := send(t, req); status != http.StatusOK {
		t.Fatalf("search_suppliers: %d %s", status, body)
	}
	l, text := lines.Take(t)
	if strings.Contains(text, "Roe") {
		t.Fatalf("the searched name is in the log:\n%s", text)
	}
	e := oneEntry(t, "search_suppliers", l, text)
	if a := e["args"].(map[string]any); a["limit"] != "5" || !strings.HasPrefix(fmt.Sprint(a["name"]), "len=8 hash=") {
		t.Errorf("search_suppliers logged args %v, want limit as it is and name redacted", a)
	}
	if e["erp_calls"] != "API_BUSINESS_PARTNER/A_BusinessPartner" {
		t.Errorf("search_suppliers: erp_calls %v", e["erp_calls"])
	}

	// An id argument that holds prose is not echoed either, in the
	// arguments or in the path.
	req, _ = http.NewRequest(http.MethodGet, ts.URL+"/approvals/Jane%20Roe", nil)
	if status, body := send(t, req); status != http.StatusBadRequest {
		t.Fatalf("get_approval of prose: %d %s", status, body)
	}
	l, text = lines.Take(t)
	if strings.Contains(text, "Jane") {
		t.Errorf("an id argument's prose is in the log:\n%s", text)
	}
	if e := oneEntry(t, "get_approval", l, text); e["path"] != "/approvals/{approval_id}" {
		t.Errorf("path %v, want the route's pattern", e["path"])
	}
}

// TestAccessLogListsTheERPCalls: the line of a three-way match lists the
// services and entity sets it read (the invoice, the purchase order, its
// goods receipts, the supplier), each once.
func TestAccessLogListsTheERPCalls(t *testing.T) {
	ts, lines := loggedGateway(t)
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/invoices/5105600101/three-way-match", nil)
	if status, body := send(t, req); status != http.StatusOK {
		t.Fatalf("three-way match: %d %s", status, body)
	}
	l, text := lines.Take(t)
	e := oneEntry(t, "three-way match", l, text)
	called := strings.Split(fmt.Sprint(e["erp_calls"]), ",")
	t.Logf("erp_calls: %v", called)
	seen := map[string]bool{}
	for _, c := range called {
		if seen[c] {
			t.Errorf("%s listed twice: %v", c, called)
		}
		seen[c] = true
	}
	for _, want := range []string{"API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice", "API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder",
		"API_MATERIAL_DOCUMENT_SRV/A_MaterialDocumentItem", "API_BUSINESS_PARTNER/A_BusinessPartner"} {
		if !seen[want] {
			t.Errorf("erp_calls %v lacks %s", called, want)
		}
	}
}
