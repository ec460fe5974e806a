package mcp

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestProtocolMembersLeaveOutWhatChangesPerCall: two _meta values that
// differ only in a trace context or a progress token keep one entry of
// the taken _meta values; any change of a protocol member is another.
func TestProtocolMembersLeaveOutWhatChangesPerCall(t *testing.T) {
	const own = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	key := func(raw string) []byte {
		t.Helper()
		k, ok := protocolMembers(jsontext.Value(raw))
		if !ok {
			t.Fatalf("%s: not read", raw)
		}
		return k
	}
	a := key(`{` + own + `,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)
	b := key(`{"progressToken":7,` + own + `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`)
	if !bytes.Equal(a, b) {
		t.Errorf("keys differ with only the trace context and a progress token changed:\n%q\n%q", a, b)
	}
	for _, other := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{` + own + `,"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`,
	} {
		if bytes.Equal(a, key(other)) {
			t.Errorf("%s has the key of another _meta", other)
		}
	}
	// With no member of another kind, the _meta is its own key.
	if own := `{` + own + `}`; string(key(own)) != own {
		t.Errorf("a _meta of the protocol's members only keyed as %q", key(own))
	}
	for _, bad := range []string{`[]`, `"x"`, `{"a":1`, `{"a":1}x`, `{"a":1,"a":2}`} {
		if _, ok := protocolMembers(jsontext.Value(bad)); ok {
			t.Errorf("%s read as a _meta object", bad)
		}
	}
}
