package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// stack is the gateway over real HTTP with its MCP endpoint beside the REST
// routes: MCP client → /mcp → api → erp/sap → erp/sim.
type stack struct {
	t   testing.TB
	url string
	doc *openapi3.T
	mcp *mcp.Server
}

func newStack(t testing.TB, opts ...func(*api.Options)) *stack {
	t.Helper()
	return newStackAround(t, nil, opts...)
}

// newStackAround is newStack with the REST handler the MCP endpoint calls
// wrapped by around (when not nil).
func newStackAround(t testing.TB, around func(http.Handler) http.Handler, opts ...func(*api.Options)) *stack {
	t.Helper()
	simSrv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(simSrv.Close)
	o := api.Options{Metrics: api.NewMetrics()}
	for _, f := range opts {
		f(&o)
	}
	runner := retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		Tracer: o.Tracer}, o.Metrics)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	o.ERP = client
	if o.Records == nil {
		o.Records, _ = recordstest.SQLite(t)
	}
	rest, err := api.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	var inner http.Handler = rest
	if around != nil {
		inner = around(rest)
	}
	// The endpoint logs and traces where the REST handler does, as in the
	// gateway.
	m, err := mcp.New(inner, doc, mcp.Options{Allowed: rest.Allows, Logger: o.Logger, Tracer: o.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", m.Handler())
	mux.Handle("/", rest)
	gw := httptest.NewServer(mux)
	t.Cleanup(gw.Close)
	return &stack{t: t, url: gw.URL, doc: doc, mcp: m}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	header http.Header
	base   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// connect opens an MCP session over Streamable HTTP, sending headers
// ("Name: value") on every HTTP request.
func (s *stack) connect(headers ...string) *sdk.ClientSession {
	s.t.Helper()
	h := http.Header{}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, ":")
		h.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:   s.url + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{header: h, base: http.DefaultTransport}},
	}, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cs.Close() })
	// Like a real client, list the tools before calling one: the client
	// mirrors x-mcp-header arguments (run_id) into Mcp-Param-* headers
	// only for tools it knows, and the server refuses a call that carries
	// the argument without its header.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		s.t.Fatal(err)
	}
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// rest makes the same call over REST and returns the status and body.
func (s *stack) rest(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// text is the one text block of a result.
func text(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("got %d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// object decodes the JSON object of a result's text.
func object(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &m); err != nil {
		t.Fatalf("text is not a JSON object: %v\n%s", err, text(t, res))
	}
	return m
}

func TestToolsMatchTheContract(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	ops := 0
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Extensions["x-erpgate-audience"] == "people" {
				if _, ok := tools[op.OperationID]; ok {
					t.Errorf("%s %s: %s is an operation of people, not a tool", method, path, op.OperationID)
				}
				continue
			}
			ops++
			tl, ok := tools[op.OperationID]
			if !ok {
				t.Errorf("%s %s: no tool %s", method, path, op.OperationID)
				continue
			}
			if !strings.Contains(tl.Description, op.Summary) || !strings.Contains(tl.Description, strings.TrimSpace(op.Description)) {
				t.Errorf("%s: description %q lacks the summary or the description", op.OperationID, tl.Description)
			}
			checkSchema(t, method, op, tl)
		}
	}
	if len(res.Tools) != ops {
		t.Errorf("got %d tools, want one per operation for agents (%d)", len(res.Tools), ops)
	}
}

