package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
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

// TestRunIDWithoutItsHeader: a client that calls a tool with run_id
// without mirroring it into Mcp-Param-Run-Id (one that has not listed the
// tools, or mcp-remote, which passes a stdio client's calls on without
// it) is served as if it had: the argument is the run id, on both paths.
// A header that disagrees with its argument is refused, HeaderMismatch
// with the five fields naming the header in the JSON-RPC error's data.
func TestRunIDWithoutItsHeader(t *testing.T) {
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			s := newStack(t)
			s.mcp.SetSDKOnly(p.sdkOnly)
			client := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rec := &headerRecorder{base: http.DefaultTransport}
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: rec}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			args := map[string]any{"invoice_id": "5105600103", "run_id": "run-early"}
			first := call(t, cs, "run_three_way_match", args)
			if h := rec.last("tools/call").Get("Mcp-Param-Run-Id"); h != "" {
				t.Fatalf("the client mirrored run_id before tools/list (%q): the test needs one that does not", h)
			}
			if m := object(t, first); m["code"] != "PO_NOT_FOUND" {
				t.Errorf("a call with run_id and no header: %s, want PO_NOT_FOUND", text(t, first))
			}
			if m := object(t, call(t, cs, "run_three_way_match", args)); m["code"] != "LOOP_DETECTED" ||
				m["details"].(map[string]any)["run_id"] != "run-early" {
				t.Errorf("the same call again: %v, want LOOP_DETECTED in run-early", m)
			}

			// A header that says another run than the argument.
			other := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
			cs2, err := other.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp",
				HTTPClient: &http.Client{Transport: headerTransport{header: http.Header{"Mcp-Param-Run-Id": {"run-other"}}, base: http.DefaultTransport}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs2.Close()
			_, err = cs2.CallTool(ctx, &sdk.CallToolParams{Name: "get_invoice", Arguments: map[string]any{"invoice_id": "5105600101", "run_id": "run-early"}})
			checkProtocolError(t, err, -32020, "Mcp-Param-Run-Id")
		})
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
