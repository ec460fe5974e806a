package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// statusRecorder keeps the HTTP status of the last response per JSON-RPC
// method.
type statusRecorder struct {
	base   http.RoundTripper
	host   string // when set, the Host every request names
	mu     sync.Mutex
	status map[string]int
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var method string
	if r.Body != nil {
		body, _ := r.GetBody()
		var msg struct{ Method string }
		if body != nil {
			_ = json.NewDecoder(body).Decode(&msg)
		}
		method = msg.Method
	}
	if s.host != "" {
		r = r.Clone(r.Context())
		r.Host = s.host
	}
	resp, err := s.base.RoundTrip(r)
	if err == nil && method != "" {
		s.mu.Lock()
		if s.status == nil {
			s.status = map[string]int{}
		}
		s.status[method] = resp.StatusCode
		s.mu.Unlock()
	}
	return resp, err
}

func (s *statusRecorder) last(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status[method]
}

// TestGoClientReadsEveryRefusal makes the Go SDK's client meet each kind
// of protocol error and transport refusal, in both revisions: each reaches
// it as a JSON-RPC error (errors.As, *jsonrpc.Error) with the five fields
// in its data, whatever the HTTP status the revision prescribes (200 for a
// method's error up to 2025-11-25, 400 or 404 from 2026-07-28 on, and the
// transport's 400 and 403 in both).
func TestGoClientReadsEveryRefusal(t *testing.T) {
	s := newStack(t)
	for _, version := range revisions {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rec := &statusRecorder{base: http.DefaultTransport}
			client := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: rec}},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			methodError := map[string]int{"2025-11-25": 200, "2026-07-28": 400}[version]

			_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_invoice", Arguments: map[string]any{"invoice_id": "5105600101"}})
			checkProtocolError(t, err, jsonrpc.CodeInvalidParams, "name")
			if got := rec.last("tools/call"); got != methodError {
				t.Errorf("unknown tool: HTTP %d, want %d", got, methodError)
			}
			_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_invoice", Arguments: []any{"5105600101"}})
			checkProtocolError(t, err, jsonrpc.CodeInvalidParams, "arguments")
			_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "summarise_invoice"})
			checkProtocolError(t, err, jsonrpc.CodeInvalidParams, "name")

			// A tool's own error stays a result, whatever the revision.
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105600999"}})
			if err != nil || !res.IsError || object(t, res)["code"] != "INVOICE_NOT_FOUND" || rec.last("tools/call") != 200 {
				t.Errorf("get_invoice 5105600999: %v %v, HTTP %d; want an isError result of INVOICE_NOT_FOUND, HTTP 200", res, err, rec.last("tools/call"))
			}

			// Clients set up wrong: the transport refuses them before any
			// method runs.
			for _, c := range []struct {
				name   string
				rt     http.RoundTripper
				code   int64
				field  string
				status int
			}{
				{"Accept without event streams", headerTransport{header: http.Header{"Accept": {"application/json"}}, base: http.DefaultTransport},
					-32600, "Accept", http.StatusBadRequest},
				{"a Host the endpoint does not serve", &statusRecorder{base: http.DefaultTransport, host: "erpgate.example"},
					-32600, "", http.StatusForbidden},
			} {
				t.Run(c.name, func(t *testing.T) {
					rec := &statusRecorder{base: c.rt}
					_, err := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil).Connect(ctx,
						&sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: rec}},
						&sdk.ClientSessionOptions{ProtocolVersion: version})
					five := checkProtocolError(t, err, c.code, c.field)
					if strings.Contains(five["message"].(string), "erpgate.example") {
						t.Errorf("the refusal echoes the Host: %v", five)
					}
					first := map[string]string{"2025-11-25": "initialize", "2026-07-28": "server/discover"}[version]
					if got := rec.last(first); got != c.status {
						t.Errorf("%s: HTTP %d, want %d", first, got, c.status)
					}
				})
			}
		})
	}
}

// checkProtocolError checks that err is the JSON-RPC error code as the Go
// SDK's client surfaces it, with the five fields in its data: INVALID_REQUEST
// naming field (any field, or none, when field is "").
func checkProtocolError(t *testing.T, err error, code int64, field string) map[string]any {
	t.Helper()
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		t.Fatalf("got %v (%T), want a JSON-RPC error %d", err, err, code)
	}
	if wire.Code != code {
		t.Errorf("JSON-RPC error %d %q, want %d", wire.Code, wire.Message, code)
	}
	var five map[string]any
	if err := json.Unmarshal(wire.Data, &five); err != nil {
		t.Fatalf("error data %s: %v", wire.Data, err)
	}
	for _, k := range []string{"code", "message", "retryable", "next_action", "details"} {
		if _, ok := five[k]; !ok {
			t.Errorf("error data %s lacks %s", wire.Data, k)
		}
	}
	d, _ := five["details"].(map[string]any)
	if five["code"] != "INVALID_REQUEST" || five["next_action"] != "fix_input_and_retry" || (field != "" && d["field"] != field) {
		t.Errorf("error data %s, want INVALID_REQUEST naming %q", wire.Data, field)
	}
	return five
}

