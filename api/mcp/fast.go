package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The direct path: a POST that is one tools/call of a known tool, in a
// protocol version whose transport the SDK serves without a session, is
// answered here, with the bytes the SDK's stateless JSON answer has, and
// without the SDK's per-request session (a connection, goroutines, several
// decodes of the body, its log lines). Every other request, and any call
// this path is not sure of, goes to the SDK unchanged.

// directVersions are the MCP-Protocol-Version values of the direct path:
// the versions the SDK serves before the standard request headers
// (Mcp-Method, Mcp-Name, Mcp-Param-*) of 2026-07-28.
var directVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// directID is the form of a request id the direct path echoes as it came:
// an integer of at most 15 digits, or a plain string.
var directID = regexp.MustCompile(`^(?:0|-?[1-9][0-9]{0,14}|"[A-Za-z0-9_.:/-]{1,64}")$`)

// direct serves r when it is a call the direct path can answer, and
// reports whether it did; when it did not, r is as it came (its body
// restored) for the SDK.
func (s *Server) direct(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" ||
		!directVersions[r.Header.Get("Mcp-Protocol-Version")] || r.Header.Get("Mcp-Session-Id") != "" ||
		!acceptsBoth(r.Header.Values("Accept")) || !hostAllowed(r) || r.Body == nil {
		return false
	}
	// Read the body within the SDK's bound; past it, the SDK answers.
	body, err := io.ReadAll(io.LimitReader(r.Body, sdk.DefaultMaxRequestBodyBytes+1))
	restore := func() bool {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return false
	}
	if err != nil || int64(len(body)) > sdk.DefaultMaxRequestBodyBytes {
		return restore()
	}
	t, id, args, ok := s.directCall(body)
	if !ok {
		return restore()
	}
	status, res, err := s.call(r.Context(), t, args, r.Header, r.RemoteAddr)
	if err != nil {
		// A protocol error, found before the REST handler ran: the SDK
		// words it.
		return restore()
	}
	out, err := encodeResponse(id, status, res)
	if err != nil {
		return restore()
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return true
}

// directCall decodes body when it is exactly one tools/call request of a
// known tool: members jsonrpc "2.0", id, method and params, params with
// name and arguments only, no member twice.
func (s *Server) directCall(body []byte) (t *tool, id jsontext.Value, args json.RawMessage, ok bool) {
	var msg map[string]jsontext.Value
	if jsonv2.Unmarshal(body, &msg) != nil || len(msg) != 4 ||
		string(msg["jsonrpc"]) != `"2.0"` || string(msg["method"]) != `"tools/call"` || !directID.Match(msg["id"]) {
		return nil, nil, nil, false
	}
	var params map[string]jsontext.Value
	if jsonv2.Unmarshal(msg["params"], &params) != nil || len(params) == 0 || len(params) > 2 {
		return nil, nil, nil, false
	}
	var name string
	if jsonv2.Unmarshal(params["name"], &name) != nil {
		return nil, nil, nil, false
	}
	t, ok = s.tools[name]
	if !ok {
		return nil, nil, nil, false
	}
	a, given := params["arguments"]
	if len(params) == 2 && !given {
		return nil, nil, nil, false
	}
	if given && a.Kind() == 'n' {
		// The SDK keeps no null arguments.
		a = nil
	}
	return t, msg["id"], json.RawMessage(a), true
}

// encodeResponse writes the JSON-RPC answer with the tool result of the
// REST answer (see result) as the SDK writes it: encoding/json with HTML
// escaping for the result, the structured content compacted.
func encodeResponse(id jsontext.Value, status int, body []byte) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, 2*len(body)+128))
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"result":{"content":[{"type":"text","text":`)
	enc := json.NewEncoder(buf)
	if err := enc.Encode(string(bytes.TrimSuffix(body, []byte("\n")))); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - 1) // the encoder's newline
	buf.WriteString("}]")
	if status >= 400 {
		buf.WriteString(`,"isError":true}}`)
		return buf.Bytes(), nil
	}
	if obj := bytes.TrimSpace(body); len(obj) > 0 && obj[0] == '{' {
		at := buf.Len()
		buf.WriteString(`,"structuredContent":`)
		if enc.Encode(json.RawMessage(obj)) == nil {
			buf.Truncate(buf.Len() - 1)
		} else {
			buf.Truncate(at) // not JSON: no structured content
		}
	}
	buf.WriteString("}}")
	return buf.Bytes(), nil
}

// acceptsBoth reports whether Accept takes both JSON and an event stream,
// as the SDK requires of a POST.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for _, raw := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// hostAllowed reports whether the SDK's DNS rebinding protection lets r
// through: a request to a loopback listener must name a loopback host.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !loopback(local.String()) {
		return true
	}
	return loopback(r.Host)
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
