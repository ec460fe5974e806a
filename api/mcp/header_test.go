package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRunIDIsAnMCPHeader: every tool but get_run (whose run_id is the run
// to read) marks run_id with x-mcp-header Run-Id, so an MCP client of the
// 2026-07-28 revision sends it as the Mcp-Param-Run-Id header as well, and
// the gateway takes that header as the run id.
func TestRunIDIsAnMCPHeader(t *testing.T) {
	s := newStack(t)
	rec := &headerRecorder{base: http.DefaultTransport}
	client := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: rec}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		props := tl.InputSchema.(map[string]any)["properties"].(map[string]any)
		got, _ := props["run_id"].(map[string]any)["x-mcp-header"].(string)
		switch want := "Run-Id"; {
		case tl.Name == "get_run" && got != "":
			t.Errorf("get_run: run_id is the run to read, yet has x-mcp-header %q", got)
		case tl.Name != "get_run" && got != want:
			t.Errorf("%s: run_id x-mcp-header %q, want %q", tl.Name, got, want)
		}
	}

	args := map[string]any{"invoice_id": "5105600103", "run_id": "run-param-header"}
	call(t, cs, "run_three_way_match", args)
	if got := rec.last("tools/call").Get("Mcp-Param-Run-Id"); got != "run-param-header" {
		t.Errorf("the client sent Mcp-Param-Run-Id %q, want run-param-header", got)
	}
	if m := object(t, call(t, cs, "run_three_way_match", args)); m["code"] != "LOOP_DETECTED" {
		t.Errorf("repeat in the run: %v, want LOOP_DETECTED", m)
	}
}

// TestRunIDBeforeToolsList: a client that calls a tool with run_id before
// it has listed the tools does not know to mirror it, and the call is
// refused as the transport spec says (header missing for a value in the
// body); the client is to list the tools and retry. Without run_id the
// call goes through.
func TestRunIDBeforeToolsList(t *testing.T) {
	s := newStack(t)
	client := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105600101", "run_id": "run-early"}})
	if err == nil || !strings.Contains(err.Error(), "Mcp-Param-Run-Id") {
		t.Errorf("a call with run_id before tools/list: %v, want the missing Mcp-Param-Run-Id refused", err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105600101"}})
	if err != nil || res.IsError {
		t.Errorf("a call without run_id before tools/list: %v %v", err, res)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs, "get_invoice", map[string]any{"invoice_id": "5105600101", "run_id": "run-early"}); res.IsError {
		t.Errorf("after tools/list: %s", text(t, res))
	}
}

// headerRecorder keeps the headers of the last request per JSON-RPC
// method.
type headerRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen map[string]http.Header
}

func (h *headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var msg struct{ Method string }
		if json.Unmarshal(b, &msg) == nil && msg.Method != "" {
			h.mu.Lock()
			if h.seen == nil {
				h.seen = map[string]http.Header{}
			}
			h.seen[msg.Method] = r.Header.Clone()
			h.mu.Unlock()
		}
	}
	return h.base.RoundTrip(r)
}

func (h *headerRecorder) last(method string) http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hdr, ok := h.seen[method]; ok {
		return hdr
	}
	return http.Header{}
}