// checkSchema compares a tool's input schema with the operation's path and
// query parameters and body fields.
func checkSchema(t *testing.T, method string, op *openapi3.Operation, tl *sdk.Tool) {
	t.Helper()
	schema, _ := tl.InputSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if schema["type"] != "object" || props == nil {
		t.Fatalf("%s: input schema %v is not a flat object", tl.Name, tl.InputSchema)
	}
	want := map[string]*openapi3.Schema{}
	var required []string
	for _, p := range op.Parameters {
		if p.Value.In != "path" && p.Value.In != "query" {
			continue
		}
		want[p.Value.Name] = p.Value.Schema.Value
		if p.Value.Required {
			required = append(required, p.Value.Name)
		}
		if got, _ := props[p.Value.Name].(map[string]any); got == nil || got["description"] != p.Value.Description {
			t.Errorf("%s.%s: description %v, want %q", tl.Name, p.Value.Name, got["description"], p.Value.Description)
		}
	}
	if op.RequestBody != nil {
		bs := op.RequestBody.Value.Content.Get("application/json").Schema.Value
		for name, ps := range bs.Properties {
			want[name] = ps.Value
			if got, _ := props[name].(map[string]any); got == nil || got["description"] != ps.Value.Description {
				t.Errorf("%s.%s: description %v, want %q", tl.Name, name, got["description"], ps.Value.Description)
			}
		}
		required = append(required, bs.Required...)
	}
	if _, ok := want["run_id"]; !ok {
		t.Errorf("%s: the contract declares no run_id", tl.Name)
	}
	writes := []string{"request_approval", "post_invoice", "hold_invoice", "hand_over"}
	if _, ok := want["idempotency_key"]; slices.Contains(writes, tl.Name) && !ok {
		t.Errorf("%s: the contract declares no idempotency_key", tl.Name)
	}
	for name := range props {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: argument %s is not in the contract", tl.Name, name)
		}
	}
	for name, ws := range want {
		got, _ := props[name].(map[string]any)
		if got == nil {
			t.Errorf("%s: argument %s missing", tl.Name, name)
			continue
		}
		if ws.Type != nil && got["type"] != ws.Type.Slice()[0] {
			t.Errorf("%s.%s: type %v, want %v", tl.Name, name, got["type"], ws.Type.Slice())
		}
		if ws.Pattern != "" && got["pattern"] != ws.Pattern {
			t.Errorf("%s.%s: pattern %v, want %q", tl.Name, name, got["pattern"], ws.Pattern)
		}
		if len(ws.Enum) > 0 {
			gotEnum, _ := json.Marshal(got["enum"])
			wantEnum, _ := json.Marshal(ws.Enum)
			if !bytes.Equal(gotEnum, wantEnum) {
				t.Errorf("%s.%s: enum %s, want %s", tl.Name, name, gotEnum, wantEnum)
			}
		}
	}
	var gotRequired []string
	if r, ok := schema["required"].([]any); ok {
		for _, v := range r {
			gotRequired = append(gotRequired, v.(string))
		}
	}
	sort.Strings(required)
	sort.Strings(gotRequired)
	if !slices.Equal(required, gotRequired) {
		t.Errorf("%s: required %v, want %v", tl.Name, gotRequired, required)
	}
	if schema["additionalProperties"] != false {
		t.Errorf("%s: additionalProperties %v, want false", tl.Name, schema["additionalProperties"])
	}
}

// outcome is one golden named outcome, as a tool call and as the REST call
// it stands for.
type outcome struct {
	code   string
	tool   string
	args   map[string]any
	method string
	path   string
	body   map[string]any
}

var justification = "Three-way match MATCHED on every line."

var outcomes = []outcome{
	{"INVOICE_NOT_FOUND", "get_invoice", map[string]any{"invoice_id": "5105600999"}, "GET", "/invoices/5105600999", nil},
	{"PO_NOT_FOUND", "run_three_way_match", map[string]any{"invoice_id": "5105600103"}, "POST", "/invoices/5105600103/three-way-match", map[string]any{}},
	{"SUPPLIER_NOT_FOUND", "run_three_way_match", map[string]any{"invoice_id": "5105600104"}, "POST", "/invoices/5105600104/three-way-match", map[string]any{}},
	{"GR_MISSING", "run_three_way_match", map[string]any{"invoice_id": "5105600105"}, "POST", "/invoices/5105600105/three-way-match", map[string]any{}},
	{"PO_CLOSED", "run_three_way_match", map[string]any{"invoice_id": "5105600106"}, "POST", "/invoices/5105600106/three-way-match", map[string]any{}},
	{"DUPLICATE_INVOICE", "run_three_way_match", map[string]any{"invoice_id": "5105600107"}, "POST", "/invoices/5105600107/three-way-match", map[string]any{}},
	{"APPROVER_NOT_FOUND", "request_approval",
		map[string]any{"invoice_id": "5105600108", "proposed_action": "post_as_invoiced", "justification": justification},
		"POST", "/invoices/5105600108/approvals", map[string]any{"proposed_action": "post_as_invoiced", "justification": justification}},
	{"APPROVAL_MISSING", "post_invoice", map[string]any{"invoice_id": "5105600101"}, "POST", "/invoices/5105600101/post", map[string]any{}},
}

