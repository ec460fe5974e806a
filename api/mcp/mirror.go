package mcp

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
)

// An argument of an x-mcp-header (run_id, Mcp-Param-Run-Id) sent without
// its header.
//
// The 2026-07-28 transport has clients mirror such an argument into its
// header, so that intermediaries can route on it without reading the
// body, and servers refuse a call whose header is missing or disagrees
// with the body (HeaderMismatch, -32020). Clients that do not know the
// tool's schema cannot mirror: mcp-remote, the bridge Claude Desktop and
// Cursor reach HTTP servers through, passes a stdio client's calls on with
// Mcp-Method and Mcp-Name only, and a client calls before tools/list
// without it. The gateway takes such a call as if the client had mirrored
// the argument: the body is what it runs, and the header only a copy for
// whoever routes before it. Run state lives in the shared records, so a
// call routed without its run's header runs right on any replica, and a
// run id is the agent's own label, no credential an intermediary could
// be bypassed on. A header that is there and disagrees with its argument
// is still refused: then an intermediary acted on another value than the
// one the gateway would run.

// mirrorParams sets on header, for a tools/call of the revision of the
// request headers (versionHeaders) in body, the Mcp-Param-* header of each
// argument with an x-mcp-header that the call has and the header lacks,
// encoded as a client mirrors it (SEP-2243: a string as it is, or
// Base64-wrapped when it is no plain header text; an integer in decimal; a
// boolean as true or false). An argument of any other type is not
// mirrored: the SDK refuses the call as it came.
func (s *Server) mirrorParams(header http.Header, body []byte) {
	if header.Get("Mcp-Protocol-Version") < versionHeaders || header.Get("Mcp-Method") != "tools/call" {
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return
	}
	t := s.tools[msg.Params.Name]
	if t == nil {
		return
	}
	for arg, name := range t.headers {
		key := "Mcp-Param-" + name
		raw, ok := msg.Params.Arguments[arg]
		if !ok || len(header.Values(key)) > 0 {
			continue
		}
		if v, ok := mirrored(raw); ok {
			header.Set(key, v)
		}
	}
}

// mirrored is the header value a client of SEP-2243 sends for the
// argument raw, and whether it sends one the SDK can read (not for null,
// an empty string, a fraction, an integer past JavaScript's safe range,
// an array or an object).
func mirrored(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		if plainHeader(x) {
			return x, true
		}
		if x == "" {
			// The SDK takes an empty header for none.
			return "", false
		}
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(x)) + "?=", true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53-1 {
			return "", false
		}
		return strconv.FormatInt(int64(x), 10), true
	}
	return "", false
}
