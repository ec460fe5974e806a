package mcp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The declared capabilities match the methods the server answers: tools and
// (an empty list of) prompts are declared and answered; completions are
// neither.
func TestCapabilitiesMatchTheMethods(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	ctx := context.Background()

	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil {
		t.Error("tools capability not declared")
	}
	if caps.Prompts == nil {
		t.Error("prompts capability not declared, but prompts/list is answered")
	} else if caps.Prompts.ListChanged {
		t.Error("prompts.listChanged declared for a list that never changes")
	}
	if caps.Completions != nil {
		t.Error("completions capability declared, but nothing can be completed")
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	if len(prompts.Prompts) != 0 {
		t.Errorf("prompts/list = %d prompts, want none", len(prompts.Prompts))
	}

	_, err = cs.Complete(ctx, &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/prompt", Name: "any"},
		Argument: sdk.CompleteParamsArgument{Name: "arg", Value: "x"},
	})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("completion/complete: err = %v, want method not found (%d)", err, jsonrpc.CodeMethodNotFound)
	}
}