func TestErrorResultsAreTheRESTBody(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	check := func(code string, res *sdk.CallToolResult, status int, body []byte) {
		t.Helper()
		if status < 400 {
			t.Fatalf("%s: REST answered %d: %s", code, status, body)
		}
		if !res.IsError {
			t.Errorf("%s: isError is false", code)
		}
		if res.StructuredContent != nil {
			t.Errorf("%s: an error result has structuredContent %v", code, res.StructuredContent)
		}
		want := strings.TrimSuffix(string(body), "\n")
		if got := text(t, res); got != want {
			t.Errorf("%s: text differs from the REST body\n got: %s\nwant: %s", code, got, want)
		}
		if got := object(t, res)["code"]; got != code {
			t.Errorf("got code %v, want %s", got, code)
		}
	}
	for _, o := range outcomes {
		res := call(t, cs, o.tool, o.args)
		status, body := s.rest(o.method, o.path, o.body)
		check(o.code, res, status, body)
	}

	// PERIOD_CLOSED: post 5105600109 after an approval, on both paths.
	approve := map[string]any{"invoice_id": "5105600109", "proposed_action": "post_as_invoiced", "justification": justification}
	a := call(t, cs, "request_approval", approve)
	if a.IsError {
		t.Fatalf("request_approval: %s", text(t, a))
	}
	res := call(t, cs, "post_invoice", map[string]any{"invoice_id": "5105600109", "approval_id": object(t, a)["approval_id"]})
	_, ab := s.rest("POST", "/invoices/5105600109/approvals", map[string]any{"proposed_action": "post_as_invoiced", "justification": justification})
	var ra map[string]any
	if err := json.Unmarshal(ab, &ra); err != nil {
		t.Fatal(err)
	}
	status, body := s.rest("POST", "/invoices/5105600109/post", map[string]any{"approval_id": ra["approval_id"]})
	check("PERIOD_CLOSED", res, status, body)
}

