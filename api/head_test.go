package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/openapi"
)

// TestErrorHeadsFitOverContract sweeps every operation of the contract
// with bad input, one argument at a time: a value outside an enum (also
// one that reads like an error value), a string far over its length or off
// its pattern, an unknown field with a long name, a number where a string
// belongs. Every error body the gateway answers must carry code, retryable
// and next_action within its first errmap.HeadLimit bytes, since some
// bridges pass on no more; an enum list that does not fit there is in
// details.allowed.
func TestErrorHeadsFitOverContract(t *testing.T) {
	doc, err := openapi.LoadSource()
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t)
	long := strings.Repeat("x", 500)
	bad := func(sc *openapi3.Schema) []any {
		switch {
		case sc == nil:
			return []any{long}
		case len(sc.Enum) > 0:
			return []any{"not_a_value", "unknown", ""}
		case sc.Type.Is("string"):
			return []any{long, "~~", 12345}
		case sc.Type.Is("integer"), sc.Type.Is("number"):
			return []any{-1, 1e12, long}
		case sc.Type.Is("array"):
			return []any{[]any{long}, long}
		}
		return []any{long}
	}
	calls, refused, listed := 0, 0, 0
	var paths []string
	for p := range doc.Paths.Map() {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for method, op := range doc.Paths.Value(p).Operations() {
			base := exampleBody(op)
			// An operation of people is swept as a person with its scope:
			// without a key the agent is refused before its input is read.
			var hdr []string
			switch op.Extensions["x-erpgate-scope"] {
			case api.ScopeApprove, api.ScopeReview:
				hdr = []string{as("m.keller")}
			case api.ScopeAudit:
				hdr = []string{as("a.auditor")}
			}
			pathArgs := map[string]string{}
			var params []*openapi3.Parameter
			for _, pr := range op.Parameters {
				pm := pr.Value
				if pm.In == "path" {
					pathArgs[pm.Name] = fmt.Sprint(pm.Example)
				}
				if pm.In == "path" || pm.In == "query" {
					params = append(params, pm)
				}
			}
			target := func(over map[string]string, q url.Values) string {
				out := p
				for k, v := range pathArgs {
					if o, ok := over[k]; ok {
						v = o
					}
					out = strings.ReplaceAll(out, "{"+k+"}", url.PathEscape(v))
				}
				if len(q) > 0 {
					out += "?" + q.Encode()
				}
				return out
			}
			check := func(what string, r result) {
				t.Helper()
				calls++
				if r.status < 400 {
					return
				}
				refused++
				var e struct {
					NextAction string         `json:"next_action"`
					Details    map[string]any `json:"details"`
				}
				if err := json.Unmarshal(r.body, &e); err != nil {
					t.Errorf("%s %s %s: %v", method, p, what, err)
					return
				}
				na := []byte(`"next_action":"` + e.NextAction + `"`)
				if end := bytes.Index(r.body, na) + len(na); end > errmap.HeadLimit || end < len(na) {
					t.Errorf("%s %s %s: next_action ends at byte %d, over %d: %s", method, p, what, end, errmap.HeadLimit, r.body)
				}
				if _, ok := e.Details["allowed"]; ok {
					listed++
				}
			}
			for _, pm := range params {
				var sc *openapi3.Schema
				if pm.Schema != nil {
					sc = pm.Schema.Value
				}
				for _, v := range bad(sc) {
					if pm.In == "path" {
						check("path "+pm.Name, s.do(method, target(map[string]string{pm.Name: fmt.Sprint(v)}, nil), bodyOrNil(base), hdr...))
					} else if v != "" { // an empty query value is taken as absent
						check("query "+pm.Name, s.do(method, target(nil, url.Values{pm.Name: {fmt.Sprint(v)}}), bodyOrNil(base), hdr...))
					}
				}
			}
			check("unknown query parameter", s.do(method, target(nil, url.Values{strings.Repeat("q", 300): {"1"}}), bodyOrNil(base), hdr...))
			if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
				continue
			}
			sc := op.RequestBody.Value.Content.Get("application/json").Schema.Value
			var props []string
			for name := range sc.Properties {
				props = append(props, name)
			}
			sort.Strings(props)
			for _, name := range props {
				for _, v := range bad(sc.Properties[name].Value) {
					b := copyBody(base)
					b[name] = v
					check("body "+name, s.do(method, target(nil, nil), b, hdr...))
				}
			}
			for _, name := range []string{strings.Repeat("f", 64), strings.Repeat("f", 300)} {
				b := copyBody(base)
				b[name] = 1
				check("unknown body field", s.do(method, target(nil, nil), b, hdr...))
			}
		}
	}
	t.Logf("%d calls, %d refused, %d with details.allowed", calls, refused, listed)
	if refused < 100 || listed == 0 {
		t.Errorf("%d calls refused, %d listing details.allowed; the sweep reached too little", refused, listed)
	}
}

// exampleBody is the first example of an operation's JSON request body, or
// nil.
func exampleBody(op *openapi3.Operation) map[string]any {
	if op.RequestBody == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil {
		return nil
	}
	names := make([]string, 0, len(mt.Examples))
	for n := range mt.Examples {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if m, ok := mt.Examples[n].Value.Value.(map[string]any); ok {
			return m
		}
	}
	return map[string]any{}
}

func copyBody(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func bodyOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}
