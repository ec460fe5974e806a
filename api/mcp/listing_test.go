package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/openapi"
)

// TestAnnotationsAreTheContracts checks that every operation for agents
// carries x-erpgate-tool with the four hints, and that each tool's
// annotations are exactly those hints.
func TestAnnotationsAreTheContracts(t *testing.T) {
	s := newStack(t)
	res, err := s.connect().ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	for _, item := range s.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ext, ok := op.Extensions["x-erpgate-tool"].(map[string]any)
			if op.Extensions["x-erpgate-audience"] == "people" {
				if ok {
					t.Errorf("%s: an operation of people has x-erpgate-tool", op.OperationID)
				}
				continue
			}
			if !ok || len(ext) != 4 {
				t.Errorf("%s: x-erpgate-tool is %v, want the four hints", op.OperationID, op.Extensions["x-erpgate-tool"])
				continue
			}
			tl := tools[op.OperationID]
			if tl == nil || tl.Annotations == nil {
				t.Errorf("%s: no tool or no annotations", op.OperationID)
				continue
			}
			a := tl.Annotations
			got := map[string]any{"readOnlyHint": a.ReadOnlyHint, "idempotentHint": a.IdempotentHint}
			if a.DestructiveHint != nil {
				got["destructiveHint"] = *a.DestructiveHint
			}
			if a.OpenWorldHint != nil {
				got["openWorldHint"] = *a.OpenWorldHint
			}
			for k, v := range ext {
				if got[k] != v {
					t.Errorf("%s: %s is %v, the contract says %v", op.OperationID, k, got[k], v)
				}
			}
			if a.Title != op.Summary {
				t.Errorf("%s: title %q, want the summary %q", op.OperationID, a.Title, op.Summary)
			}
		}
	}
	if d := tools["post_invoice"].Annotations.DestructiveHint; d == nil || !*d {
		t.Errorf("post_invoice is not destructive")
	}
}

// TestOutputSchemaAndStructuredContent checks that each tool's output
// schema is the object schema of its 200 body, and that a success carries
// structuredContent, the JSON of its text, that fits the schema.
func TestOutputSchemaAndStructuredContent(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tl := range res.Tools {
		out, _ := tl.OutputSchema.(map[string]any)
		if out["type"] != "object" {
			t.Errorf("%s: output schema %v, want an object schema", tl.Name, tl.OutputSchema)
			continue
		}
		schemas[tl.Name] = out
	}
	for _, item := range s.doc.Paths.Map() {
		for _, op := range item.Operations() {
			out := schemas[op.OperationID]
			if out == nil {
				continue
			}
			want := op.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
			props, _ := out["properties"].(map[string]any)
			if len(props) != len(want.Properties) {
				t.Errorf("%s: output schema has %d properties, the 200 body %d", op.OperationID, len(props), len(want.Properties))
			}
			for name := range want.Properties {
				if props[name] == nil {
					t.Errorf("%s: output schema lacks %s", op.OperationID, name)
				}
			}
		}
	}
	successes := []struct {
		tool string
		args map[string]any
	}{
		{"get_invoice", map[string]any{"invoice_id": "5105600101"}},
		{"run_three_way_match", map[string]any{"invoice_id": "5105600101"}},
		{"run_three_way_match", map[string]any{"invoice_id": "5105600102"}},
		{"search_suppliers", map[string]any{"name": "acme"}},
		{"hold_invoice", map[string]any{"invoice_id": "5105600105", "reason": "GR_MISSING for PO 4500018822 item 20"}},
	}
	for _, c := range successes {
		r := call(t, cs, c.tool, c.args)
		if r.IsError {
			t.Errorf("%s: %s", c.tool, text(t, r))
			continue
		}
		if !equalJSON(t, r.StructuredContent, []byte(text(t, r))) {
			t.Errorf("%s: structuredContent %v is not the text %s", c.tool, r.StructuredContent, text(t, r))
		}
		fits(t, c.tool, schemas[c.tool], r.StructuredContent)
	}
	// An error result of a tool with an output schema reaches the Go SDK
	// client as a result: it carries no structuredContent, so no client
	// validates the error against the success schema.
	r := call(t, cs, "get_invoice", map[string]any{"invoice_id": "5105600999"})
	if !r.IsError || r.StructuredContent != nil || object(t, r)["code"] != "INVOICE_NOT_FOUND" {
		t.Errorf("error result: isError %v, structuredContent %v, %s", r.IsError, r.StructuredContent, text(t, r))
	}
}

