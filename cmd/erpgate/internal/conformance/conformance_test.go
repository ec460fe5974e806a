package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/retry"
)

// stdioProxyEnv makes the test binary an MCP server on stdio that forwards
// every tool to the Streamable HTTP endpoint named in it, so that -cmd can
// be tested without a third-party bridge.
const stdioProxyEnv = "ERPGATE_TEST_STDIO_PROXY"

func TestMain(m *testing.M) {
	if url := os.Getenv(stdioProxyEnv); url != "" {
		if err := stdioProxy(url); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func stdioProxy(url string) error {
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "proxy", Version: "1"}, nil)
	up, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		return err
	}
	defer up.Close()
	list, err := up.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "stdio-proxy", Version: "1"}, nil)
	for _, t := range list.Tools {
		server.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	return server.Run(ctx, &mcp.StdioTransport{})
}

// startMCPStack serves the gateway with its MCP endpoint at /mcp and the
// REST API beside it, over an embedded simulated ERP, and returns its URL.
func startMCPStack(t *testing.T) string {
	t.Helper()
	gw, err := gateway.New(context.Background(), gateway.Config{
		Retry:   retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond},
		DataDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func conformance(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), append(args, "-timeout", "60s"), nil, &out, &errOut)
	t.Logf("conformance %v:\n%s%s", args, out.String(), errOut.String())
	return out.String(), err
}

func TestConformanceOfErpgateMCP(t *testing.T) {
	url := startMCPStack(t)
	out, err := conformance(t, "-url", url+"/mcp", "-header", "X-Request-Id: conformance-test")
	if err != nil {
		t.Fatalf("conformance failed: %v", err)
	}
	if !strings.Contains(out, "conformance: 10/10 outcomes intact") || strings.Contains(out, fieldLost) ||
		strings.Contains(out, fieldChanged) || strings.Contains(out, "wrapped") {
		t.Errorf("want every outcome intact and unwrapped:\n%s", out)
	}
	if !strings.Contains(out, "keeps: isError 10/10, code 10/10, message 9/9, retryable 9/9, next_action 9/9, details 9/9") {
		t.Errorf("want every field kept:\n%s", out)
	}
	// Run ids are fresh per check, so a second check of the same gateway
	// meets no loop limit.
	if _, err := conformance(t, "-url", url+"/mcp"); err != nil {
		t.Errorf("second check: %v", err)
	}
}

