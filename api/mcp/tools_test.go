package mcp

import (
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/openapi"
)

// TestPeopleOperationsAreNoTools checks that the operations the contract
// marks x-erpgate-audience: people never become tools, and that every other
// operation does.
func TestPeopleOperationsAreNoTools(t *testing.T) {
	doc, err := openapi.LoadSource()
	if err != nil {
		t.Fatal(err)
	}
	tools, err := buildTools(doc)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.name] = true
	}
	var people []string
	agents := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if forPeople(op) {
				people = append(people, op.OperationID)
				if names[op.OperationID] {
					t.Errorf("%s %s: %s is an operation of people but a tool", method, path, op.OperationID)
				}
				continue
			}
			agents++
			if !names[op.OperationID] {
				t.Errorf("%s %s: no tool %s", method, path, op.OperationID)
			}
		}
	}
	slices.Sort(people)
	if want := []string{"decide_approval", "get_audit", "list_approvals", "list_handovers"}; !slices.Equal(people, want) {
		t.Errorf("operations of people %v, want %v", people, want)
	}
	if len(tools) != agents {
		t.Errorf("%d tools, want one per operation for agents (%d)", len(tools), agents)
	}
}

// TestForPeople checks the mark: only the value people leaves an operation
// out.
func TestForPeople(t *testing.T) {
	for _, tt := range []struct {
		ext  map[string]any
		want bool
	}{
		{nil, false},
		{map[string]any{"x-erpgate-audience": "people"}, true},
		{map[string]any{"x-erpgate-audience": "agents"}, false},
		{map[string]any{"x-erpgate-audience": true}, false},
		{map[string]any{"x-other": "people"}, false},
	} {
		if got := forPeople(&openapi3.Operation{Extensions: tt.ext}); got != tt.want {
			t.Errorf("forPeople(%v) = %v, want %v", tt.ext, got, tt.want)
		}
	}
}

// TestAnnotationsNeedAllFourHints checks that an operation without the
// x-erpgate-tool extension, with a hint missing, an unknown key or a
// read-only destructive claim is no tool.
func TestAnnotationsNeedAllFourHints(t *testing.T) {
	all := map[string]any{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true}
	if a, err := annotations(&openapi3.Operation{Extensions: map[string]any{toolExtension: all}}); err != nil ||
		a.ReadOnlyHint || !*a.DestructiveHint || !a.IdempotentHint || !*a.OpenWorldHint {
		t.Errorf("all four hints: %+v, %v", a, err)
	}
	for name, ext := range map[string]any{
		"no extension":         nil,
		"a hint missing":       map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true},
		"an unknown key":       map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true, "cheap": true},
		"not booleans":         map[string]any{"readOnlyHint": "yes", "destructiveHint": false, "idempotentHint": true, "openWorldHint": true},
		"read-only destroying": map[string]any{"readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true},
	} {
		op := &openapi3.Operation{Extensions: map[string]any{}}
		if ext != nil {
			op.Extensions[toolExtension] = ext
		}
		if _, err := annotations(op); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
