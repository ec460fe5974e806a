package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEncodeResponseIsTheSDKs checks the direct path's answer against the
// SDK's encoding of the same result (its JSON-RPC layer marshals the result
// with encoding/json, HTML escaping off, around the result's own
// MarshalJSON), for bodies the HTTP comparison cannot provoke.
func TestEncodeResponseIsTheSDKs(t *testing.T) {
	cases := []struct {
		status int
		body   string
	}{
		{200, `{"a":"<b> & </b>","n":1.50,"u":"\u00e9\u2028"}` + "\n"},
		{200, "{ \"spaced\" : [ 1 , 2 ] ,\n \"x\" : { } }"},
		{200, `{"broken":`},
		{200, `[1,2]`},
		{200, ``},
		{200, `"a string"`},
		{201, `{"created":true}`},
		{404, `{"code":"INVOICE_NOT_FOUND","message":"a < b & c > d"}` + "\n"},
		{500, `not json <at all>`},
	}
	impl := &sdk.Implementation{Name: "erp<gate>", Version: "1.0.0 & up"}
	info, err := json.Marshal(impl)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		for _, v7 := range []bool{false, true} {
			var serverInfo []byte
			res := result(c.status, []byte(c.body))
			if v7 {
				// The SDK's result of 2026-07-28: resultType complete (set
				// here as its decoder sets it), the server in _meta.
				serverInfo = info
				var r sdk.CallToolResult
				if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &r); err != nil {
					t.Fatal(err)
				}
				r.Content, r.StructuredContent, r.IsError = res.Content, res.StructuredContent, res.IsError
				r.Meta = sdk.Meta{"io.modelcontextprotocol/serverInfo": impl}
				res = &r
			}
			got, err := encodeResponse(jsontext.Value(`"x-1"`), c.status, []byte(c.body), serverInfo)
			if err != nil {
				t.Fatalf("%q: %v", c.body, err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(res); err != nil {
				t.Fatal(err)
			}
			want := `{"jsonrpc":"2.0","id":"x-1","result":` + string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) + `}`
			if string(got) != want {
				t.Errorf("%d %q (2026-07-28 %v):\n got %s\nwant %s", c.status, c.body, v7, got, want)
			}
		}
	}
}