func TestConformanceOverStdio(t *testing.T) {
	url := startMCPStack(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := conformance(t, "-cmd", stdioProxyEnv+"="+url+"/mcp '"+self+"'")
	if err != nil || !strings.Contains(out, "conformance: 10/10 outcomes intact") {
		t.Fatalf("conformance over stdio: %v\n%s", err, out)
	}
}

// lossyServer is an MCP server whose tools call the gateway's REST API and
// then lose part of an error: only the message text, or isError, or send
// the body as a JSON-RPC error (as it is, or after a prefix).
func lossyServer(t *testing.T, gateway, mode string) string {
	t.Helper()
	type route struct{ method, path string }
	routes := map[string]route{
		"get_invoice":         {"GET", "/invoices/%s"},
		"run_three_way_match": {"POST", "/invoices/%s/three-way-match"},
		"request_approval":    {"POST", "/invoices/%s/approvals"},
		"post_invoice":        {"POST", "/invoices/%s/post"},
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "lossy", Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"invoice_id": map[string]any{"type": "string"}, "approval_id": map[string]any{"type": "string"},
		"proposed_action": map[string]any{"type": "string"}, "justification": map[string]any{"type": "string"},
	}}
	for name, rt := range routes {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			id, _ := args["invoice_id"].(string)
			delete(args, "invoice_id")
			var body io.Reader
			if rt.method == "POST" {
				b, _ := json.Marshal(args)
				body = bytes.NewReader(b)
			}
			hreq, _ := http.NewRequestWithContext(ctx, rt.method, gateway+strings.Replace(rt.path, "%s", id, 1), body)
			hreq.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(hreq)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}}
			if resp.StatusCode >= 400 {
				switch mode {
				case "message":
					var e struct{ Message string }
					_ = json.Unmarshal(raw, &e)
					res.Content = []mcp.Content{&mcp.TextContent{Text: e.Message}}
					res.IsError = true
				case "noerror":
				case "rpc":
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: string(raw)}
				case "rpc-prefixed":
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "API error: " + string(raw)}
				}
			}
			return res, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestConformanceReportsLosses(t *testing.T) {
	gateway := startMCPStack(t)
	for _, c := range []struct {
		mode string
		want []string
	}{
		{"message", []string{"INVOICE_NOT_FOUND   get_invoice          ok       LOST  ok       LOST       LOST         LOST",
			"keeps: isError 10/10, code 1/10, message 9/9, retryable 0/9, next_action 0/9, details 0/9",
			"conformance: 1/10 outcomes intact"}},
		{"noerror", []string{"INVOICE_NOT_FOUND   get_invoice          LOST     ok    ok       ok         ok           ok       error arrived as a normal result",
			"keeps: isError 1/10, code 10/10", "conformance: 1/10 outcomes intact"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			out, err := conformance(t, "-url", lossyServer(t, gateway, c.mode))
			if err == nil {
				t.Fatal("conformance passed a lossy server")
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
		})
	}
}

// TestConformanceOfJSONRPCErrors scores a server that sends every error
// body as a JSON-RPC error: isError is lost, unless -rpc-errors counts the
// JSON-RPC error as the signal, and then only when its message is the
// whole body with the code first.
func TestConformanceOfJSONRPCErrors(t *testing.T) {
	gateway := startMCPStack(t)
	rpc := lossyServer(t, gateway, "rpc")
	out, err := conformance(t, "-url", rpc)
	if err == nil || !strings.Contains(out, "conformance: 1/10 outcomes intact") ||
		!strings.Contains(out, "keeps: isError 1/10 (+9 as JSON-RPC errors), code 10/10, message 9/9, retryable 9/9, next_action 9/9, details 9/9") {
		t.Errorf("without -rpc-errors: %v, want 1/10 intact and every field but isError kept:\n%s", err, out)
	}
	if !strings.Contains(out, "INVOICE_NOT_FOUND   get_invoice          rpc      ok    ok       ok         ok           ok       body only in a JSON-RPC error") {
		t.Errorf("want the row to show isError rpc:\n%s", out)
	}
	if out, err := conformance(t, "-url", rpc, "-rpc-errors"); err != nil || !strings.Contains(out, "conformance: 10/10 outcomes intact") {
		t.Errorf("with -rpc-errors: %v, want 10/10 intact:\n%s", err, out)
	}
	if _, err := conformance(t, "-url", rpc, "-min", "0", "-fields", "isError"); err == nil {
		t.Error("-fields isError passed JSON-RPC errors without -rpc-errors")
	}
	if _, err := conformance(t, "-url", rpc, "-rpc-errors", "-fields", "isError,details"); err != nil {
		t.Errorf("-fields isError,details with -rpc-errors: %v", err)
	}
	out, err = conformance(t, "-url", lossyServer(t, gateway, "rpc-prefixed"), "-rpc-errors")
	if err == nil || !strings.Contains(out, "conformance: 1/10 outcomes intact") || strings.Contains(out, " rpc ") {
		t.Errorf("a prefixed JSON-RPC error message counted as the signal: %v\n%s", err, out)
	}
}

// TestConformanceFieldsFlag holds a path to the fields it must keep in
// every outcome, apart from the count of intact ones.
func TestConformanceFieldsFlag(t *testing.T) {
	gateway := startMCPStack(t)
	noerror := lossyServer(t, gateway, "noerror")
	if _, err := conformance(t, "-url", noerror, "-min", "1", "-fields", "code,message,retryable,next_action,details"); err != nil {
		t.Errorf("every listed field arrived, yet: %v", err)
	}
	if _, err := conformance(t, "-url", noerror, "-min", "1", "-fields", "code,isError"); err == nil || !strings.Contains(err.Error(), "isError of INVOICE_NOT_FOUND") {
		t.Errorf("isError lost, yet: %v", err)
	}
	if _, err := conformance(t, "-url", lossyServer(t, gateway, "message"), "-min", "1", "-fields", "next_action"); err == nil {
		t.Error("next_action lost, yet the check passed")
	}
}

// TestConformanceAbsentFlag: the check fails when an operation -absent
// names is offered as a tool, and passes when none is: erpgate's /mcp
// offers no operation of people.
func TestConformanceAbsentFlag(t *testing.T) {
	url := startMCPStack(t)
	out, err := conformance(t, "-url", url+"/mcp", "-absent", "decide_approval,list_approvals,list_handovers,get_audit")
	if err != nil || !strings.Contains(out, "not offered as tools: decide_approval") {
		t.Errorf("the operations of people, absent from /mcp: %v", err)
	}
	if _, err := conformance(t, "-url", url+"/mcp", "-absent", "list_handovers,hand_over"); err == nil || !strings.Contains(err.Error(), "offers hand_over") {
		t.Errorf("hand_over, offered: %v, want an error naming it", err)
	}
}

func TestFindToolAcrossNamingStyles(t *testing.T) {
	for _, name := range []string{"get_invoice", "GetInvoice", "get-invoice", "getInvoice", "erpgate_get_invoice"} {
		tools := []*mcp.Tool{{Name: "get_purchase_order"}, {Name: name}, {Name: "post_invoice"}}
		if got, _ := findTool(tools, "get_invoice"); got == nil || got.Name != name {
			t.Errorf("%s: found %v", name, got)
		}
	}
	abbreviated := []*mcp.Tool{{Name: "pst-invoice", Description: operationDescriptions()["post_invoice"] + " …"}}
	if got, how := findTool(abbreviated, "post_invoice"); got == nil || how == "" {
		t.Errorf("abbreviated name not found by description")
	}
	if got, _ := findTool([]*mcp.Tool{{Name: "hold_invoice"}}, "get_invoice"); got != nil {
		t.Errorf("found %s for get_invoice", got.Name)
	}
}

func TestLocateWrappedBody(t *testing.T) {
	body := `{"code":"GR_MISSING","message":"m","retryable":false,"next_action":"hold_and_recheck","details":{}}`
	for text, where := range map[string]string{
		body: "",
		"Error: API request failed: Request failed with status code 409 (409: " + body + ")": "wrapped",
		`{"status":409,"body":` + body + `}`:                                                 "wrapped",
	} {
		obj, keys, got := locate(text, &mcp.CallToolResult{})
		if obj == nil || got != where || strings.Join(keys, ",") != strings.Join(errorFields, ",") {
			t.Errorf("%s: got %v %v %q", text, obj, keys, got)
		}
	}
	// A body cut short yields the fields that arrived complete, marked.
	obj, keys, where := locate("API Error: Status 409. Response: "+body[:60], &mcp.CallToolResult{})
	if where != "body cut short" || strings.Join(keys, ",") != "code,message,retryable" || obj["code"] != "GR_MISSING" {
		t.Errorf("a body cut short: got %v %v %q", obj, keys, where)
	}
	if obj, _, _ := locate(body[:12], &mcp.CallToolResult{}); obj != nil {
		t.Errorf("a body cut inside its code was accepted: %v", obj)
	}
}

func TestSplitCommand(t *testing.T) {
	got, err := splitCommand(`A=1 npx -y "@scope/pkg" --h 'Authorization: Bearer x' a\ b "q\"uote"`)
	want := []string{"A=1", "npx", "-y", "@scope/pkg", "--h", "Authorization: Bearer x", "a b", `q"uote`}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := splitCommand(`npx "open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestConformanceFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"-url", "http://x/mcp", "-cmd", "x"}, {"-cmd", "x", "-header", "A: b"}, {"-url", "http://x", "-header", "bad"}, {"-url", "http://x", "-fields", "code,nope"}} {
		if err := Run(context.Background(), args, nil, io.Discard, io.Discard); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
