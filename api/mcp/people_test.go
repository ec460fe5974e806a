package mcp_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPeopleOperationsCannotBeCalled checks that an agent cannot reach the
// operations of people over MCP: they are not listed, and a call by name is
// refused as an unknown tool, before any REST handler runs.
func TestPeopleOperationsCannotBeCalled(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	people := map[string]map[string]any{
		"list_approvals":  {},
		"decide_approval": {"approval_id": "A0000001", "decision": "approve", "reason": "Looks fine to me."},
		"list_handovers":  {},
		"get_audit":       {},
	}
	for _, tl := range res.Tools {
		if _, ok := people[tl.Name]; ok {
			t.Errorf("tools/list shows %s, an operation of people", tl.Name)
		}
	}
	for name, args := range people {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		cancel()
		// An unknown tool is a protocol error, not a tool result: no REST
		// handler answered.
		if err == nil {
			t.Errorf("%s: called as a tool: %+v", name, r)
		}
	}
}
