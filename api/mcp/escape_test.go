package mcp

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendIsEncodingJSON checks the direct path's own writing of the
// text block and the structured content against encoding/json's, with
// HTML escaping, for strings and bodies of every kind of byte: control
// characters, HTML, U+2028 and U+2029, invalid UTF-8, whitespace, names
// given twice, and random bytes and JSON.
func TestAppendIsEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", `quote " and \ backslash`, "\b\f\n\r\t\x00\x01\x1f\x7f", "<script>&amp;</script>",
		"line\u2028para\u2029", "\xe2\x80", "\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa", "bad \xff\xfe utf-8 \xc3", "é ü 日本 🙂",
		`{"a":"<b> & </b>","n":1.50,"u":"\u00e9\u2028"}`, "{ \"spaced\" : [ 1 , 2 ] ,\n \"x\" : { } }",
		"{\"s\":\"a \\\" b \\\\\",\"t\":\"\\\\\",\"w\":\" \\t \"}", "{\"raw\":\"\u2028 <&> \u2029\",\"esc\":\"\\u003c\"}",
		`{"twice":1,"twice":2}`, "{\"bad\":\"\xff\"}", `{"broken":`, `{"a":1} {"b":2}`, `{"a":[1,2,{"b":null}],"c":true}`,
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("{}[]\":,\\ \t\nab01<>&\xe2\x80\xa8\xa9\xff")
	for range 2000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for range 500 {
		v := map[string]any{"s": cases[r.IntN(len(cases))], "n": r.Float64(), "l": []any{cases[r.IntN(len(cases))], nil, true}}
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, []byte(c)); !bytes.Equal(got, want) {
			t.Errorf("string %q:\n got %s\nwant %s", c, got, want)
		}
		want = nil
		if b, err := json.Marshal(json.RawMessage(c)); err == nil {
			want = append([]byte(`,"structuredContent":`), b...)
		}
		if got := appendStructured(nil, []byte(c)); !bytes.Equal(got, want) {
			t.Errorf("structured content %q:\n got %s\nwant %s", c, got, want)
		}
	}
}