// TestEveryRefusalIsAJSONRPCError sends the requests only a client of
// another make, or none, would send, in both revisions: each refusal is a
// JSON-RPC error answering the request's id (null when it has none), with
// the status the transport prescribes and the five fields in its data, in
// their order (beside the supported versions of an unsupported version,
// which clients negotiate from).
func TestEveryRefusalIsAJSONRPCError(t *testing.T) {
	s := newStack(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	std := map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice"}
	invoice := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + meta + `,"name":"get_invoice","arguments":` + args + `}}`
	}
	for _, c := range []struct {
		name, version, body string
		header              map[string]string
		status              int
		id                  string
		code                int
		field               string
	}{
		{"unknown method", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"invoices/delete","params":{}}`, nil, 400, "1", -32601, "method"},
		{"unknown method", "2026-07-28", `{"jsonrpc":"2.0","id":2,"method":"invoices/delete","params":{` + meta + `}}`,
			map[string]string{"Mcp-Method": "invoices/delete"}, 404, "2", -32601, "method"},
		{"unknown prompt", "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"x"}}`, nil, 200, "3", -32602, "name"},
		{"unknown prompt", "2026-07-28", `{"jsonrpc":"2.0","id":"p-4","method":"prompts/get","params":{` + meta + `,"name":"x"}}`,
			map[string]string{"Mcp-Method": "prompts/get", "Mcp-Name": "x"}, 400, `"p-4"`, -32602, "name"},
		{"unknown tool", "2025-11-25", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, nil, 200, "5", -32602, "name"},
		{"unknown tool", "2026-07-28", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{` + meta + `,"name":"nope","arguments":{}}}`,
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "nope"}, 400, "6", -32602, "name"},
		{"body not JSON", "2025-11-25", `{"jsonrpc":"2.0","id":7,"method":`, nil, 400, "null", -32700, ""},
		{"batch", "2025-11-25", `[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`, nil, 400, "null", -32600, ""},
		{"unknown protocol version", "2024-01-01", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, nil, 400, "9", -32600, "MCP-Protocol-Version"},
		{"unsupported later version", "2099-01-01", `{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"Mcp-Method": "tools/list"}, 400, "10", -32022, "MCP-Protocol-Version"},
		{"no Mcp-Method", "2026-07-28", invoice("11", `{"invoice_id":"5105600101"}`), map[string]string{"Mcp-Name": "get_invoice"}, 400, "11", -32020, "Mcp-Method"},
		{"Mcp-Name of another tool", "2026-07-28", invoice("12", `{"invoice_id":"5105600101"}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_supplier"}, 400, "12", -32020, "Mcp-Name"},
		{"run id header of another run", "2026-07-28", invoice("13", `{"invoice_id":"5105600101","run_id":"run-a"}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice", "Mcp-Param-Run-Id": "run-b"}, 400, "13", -32020, "Mcp-Param-Run-Id"},
		{"run id header without the argument", "2026-07-28", invoice("14", `{"invoice_id":"5105600101"}`),
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice", "Mcp-Param-Run-Id": "run-b"}, 400, "14", -32020, "Mcp-Param-Run-Id"},
		{"no _meta", "2026-07-28", `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`,
			std, 400, "15", -32602, "_meta"},
		{"text/plain", "2026-07-28", invoice("16", `{"invoice_id":"5105600101"}`), map[string]string{"Content-Type": "text/plain", "Mcp-Method": "tools/call", "Mcp-Name": "get_invoice"},
			415, "16", -32600, ""},
	} {
		t.Run(c.version+" "+c.name, func(t *testing.T) {
			got := post(t, s.url, c.version, c.body, c.header)
			status, rest, _ := strings.Cut(got, "\n")
			_, body, _ := strings.Cut(rest, "\n{")
			if !strings.HasPrefix(status, strconv.Itoa(c.status)+" ") {
				t.Errorf("HTTP %s, want %d:\n%s", status, c.status, got)
			}
			if !strings.Contains(rest, "Content-Type: application/json\n") {
				t.Errorf("not JSON:\n%s", got)
			}
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   jsonrpc.Error   `json:"error"`
			}
			if err := json.Unmarshal([]byte("{"+body), &msg); err != nil {
				t.Fatalf("%v:\n%s", err, got)
			}
			if msg.JSONRPC != "2.0" || string(msg.ID) != c.id || msg.Error.Code != int64(c.code) {
				t.Errorf("id %s, error %d, want id %s, error %d:\n%s", msg.ID, msg.Error.Code, c.id, c.code, got)
			}
			var five map[string]any
			if err := json.Unmarshal(msg.Error.Data, &five); err != nil {
				t.Fatalf("data %s: %v", msg.Error.Data, err)
			}
			d, _ := five["details"].(map[string]any)
			if five["code"] != "INVALID_REQUEST" || five["next_action"] != "fix_input_and_retry" || five["retryable"] != false ||
				five["message"] == "" || (c.field != "" && d["field"] != c.field) {
				t.Errorf("data %s, want INVALID_REQUEST naming %q", msg.Error.Data, c.field)
			}
			if !fiveFirst.Match(msg.Error.Data) {
				t.Errorf("data %s: the five fields are not first, in their order", msg.Error.Data)
			}
			if extra := len(five) - 5; extra != 0 && c.code != -32022 {
				t.Errorf("data %s has %d members besides the five fields", msg.Error.Data, extra)
			}
		})
	}
}

// fiveFirst matches data that begins with the five fields in their order.
var fiveFirst = regexp.MustCompile(`^\{"code":"[A-Z_]+","message":"(?:[^"\\]|\\.)+","retryable":(true|false),"next_action":"[a-z_]+","details":\{`)