// fits checks v against the keywords of a tool's output schema that shape
// an object: type, required properties, closed objects and enums.
func fits(t *testing.T, at string, schema map[string]any, v any) {
	t.Helper()
	if schema == nil {
		return
	}
	if enum, ok := schema["enum"].([]any); ok {
		b, _ := json.Marshal(v)
		found := false
		for _, e := range enum {
			eb, _ := json.Marshal(e)
			found = found || string(eb) == string(b)
		}
		if !found {
			t.Errorf("%s: %s is not one of %v", at, b, enum)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, ok := x[r.(string)]; !ok {
					t.Errorf("%s: lacks the required %s", at, r)
				}
			}
		}
		for k, e := range x {
			p, _ := props[k].(map[string]any)
			if p == nil && schema["additionalProperties"] == false {
				t.Errorf("%s: %s is not in the output schema", at, k)
			}
			fits(t, at+"."+k, p, e)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for _, e := range x {
			fits(t, at+"[]", items, e)
		}
	}
}

// TestToolsListIsPrivateWithCredentials checks the cacheScope of
// tools/list: private when the list depends on the caller's key, public
// without credentials configured.
func TestToolsListIsPrivateWithCredentials(t *testing.T) {
	open, err := newStack(t).connect().ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if open.CacheScope != "public" {
		t.Errorf("without credentials configured: cacheScope %q, want public", open.CacheScope)
	}
	const key = "k-list"
	s := newStack(t, func(o *api.Options) {
		o.Credentials = []api.Credential{{Name: "agent", KeySHA256: sha256.Sum256([]byte(key)), Scopes: []string{api.ScopeRead}}}
	})
	list, err := s.connect("X-API-Key: "+key).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if list.CacheScope != "private" {
		t.Errorf("with credentials configured: cacheScope %q, want private", list.CacheScope)
	}
}

// TestNoCredentialsIs401 checks that with credentials configured a request
// to /mcp without any is refused over HTTP, before JSON-RPC: 401, a Bearer
// challenge, and the five-field UNAUTHENTICATED body REST gives.
func TestNoCredentialsIs401(t *testing.T) {
	s := newStack(t, func(o *api.Options) {
		o.Credentials = []api.Credential{{Name: "agent", KeySHA256: sha256.Sum256([]byte("k")), Scopes: []string{api.ScopeRead}}}
	})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401: %s", resp.StatusCode, body)
	}
	if c := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(c, "Bearer") {
		t.Errorf("WWW-Authenticate %q, want a Bearer challenge", c)
	}
	// POST /handovers has no path ids to add to the details.
	status, want := s.rest("POST", "/handovers", map[string]any{})
	if status != http.StatusUnauthorized || string(body) != string(want) {
		t.Errorf("body differs from REST's (%d)\n got: %s\nwant: %s", status, body, want)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || len(m) != 5 || m["code"] != "UNAUTHENTICATED" {
		t.Errorf("body %s, want the five-field UNAUTHENTICATED", body)
	}
	// The Go SDK client sees the refusal when it connects.
	client := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
	if cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp"}, nil); err == nil {
		cs.Close()
		t.Errorf("connected without credentials")
	}
}

// TestServerInfoVersionIsTheContracts: the version the server announces is
// the contract's info.version, which versions the tools it lists.
func TestServerInfoVersionIsTheContracts(t *testing.T) {
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc.Info.Version = "7.1.0-contract"
	srv, err := mcp.New(http.NotFoundHandler(), doc, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo; got.Name != "erpgate" || got.Version != "7.1.0-contract" {
		t.Errorf("serverInfo %+v, want erpgate at the contract's version 7.1.0-contract", got)
	}
}
