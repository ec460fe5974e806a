package mcp

import "testing"

func TestMetaTrace(t *testing.T) {
	for raw, want := range map[string]traceMeta{
		`{"io.modelcontextprotocol/clientCapabilities":{"x":[1,{"traceparent":"no"}]},"traceparent":"00-a-b-01","tracestate":"k=v"}`: {"00-a-b-01", "k=v"},
		`{"traceparent":"00-a-b-01"}`: {Traceparent: "00-a-b-01"},
		`{"traceparent":7}`:           {},
		`{"progressToken":1}`:         {},
		`{"traceparent":"00-a-b-01",`: {Traceparent: "00-a-b-01"},
		`[]`:                          {},
	} {
		if got := metaTrace([]byte(raw)); got != want {
			t.Errorf("%s: %+v, want %+v", raw, got, want)
		}
	}
}
