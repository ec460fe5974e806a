package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/errmap"
)

// dropPathEcho removes from a JSON object body the top-level fields that
// repeat one of the path's parameters with the same value, as bridges that
// send every tool argument as the body do (invoice_id of
// /invoices/{invoice_id}/post). A field of a path parameter's name with
// another value, or not a string, is INVALID_REQUEST naming it: the path
// says which record the call is about, and a body may not say otherwise.
// A body without such a field is returned as it came.
func dropPathEcho(r *http.Request, body []byte) ([]byte, error) {
	rc := chi.RouteContext(r.Context())
	if rc == nil || len(rc.URLParams.Keys) == 0 {
		return body, nil
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return body, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(trimmed, &fields) != nil {
		return body, nil // the handler's decoder names what is wrong
	}
	echoed := false
	for i, name := range rc.URLParams.Keys {
		raw, ok := fields[name]
		if !ok || name == "" || name == "*" {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil || v != rc.URLParams.Values[i] {
			return nil, errmap.Invalid(name, "must be the path's "+name+" when sent in the body too")
		}
		delete(fields, name)
		echoed = true
	}
	if !echoed {
		return body, nil
	}
	out, err := marshal(fields)
	if err != nil {
		return body, nil
	}
	return bytes.TrimSuffix(out, []byte("\n")), nil
}
