package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	restapi "github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/errmap"
)

// A tools/call refused before its operation ran reaches no REST handler,
// whose access log writes the one line of every other call: the endpoint
// has the REST handler write it (LogRefusedCall), with the tool's name as
// asked for, the refusal's code and the arguments as the log writes a
// call's. A refusal answered as a tool result (a path argument of the
// wrong type, a missing one) is logged where it is made, on either path
// (refused); one answered as a JSON-RPC error (an unknown tool, arguments
// that are not an object, a header that disagrees with the body), which
// only the SDK's path answers, is logged from the answer (logRPCRefusal).

// pathHeader carries the MCP request's path from the HTTP handler to the
// tool handler, which sees only request headers, as remoteAddrHeader
// carries the peer's address.
const pathHeader = "Erpgate-Mcp-Path"

// maxTee bounds what the SDK's path keeps of an answer to tell a JSON-RPC
// error from a result: an error is far shorter.
const maxTee = 16 << 10

// refused logs the call ct of a tool, with the arguments args and the
// request headers header, refused with code before its operation ran.
func (s *Server) refused(ctx context.Context, header http.Header, ct *callTrace, args json.RawMessage, code errmap.Code) {
	if s.logRefused == nil {
		s.log.DebugContext(ctx, "mcp tool call refused", "tool", ct.tool, "code", code)
		return
	}
	s.logRefused(ctx, restapi.RefusedCall{Method: http.MethodPost, Path: ct.path, Header: header, Operation: ct.tool,
		Args: args, Code: string(code), Start: ct.start})
}

// logRPCRefusal logs the request r with the body body when it is one
// tools/call and answer, the answer the SDK's path wrote (as far as it was
// kept), is a JSON-RPC error, in the call's trace context.
func (s *Server) logRPCRefusal(ctx context.Context, r *http.Request, body, answer []byte, start time.Time) {
	code, ok := rpcRefusal(answer)
	if !ok {
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta      json.RawMessage `json:"_meta"`
			Name      json.RawMessage `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != methodToolsCall {
		return
	}
	var name string
	_ = json.Unmarshal(msg.Params.Name, &name)
	ct := callTrace{meta: metaTrace(jsontext.Value(msg.Params.Meta)), header: r.Header}
	s.logRefused(ct.context(ctx), restapi.RefusedCall{Method: r.Method, Path: r.URL.Path, Header: r.Header, Operation: name,
		Args: msg.Params.Arguments, Code: code, Start: start})
}

// rpcRefusal reports whether answer is a JSON-RPC error response, and the
// five-field code in its data (INVALID_REQUEST when its data, cut off or
// missing, does not say).
func rpcRefusal(answer []byte) (code string, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(answer))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return "", false
		}
		switch name.String() {
		case "result":
			return "", false
		case "error":
			var e struct {
				Data struct {
					Code string `json:"code"`
				} `json:"data"`
			}
			v, err := dec.ReadValue()
			if err != nil || json.Unmarshal(v, &e) != nil || e.Data.Code == "" {
				return string(errmap.InvalidRequest), true
			}
			return e.Data.Code, true
		}
		if dec.SkipValue() != nil {
			return "", false
		}
	}
	return "", false
}
