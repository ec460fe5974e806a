package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDirectPathAnswersAsTheSDK sends each tools/call twice, once to a
// gateway whose requests all go to the SDK and once to one with the direct
// path, and wants the same status, headers and bytes; the calls the direct
// path does not take go to the SDK both times. Two gateways, so that a
// call's run (the loop limits of a run id) is the same on both.
func TestDirectPathAnswersAsTheSDK(t *testing.T) {
	s, ref := newStack(t), newStack(t)
	ref.mcp.SetSDKOnly(true)
	const v7 = "2026-07-28"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	call := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + meta + `,"name":"get_invoice","arguments":` + args + `}}`
	}
	std := map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice"}
	with := func(kv ...string) map[string]string {
		h := map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "get_invoice"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(h, kv[i])
				continue
			}
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	cases := []struct {
		name, version, body string
		direct              bool
		header              map[string]string
	}{
		{"invoice", "2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, nil},
		{"string id, spaces, other order", "2025-11-25", ` { "params" : { "arguments" : { "invoice_id" : "5105600101" } , "name" : "get_invoice" } , "method" : "tools/call" , "id" : "call-7" , "jsonrpc" : "2.0" } `, true, nil},
		{"2025-03-26", "2025-03-26", `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, nil},
		{"not found", "2025-06-18", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105699999"}}}`, true, nil},
		{"bad id", "2025-06-18", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"<script>"}}}`, true, nil},
		{"wrong type", "2025-06-18", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":true}}}`, true, nil},
		{"id an integer", "2025-06-18", `{"jsonrpc":"2.0","id":55,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":5105600101}}}`, true, nil},
		{"id a fraction", "2025-06-18", `{"jsonrpc":"2.0","id":56,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":5105600101.5}}}`, true, nil},
		{"unknown argument", "2025-06-18", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101","x":1}}}`, true, nil},
		{"no arguments", "2025-06-18", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_invoice"}}`, true, nil},
		{"null arguments", "2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_invoice","arguments":null}}`, true, nil},
		{"match", "2025-06-18", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_three_way_match","arguments":{"invoice_id":"5105600101"}}}`, true, nil},
		{"match over tolerance", "2025-06-18", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_three_way_match","arguments":{"invoice_id":"5105600102"}}}`, true, nil},
		{"html in a string", "2025-06-18", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"a<b>&c"}}}`, true, nil},
		{"arguments not an object", "2025-06-18", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"get_invoice","arguments":[1]}}`, false, nil},
		{"duplicate argument", "2025-06-18", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101","invoice_id":"5105600102"}}}`, false, nil},
		{"unknown tool", "2025-06-18", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, false, nil},
		{"progress token", "2025-06-18", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, nil},
		{"trace context in _meta", "2025-06-18", `{"jsonrpc":"2.0","id":60,"method":"tools/call","params":{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v","progressToken":"p-60"},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, nil},
		{"_meta of other members", "2025-11-25", `{"jsonrpc":"2.0","id":61,"method":"tools/call","params":{"name":"get_invoice","_meta":{"com.example/tenant":{"id":7,"tags":["a","b"]},"traceparent":7},"arguments":{"invoice_id":"5105699999"}}}`, true, nil},
		{"_meta null", "2025-06-18", `{"jsonrpc":"2.0","id":62,"method":"tools/call","params":{"_meta":null,"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, nil},
		{"_meta empty", "2025-03-26", `{"jsonrpc":"2.0","id":63,"method":"tools/call","params":{"_meta":{},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, nil},
		{"_meta a string", "2025-06-18", `{"jsonrpc":"2.0","id":64,"method":"tools/call","params":{"_meta":"x","name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, nil},
		{"_meta with a protocol version", "2025-06-18", `{"jsonrpc":"2.0","id":65,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, nil},
		{"_meta with 2026-07-28's members", "2025-06-18", `{"jsonrpc":"2.0","id":66,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, nil},
		{"_meta with a log level", "2025-06-18", `{"jsonrpc":"2.0","id":69,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/logLevel":"info","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, nil},
		{"_meta with the prefix escaped", "2025-06-18", `{"jsonrpc":"2.0","id":67,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol\/logLevel":"debug"},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, nil},
		{"_meta with a progress token of a write", "2025-06-18", `{"jsonrpc":"2.0","id":68,"method":"tools/call","params":{"_meta":{"progressToken":68},"name":"run_three_way_match","arguments":{"invoice_id":"5105600102","run_id":"r-68"}}}`, true, nil},
		{"batch", "2025-06-18", `[{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}]`, false, nil},
		{"float id", "2025-06-18", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, nil},
		{"tools/list", "2025-06-18", `{"jsonrpc":"2.0","id":16,"method":"tools/list"}`, false, nil},
		{"unknown version", "2024-01-01", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, nil},
		{"charset", "2025-06-18", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{"not JSON", "2025-06-18", `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, map[string]string{"Content-Type": "text/plain"}},

		// 2026-07-28: headers and _meta.
		{"2026-07-28", v7, call("20", `{"invoice_id":"5105600101"}`), true, std},
		{"2026-07-28 not found", v7, call(`"c-21"`, `{"invoice_id":"5105699999"}`), true, std},
		{"2026-07-28 invalid argument", v7, call("22", `{"invoice_id":"5105600101","x":1}`), true, std},
		{"2026-07-28 run id", v7, call("23", `{"invoice_id":"5105600101","run_id":"run-8f2c"}`), true, with("Mcp-Param-Run-Id", "run-8f2c")},
		{"2026-07-28 run id mismatch", v7, call("24", `{"invoice_id":"5105600101","run_id":"run-8f2c"}`), false, with("Mcp-Param-Run-Id", "run-other")},
		{"2026-07-28 run id header missing", v7, call("25", `{"invoice_id":"5105600101","run_id":"run-8f2c"}`), true, std},
		{"2026-07-28 run id header missing, not plain text", v7, call("57", `{"invoice_id":"5105600101","run_id":"run 8f2c "}`), false, std},
		{"2026-07-28 run id header missing, a number", v7, call("58", `{"invoice_id":"5105600101","run_id":7}`), false, std},
		{"2026-07-28 run id header missing, an object", v7, call("59", `{"invoice_id":"5105600101","run_id":{"a":1}}`), false, std},
		{"2026-07-28 run id header without argument", v7, call("26", `{"invoice_id":"5105600101"}`), false, with("Mcp-Param-Run-Id", "run-8f2c")},
		{"2026-07-28 run id Base64", v7, call("27", `{"invoice_id":"5105600101","run_id":"run 8f2c "}`), false, with("Mcp-Param-Run-Id", "=?base64?cnVuIDhmMmMg?=")},
		{"2026-07-28 run id null", v7, call("28", `{"invoice_id":"5105600101","run_id":null}`), true, std},
		{"2026-07-28 no Mcp-Method", v7, call("29", `{"invoice_id":"5105600101"}`), false, with("Mcp-Method", "")},
		{"2026-07-28 wrong Mcp-Method", v7, call("30", `{"invoice_id":"5105600101"}`), false, with("Mcp-Method", "tools/list")},
		{"2026-07-28 no Mcp-Name", v7, call("31", `{"invoice_id":"5105600101"}`), false, with("Mcp-Name", "")},
		{"2026-07-28 wrong Mcp-Name", v7, call("32", `{"invoice_id":"5105600101"}`), false, with("Mcp-Name", "get_supplier")},
		{"2026-07-28 no _meta", v7, `{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, std},
		{"2026-07-28 _meta of another version", v7, `{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, std},
		{"2026-07-28 no capabilities", v7, `{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, std},
		{"2026-07-28 capabilities and client", v7, `{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":"get_invoice","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"ap-agent","version":"2.1.0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{}}},"arguments":{"invoice_id":"5105600101"}}}`, true, std},
		{"2026-07-28 bad capabilities", v7, `{"jsonrpc":"2.0","id":37,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":"yes"}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, std},
		{"2026-07-28 progress token", v7, `{"jsonrpc":"2.0","id":38,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, std},
		{"2026-07-28 progress token string", v7, `{"jsonrpc":"2.0","id":49,"method":"tools/call","params":{"_meta":{"progressToken":"p-49","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, std},
		{"2026-07-28 trace context", v7, `{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","com.example/tenant":{"id":7}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, std},
		{"2026-07-28 log level", v7, `{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, std},
		{"2026-07-28 capability of a later revision", v7, `{"jsonrpc":"2.0","id":52,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"tasks":{"requests":{}},"elicitation":{"form":{}}}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, std},
		{"2026-07-28 capability named in capitals", v7, `{"jsonrpc":"2.0","id":53,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"Roots":"yes"}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false, std},
		{"2026-07-28 client with title", v7, `{"jsonrpc":"2.0","id":54,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"ap-agent","title":"AP agent","version":"2.1.0","websiteUrl":"https://example.com"}},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true, std},
		{"2026-07-28 no arguments", v7, `{"jsonrpc":"2.0","id":39,"method":"tools/call","params":{` + meta + `,"name":"get_invoice"}}`, true, std},
		{"2026-07-28 match", v7, `{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{` + meta + `,"name":"run_three_way_match","arguments":{"invoice_id":"5105600102","run_id":"r-1"}}}`, true, with("Mcp-Name", "run_three_way_match", "Mcp-Param-Run-Id", "r-1")},
		{"2026-07-28 charset", v7, call("42", `{"invoice_id":"5105600101"}`), true, with("Content-Type", "application/json; charset=UTF-8")},
		{"2026-07-28 Content-Type with a space", v7, call("43", `{"invoice_id":"5105600101"}`), true, with("Content-Type", "Application/JSON ; charset=utf-8")},
		{"2026-07-28 Content-Type malformed", v7, call("44", `{"invoice_id":"5105600101"}`), false, with("Content-Type", "application/json;;")},
		{"2026-07-28 Accept any", v7, call("45", `{"invoice_id":"5105600101"}`), true, with("Accept", "*/*")},
		{"2026-07-28 Accept JSON only", v7, call("46", `{"invoice_id":"5105600101"}`), false, with("Accept", "application/json")},
		{"2026-07-28 Accept with quality", v7, call("47", `{"invoice_id":"5105600101"}`), true, with("Accept", "text/event-stream;q=0.9, application/json")},
		{"2026-07-28 session id", v7, call("48", `{"invoice_id":"5105600101"}`), false, with("Mcp-Session-Id", "s-1")},
		{"2026-07-28 UUID id", v7, call(`"0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"`, `{"invoice_id":"5105600101"}`), true, std},
		{"2025-06-18 ignores a header unlike the body", "2025-06-18", `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101","run_id":"a"}}}`, true, with("Mcp-Param-Run-Id", "b")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := post(t, ref.url, c.version, c.body, c.header)
			before := s.mcp.DirectAnswers()
			got := post(t, s.url, c.version, c.body, c.header)
			if direct := s.mcp.DirectAnswers() > before; direct != c.direct {
				t.Errorf("answered by the direct path: %v, want %v", direct, c.direct)
			}
			if got != want {
				t.Errorf("direct path answered\n%s\nthe SDK\n%s", got, want)
			}
			if c.direct && !strings.Contains(want, "200 OK") {
				t.Errorf("the SDK did not answer 200:\n%s", want)
			}
			if strings.Contains(c.name, "mismatch") && !strings.Contains(want, "400 Bad Request") {
				t.Errorf("the SDK took a mismatched header:\n%s", want)
			}
		})
	}
}

// TestSDKClientCallsTakeTheDirectPath makes the calls of an agent with the
// SDK's client, of the endpoint's revision (2026-07-28: _meta with the
// client's name and capabilities, Mcp-Method, Mcp-Name and
// Mcp-Param-Run-Id), reads and a write, with a run id, a progress token
// and none, and wants every one answered by the direct path.
func TestSDKClientCallsTakeTheDirectPath(t *testing.T) {
	s := newStack(t)
	rec := &headerRecorder{base: http.DefaultTransport}
	client := sdk.NewClient(&sdk.Implementation{Name: "ap-agent", Title: "AP agent", Version: "2.1.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: rec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	calls := []*sdk.CallToolParams{
		{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105600101"}},
		{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105600101", "run_id": "run-direct"}},
		{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105699999"}},
		{Name: "get_supplier", Arguments: map[string]any{"supplier_id": "17300001"}},
		{Name: "search_suppliers", Arguments: map[string]any{"name": "Acme"}},
		{Name: "run_three_way_match", Arguments: map[string]any{"invoice_id": "5105600102", "run_id": "run-direct"}},
		{Name: "hold_invoice", Arguments: map[string]any{"invoice_id": "5105600105", "reason": "GR_MISSING for PO 4500018822 item 20",
			"idempotency_key": "hold-direct-1"}},
		{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105600101"}},
	}
	calls[len(calls)-1].SetProgressToken("progress-1")
	for _, p := range calls {
		before := s.mcp.DirectAnswers()
		if _, err := cs.CallTool(ctx, p); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if s.mcp.DirectAnswers() == before {
			t.Errorf("%s %v (_meta %v): answered by the SDK, not the direct path", p.Name, p.Arguments, p.Meta)
		}
	}
	if v := rec.last("tools/call").Get("Mcp-Protocol-Version"); v != "2026-07-28" {
		t.Errorf("the client called in %q, want 2026-07-28", v)
	}
}

// post sends one MCP POST and returns the status, the headers that
// matter and the body, as text to compare.
func post(t *testing.T, url, version, body string, header map[string]string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.WriteString(resp.Status + "\n")
	for _, k := range []string{"Content-Type", "Cache-Control", "Mcp-Session-Id", "Content-Length"} {
		out.WriteString(k + ": " + resp.Header.Get(k) + "\n")
	}
	out.Write(b)
	return out.String()
}

// TestDirectPathNeverRunsACallTwice makes the direct path fail to encode
// the result of a write whose REST handler has run: the call is answered
// with INTERNAL as a tool result, not handed to the SDK to run again.
func TestDirectPathNeverRunsACallTwice(t *testing.T) {
	var runs atomic.Int32
	s := newStackAround(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			next.ServeHTTP(w, r)
		})
	})
	s.mcp.FailEncode(true)
	for _, version := range []string{"2025-06-18", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			runs.Store(0)
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold_invoice","arguments":{"invoice_id":"5105600105","reason":"GR_MISSING for PO 4500018822 item 20"}}}`
			header := map[string]string{}
			if version == "2026-07-28" {
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"hold_invoice","arguments":{"invoice_id":"5105600105","reason":"GR_MISSING for PO 4500018822 item 20"}}}`
				header = map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "hold_invoice"}
			}
			got := post(t, s.url, version, body, header)
			if n := runs.Load(); n != 1 {
				t.Errorf("the REST handler ran %d times, want once", n)
			}
			_, payload, _ := strings.Cut(got, "\n{")
			var msg struct {
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					IsError    bool   `json:"isError"`
					ResultType string `json:"resultType"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte("{"+payload), &msg); err != nil {
				t.Fatalf("%v:\n%s", err, got)
			}
			if !strings.HasPrefix(got, "200 OK") || !msg.Result.IsError || len(msg.Result.Content) != 1 {
				t.Fatalf("want a tool result with isError:\n%s", got)
			}
			var e map[string]any
			if err := json.Unmarshal([]byte(msg.Result.Content[0].Text), &e); err != nil {
				t.Fatalf("%v: %s", err, msg.Result.Content[0].Text)
			}
			if e["code"] != "INTERNAL" || len(e) != 5 {
				t.Errorf("want the five fields of INTERNAL, got %v", e)
			}
			if want := map[string]string{"2026-07-28": "complete"}[version]; msg.Result.ResultType != want {
				t.Errorf("resultType %q, want %q", msg.Result.ResultType, want)
			}
		})
	}
}
