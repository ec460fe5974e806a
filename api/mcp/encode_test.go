package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
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
	for _, c := range cases {
		got, err := encodeResponse(jsontext.Value(`"x-1"`), c.status, []byte(c.body))
		if err != nil {
			t.Fatalf("%q: %v", c.body, err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(result(c.status, []byte(c.body))); err != nil {
			t.Fatal(err)
		}
		want := `{"jsonrpc":"2.0","id":"x-1","result":` + string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) + `}`
		if string(got) != want {
			t.Errorf("%d %q:\n got %s\nwant %s", c.status, c.body, got, want)
		}
	}
}
