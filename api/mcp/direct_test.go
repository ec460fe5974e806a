package mcp_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDirectPathAnswersAsTheSDK sends each tools/call twice, once to the
// SDK and once to the direct path, and wants the same status, headers and
// bytes; the calls the direct path does not take go to the SDK both times.
func TestDirectPathAnswersAsTheSDK(t *testing.T) {
	s := newStack(t)
	cases := []struct {
		name, version, body string
		direct              bool
	}{
		{"invoice", "2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true},
		{"string id, spaces, other order", "2025-11-25", ` { "params" : { "arguments" : { "invoice_id" : "5105600101" } , "name" : "get_invoice" } , "method" : "tools/call" , "id" : "call-7" , "jsonrpc" : "2.0" } `, true},
		{"2025-03-26", "2025-03-26", `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true},
		{"not found", "2025-06-18", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105699999"}}}`, true},
		{"bad id", "2025-06-18", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"<script>"}}}`, true},
		{"wrong type", "2025-06-18", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":5105600101}}}`, true},
		{"unknown argument", "2025-06-18", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101","x":1}}}`, true},
		{"no arguments", "2025-06-18", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_invoice"}}`, true},
		{"null arguments", "2025-06-18", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_invoice","arguments":null}}`, true},
		{"match", "2025-06-18", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_three_way_match","arguments":{"invoice_id":"5105600101"}}}`, true},
		{"match over tolerance", "2025-06-18", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_three_way_match","arguments":{"invoice_id":"5105600102"}}}`, true},
		{"html in a string", "2025-06-18", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"a<b>&c"}}}`, true},
		{"arguments not an object", "2025-06-18", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"get_invoice","arguments":[1]}}`, true},
		{"duplicate argument", "2025-06-18", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101","invoice_id":"5105600102"}}}`, false},
		{"unknown tool", "2025-06-18", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, false},
		{"meta", "2025-06-18", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"_meta":{"progressToken":1},"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false},
		{"batch", "2025-06-18", `[{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}]`, false},
		{"float id", "2025-06-18", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, false},
		{"tools/list", "2025-06-18", `{"jsonrpc":"2.0","id":16,"method":"tools/list"}`, false},
		{"unknown version", "2024-01-01", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.mcp.Direct([]byte(c.body)); got != c.direct {
				t.Errorf("direct path takes the body: %v, want %v", got, c.direct)
			}
			s.mcp.SetSDKOnly(true)
			want := post(t, s.url, c.version, c.body)
			s.mcp.SetSDKOnly(false)
			got := post(t, s.url, c.version, c.body)
			if got != want {
				t.Errorf("direct path answered\n%s\nthe SDK\n%s", got, want)
			}
			if c.direct && c.version != "2024-01-01" && !strings.Contains(want, "200 OK") {
				t.Errorf("the SDK did not answer 200:\n%s", want)
			}
		})
	}
}

// post sends one MCP POST and returns the status, the headers that
// matter and the body, as text to compare.
func post(t *testing.T, url, version, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
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