func TestToleranceExceededIsAResult(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	res := call(t, cs, "run_three_way_match", map[string]any{"invoice_id": "5105600102"})
	if res.IsError {
		t.Fatalf("isError on TOLERANCE_EXCEEDED: %s", text(t, res))
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || sc["result"] != "TOLERANCE_EXCEEDED" {
		t.Fatalf("structuredContent %v, want result TOLERANCE_EXCEEDED", res.StructuredContent)
	}
	_, body := s.rest("POST", "/invoices/5105600102/three-way-match", nil)
	if got, want := text(t, res), strings.TrimSuffix(string(body), "\n"); got != want {
		t.Errorf("text differs from the REST body\n got: %s\nwant: %s", got, want)
	}
	if !equalJSON(t, res.StructuredContent, body) {
		t.Errorf("structuredContent %v is not the REST body %s", res.StructuredContent, body)
	}
}

func equalJSON(t *testing.T, v any, raw []byte) bool {
	t.Helper()
	a, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(raw, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestCleanPath(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	m := call(t, cs, "run_three_way_match", map[string]any{"invoice_id": "5105600101", "run_id": "run-clean"})
	if m.IsError || m.StructuredContent.(map[string]any)["result"] != "MATCHED" {
		t.Fatalf("match: %s", text(t, m))
	}
	a := call(t, cs, "request_approval", map[string]any{"invoice_id": "5105600101", "run_id": "run-clean",
		"proposed_action": "post_as_invoiced", "justification": justification, "idempotency_key": "clean-approval"})
	if a.IsError || a.StructuredContent.(map[string]any)["status"] != "approved" {
		t.Fatalf("request_approval: %s", text(t, a))
	}
	p := call(t, cs, "post_invoice", map[string]any{"invoice_id": "5105600101", "run_id": "run-clean",
		"approval_id": a.StructuredContent.(map[string]any)["approval_id"], "idempotency_key": "clean-post"})
	if p.IsError || p.StructuredContent.(map[string]any)["status"] != "posted" {
		t.Fatalf("post_invoice: %s", text(t, p))
	}
}

func TestMalformedCallsAreProtocolErrors(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	cases := []struct {
		name string
		tool string
		args any
	}{
		{"unknown tool", "delete_invoice", map[string]any{"invoice_id": "5105600101"}},
		{"arguments not an object", "get_invoice", []any{"5105600101"}},
		{"arguments a string", "get_invoice", "5105600101"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
			if err == nil {
				t.Fatalf("got a result (isError %v, %v), want a JSON-RPC error", res.IsError, res.Content)
			}
			var wire *jsonrpc.Error
			if !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("got %v (%T), want a JSON-RPC invalid params error", err, err)
			}
			// Every one carries the five fields as data: arguments that
			// are no object name them, an unknown tool names its name.
			var five map[string]any
			if json.Unmarshal(wire.Data, &five) != nil || len(five) != 5 || five["code"] != "INVALID_REQUEST" {
				t.Errorf("error data %s, want the five-field INVALID_REQUEST", wire.Data)
			}
			if d, _ := five["details"].(map[string]any); c.tool == "delete_invoice" && d["field"] != "name" {
				t.Errorf("unknown tool: details %v, want field name", five["details"])
			}
		})
	}
	// An integral number is an integer, and null is an absent argument.
	res := call(t, cs, "search_suppliers", map[string]any{"name": "acme", "limit": 2.0, "run_id": nil})
	if res.IsError || len(res.StructuredContent.(map[string]any)["suppliers"].([]any)) != 2 {
		t.Errorf("search_suppliers limit 2.0: %s", text(t, res))
	}
}

func TestRunIDArgumentStopsLoops(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	args := map[string]any{"invoice_id": "5105600103", "run_id": "run-loop"}
	if first := call(t, cs, "run_three_way_match", args); object(t, first)["code"] != "PO_NOT_FOUND" {
		t.Fatalf("first call: %s", text(t, first))
	}
	second := call(t, cs, "run_three_way_match", args)
	m := object(t, second)
	if !second.IsError || m["code"] != "LOOP_DETECTED" || m["details"].(map[string]any)["run_id"] != "run-loop" {
		t.Fatalf("repeat: %s, want LOOP_DETECTED for run-loop", text(t, second))
	}
	// Reads take run_id in the query.
	get := map[string]any{"invoice_id": "5105600999", "run_id": "run-loop-get"}
	call(t, cs, "get_invoice", get)
	if r := call(t, cs, "get_invoice", get); object(t, r)["code"] != "LOOP_DETECTED" {
		t.Fatalf("repeated read: %s, want LOOP_DETECTED", text(t, r))
	}
}

func TestRunIDHeaderStopsLoops(t *testing.T) {
	s := newStack(t)
	cs := s.connect("X-Run-Id: run-header")
	args := map[string]any{"invoice_id": "5105600105"}
	call(t, cs, "run_three_way_match", args)
	r := call(t, cs, "run_three_way_match", args)
	if m := object(t, r); m["code"] != "LOOP_DETECTED" || m["details"].(map[string]any)["run_id"] != "run-header" {
		t.Fatalf("repeat: %s, want LOOP_DETECTED for run-header", text(t, r))
	}
}

func TestIdempotencyKeyReplays(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	args := map[string]any{"invoice_id": "5105600104", "code": "SUPPLIER_NOT_FOUND",
		"summary": "Invoicing party 100999 is not in the supplier master.", "idempotency_key": "ho-5105600104-1"}
	first := call(t, cs, "hand_over", args)
	second := call(t, cs, "hand_over", args)
	if first.IsError || text(t, first) != text(t, second) {
		t.Fatalf("replay differs:\n%s\n%s", text(t, first), text(t, second))
	}
	args["summary"] = "Supplier 100999 unknown; please create it."
	if r := call(t, cs, "hand_over", args); object(t, r)["code"] != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("other arguments, same key: %s", text(t, r))
	}
}

