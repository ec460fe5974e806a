package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// agentTools are the agents' operations, the tools; peopleOperations the
// operations of people.
var (
	agentTools = []string{"get_invoice", "run_three_way_match", "request_approval", "post_invoice", "hold_invoice",
		"get_hold", "get_case", "get_purchase_order", "get_goods_receipt", "search_suppliers", "get_supplier",
		"get_approval", "hand_over", "get_run"}
	peopleOperations = []string{"list_approvals", "decide_approval", "list_handovers", "get_audit"}
)

// TestServedContracts: the agents' contract, in every form the gateway
// serves it, names no operation of people, and what an OpenAPI bridge
// offers from it (every operation with an operationId) is the agents'
// tools; the people's contract holds exactly the operations of people and
// asks for a key even where the agents need none.
func TestServedContracts(t *testing.T) {
	gw, err := New(context.Background(), Config{PublicURL: "https://erpgate.example.net"})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(gw.Handler())
	defer srv.Close()
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return b
	}
	for _, path := range []string{"/openapi.json", "/openapi.json?flat=1", "/openapi.yaml", "/swagger.json"} {
		body := string(get(path))
		for _, op := range peopleOperations {
			if strings.Contains(body, op) {
				t.Errorf("%s names %s", path, op)
			}
		}
	}
	for _, path := range []string{"/openapi.json", "/openapi.json?flat=1"} {
		if got, want := bridgeView(t, get(path)), slices.Sorted(slices.Values(agentTools)); !slices.Equal(got, want) {
			t.Errorf("a bridge over %s offers %v, want the agents' tools %v", path, got, want)
		}
	}
	people := get("/people/openapi.json")
	if got, want := bridgeView(t, people), slices.Sorted(slices.Values(peopleOperations)); !slices.Equal(got, want) {
		t.Errorf("/people/openapi.json holds %v, want %v", got, want)
	}
	yaml := string(get("/people/openapi.yaml"))
	for _, op := range peopleOperations {
		if !strings.Contains(yaml, "operationId: "+op+"\n") {
			t.Errorf("/people/openapi.yaml has no %s", op)
		}
	}
	// Without -api-keys the agents need no key; the people always do.
	var agents, ppl struct {
		Security []map[string][]string `json:"security"`
	}
	if err := json.Unmarshal(get("/openapi.json"), &agents); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(people, &ppl); err != nil {
		t.Fatal(err)
	}
	if len(agents.Security) != 1 || len(agents.Security[0]) != 0 {
		t.Errorf("the agents' security %v, want the one empty requirement", agents.Security)
	}
	if len(ppl.Security) != 2 || ppl.Security[0]["bearer_auth"] == nil || ppl.Security[1]["api_key"] == nil {
		t.Errorf("the people's security %v, want bearer_auth or api_key", ppl.Security)
	}
}

// bridgeView is what an OpenAPI-to-MCP bridge makes tools of: the
// operationId of every operation of doc, sorted.
func bridgeView(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, item := range d.Paths {
		for _, method := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
			var op struct {
				OperationID string `json:"operationId"`
			}
			if raw, ok := item[method]; ok {
				if err := json.Unmarshal(raw, &op); err != nil {
					t.Fatal(err)
				}
				if op.OperationID != "" {
					ids = append(ids, op.OperationID)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}