func TestCredentialsAreForwarded(t *testing.T) {
	const key = "test-key-1"
	s := newStack(t, func(o *api.Options) {
		o.Credentials = []api.Credential{{Name: "agent", KeySHA256: sha256.Sum256([]byte(key)), Scopes: []string{api.ScopeRead}}}
	})
	args := map[string]any{"invoice_id": "5105600101"}
	// A wrong key reaches the REST layer, which refuses the call.
	if r := call(t, s.connect("Authorization: Bearer wrong-key"), "get_invoice", args); object(t, r)["code"] != "UNAUTHENTICATED" {
		t.Errorf("with a wrong key: %s", text(t, r))
	}
	if r := call(t, s.connect("Authorization: Bearer "+key), "get_invoice", args); r.IsError {
		t.Errorf("with a bearer key: %s", text(t, r))
	}
	if r := call(t, s.connect("X-API-Key: "+key), "get_invoice", args); r.IsError {
		t.Errorf("with X-API-Key: %s", text(t, r))
	}
	r := call(t, s.connect("X-API-Key: "+key), "hold_invoice", map[string]any{"invoice_id": "5105600105", "reason": "GR_MISSING for PO 4500018822 item 20"})
	if m := object(t, r); m["code"] != "SCOPE_MISSING" {
		t.Errorf("write with a read key: %s", text(t, r))
	}
}

func TestToolsListShowsOnlyPermittedTools(t *testing.T) {
	hash := func(k string) string { sum := sha256.Sum256([]byte(k)); return hex.EncodeToString(sum[:]) }
	creds := []string{"reader:" + hash("k-read") + ":read", "agent:" + hash("k-write") + ":read+write"}
	s := newStack(t, func(o *api.Options) {
		for _, c := range creds {
			cred, err := api.ParseCredential(c)
			if err != nil {
				t.Fatal(err)
			}
			o.Credentials = append(o.Credentials, cred)
		}
	})
	names := func(cs *sdk.ClientSession) map[string]bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tl := range res.Tools {
			out[tl.Name] = true
		}
		return out
	}
	reader := names(s.connect("Authorization: Bearer k-read"))
	if !reader["get_invoice"] || !reader["run_three_way_match"] || reader["post_invoice"] || reader["hand_over"] {
		t.Errorf("a read client sees %v, want the reads only", reader)
	}
	writer := names(s.connect("X-API-Key: k-write"))
	if !writer["post_invoice"] || !writer["hand_over"] || len(writer) != len(s.doc.Paths.Map())+2 {
		// Every operation: the contract's paths hold 12 operations in 10 paths.
		t.Logf("writer sees %d tools", len(writer))
	}
	if !writer["post_invoice"] || !writer["get_invoice"] {
		t.Errorf("a write client sees %v, want every tool", writer)
	}
	if none := names(s.connect("X-API-Key: k-unknown")); len(none) != 0 {
		t.Errorf("a client with an unknown key sees %v, want none", none)
	}
	// A hidden tool called anyway is refused by the REST layer, in the
	// five-field shape.
	res := call(t, s.connect("Authorization: Bearer k-read"), "post_invoice", map[string]any{"invoice_id": "5105600101"})
	if !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"code":"SCOPE_MISSING"`) {
		t.Errorf("post_invoice by a reader: %+v", res)
	}
}
