package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/errmap"
)

// The refusals of the MCP transport, in the form the official SDKs
// surface: every one is a JSON-RPC error response whose data holds the
// five fields, as a tools/call error is a tool result holding them.
//
// The HTTP status stays the one the transport gives: 400 for a malformed
// request, a header that disagrees with the body (HeaderMismatch, -32020)
// and, from 2026-07-28 on, invalid params; 404 for an unknown method from
// 2026-07-28 on; 403, 405, 413 and 415 for a foreign Host or Origin, a
// method other than POST, an oversize body and a body not sent as JSON.
// The 2026-07-28 revision prescribes them and the official conformance
// suite checks them; the Go SDK's client reads the JSON-RPC error of any
// such response (an error that errors.As turns into *jsonrpc.Error, with
// the five fields in its Data), and the TypeScript SDK's client takes a
// 400's JSON-RPC error as the request's own error (a ProtocolError with
// the five fields in data) and puts the body of any other in its error's
// message. A plain-text body, which the SDK's handler writes for its own
// refusals, the Go SDK's client drops: here it becomes the JSON-RPC error.
// Only 401, the HTTP authentication MCP clients answer with their
// authorization flow, keeps the REST form (mcp.go).

// rpcWriter holds back a response of 400 or more from the SDK's handler
// and writes it as a JSON-RPC error with the five fields in its data
// (finish). Any other response passes as it is written.
type rpcWriter struct {
	http.ResponseWriter
	r *http.Request
	// body is the request's body, as far as it was read, for the id of
	// the request a refusal answers.
	body   []byte
	status int
	held   bytes.Buffer
	hold   bool
	// tee keeps what is answered, up to maxTee bytes, in teed: for the
	// access log of a refused tools/call (logRPCRefusal).
	tee  bool
	teed []byte
}

func (w *rpcWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if status >= http.StatusBadRequest {
		w.hold = true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.hold {
		return w.held.Write(b)
	}
	if w.tee && len(w.teed) < maxTee {
		w.teed = append(w.teed, b[:min(len(b), maxTee-len(w.teed))]...)
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends what is written so far, unless it is held back.
func (w *rpcWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.hold {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *rpcWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the held-back refusal, if any.
func (w *rpcWriter) finish() {
	if !w.hold {
		return
	}
	h := w.Header()
	var out []byte
	if jsonContent(h.Get("Content-Type")) {
		out = withFields(w.held.Bytes())
	}
	if out == nil {
		e, code := transportRefusal(w.status, w.held.Bytes(), w.r, w.body)
		out = rpcError(requestID(w.body), code, e.Message, e.Marshal())
	}
	h.Del("X-Content-Type-Options")
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(out)
	if w.tee {
		w.teed = out
	}
}

// rpcResponse is a JSON-RPC error response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *rpcErrorObject `json:"error"`
}

type rpcErrorObject struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// rpcError encodes a JSON-RPC error response; id is null when nil.
func rpcError(id json.RawMessage, code int64, message string, data []byte) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	out, err := marshalNoEscape(rpcResponse{JSONRPC: "2.0", ID: id, Error: &rpcErrorObject{Code: code, Message: message, Data: data}})
	if err != nil {
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return out
}

// withFields returns the JSON-RPC error response raw with the five fields
// in its data (protocolFields), or nil when raw is no JSON-RPC error
// response. Data that already holds the five fields is kept; data that is
// an object of other members (the versions of an unsupported protocol
// version, -32022) gets them beside its own.
func withFields(raw []byte) []byte {
	var resp rpcResponse
	if json.Unmarshal(raw, &resp) != nil || resp.JSONRPC != "2.0" || resp.Error == nil {
		return nil
	}
	data, ok := mergeFields(resp.Error.Data, protocolFields(resp.Error.Code, resp.Error.Message))
	if !ok {
		return raw
	}
	return rpcError(resp.ID, resp.Error.Code, resp.Error.Message, data)
}

// mergeFields returns data with the five fields of e, and false when it
// holds them already or is not an object to add them to.
func mergeFields(data json.RawMessage, e *errmap.Error) (json.RawMessage, bool) {
	if len(bytes.TrimSpace(data)) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return e.Marshal(), true
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return nil, false
	}
	if _, ok := members["next_action"]; ok {
		return nil, false
	}
	// The five fields first, in their order, then the data's own members.
	five := e.Marshal()
	out := bytes.Clone(five[:len(five)-1])
	for _, k := range slices.Sorted(maps.Keys(members)) {
		if k == "code" || k == "message" || k == "retryable" || k == "details" {
			continue
		}
		name, err := marshalNoEscape(k)
		if err != nil {
			return nil, false
		}
		out = append(out, ',')
		out = append(out, name...)
		out = append(out, ':')
		out = append(out, members[k]...)
	}
	return append(out, '}'), true
}

// marshalNoEscape encodes v without HTML escaping and without the
// encoder's newline.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// The codes of JSON-RPC errors the MCP transport and the SDK answer with.
const (
	codeParseError          = -32700
	codeInvalidRequest      = -32600
	codeHeaderMismatch      = -32020
	codeMissingCapabilities = -32021
	codeUnsupportedVersion  = -32022
)

// headerNamed finds the MCP request header an SDK message of
// HeaderMismatch is about.
var headerNamed = regexp.MustCompile(`(?i)\b(Mcp-Param-[A-Za-z0-9!#$%&'*+.^_|~-]+|Mcp-Method|Mcp-Name|MCP-Protocol-Version)\b`)

// protocolFields are the five fields of a JSON-RPC error the SDK answers
// with: INVALID_REQUEST naming what is wrong (INTERNAL for an internal
// error). The SDK's message may echo the request; it is not repeated.
func protocolFields(code int64, message string) *errmap.Error {
	switch code {
	case codeHeaderMismatch:
		m := headerNamed.FindString(message)
		if m == "" {
			return errmap.Invalid("headers", "do not match the request body; send Mcp-Method, Mcp-Name and MCP-Protocol-Version as the body has them")
		}
		name := http.CanonicalHeaderKey(m)
		switch name {
		case "Mcp-Method", "Mcp-Name":
			return errmap.Invalid(name, "is missing or differs from the request body; send the method and the tool's name as the body has them")
		case "Mcp-Protocol-Version":
			return errmap.Invalid("MCP-Protocol-Version", "is missing or differs from the protocol version in the request's _meta")
		}
		if !fieldName.MatchString(name) {
			name = "Mcp-Param"
		}
		return errmap.Invalid(name, "does not agree with its argument in the request body; send the argument as text, and the header with the same value or not at all")
	case codeUnsupportedVersion:
		return errmap.Invalid("MCP-Protocol-Version", "is not a protocol version this server serves; see details.supported").
			WithDetail("supported", sdk.SupportedProtocolVersions())
	case codeMissingCapabilities:
		return errmap.Invalid("_meta", "lacks a client capability this request needs")
	case jsonrpc.CodeMethodNotFound:
		return errmap.Invalid("method", "is not a method this server serves")
	case jsonrpc.CodeInvalidParams:
		switch {
		case strings.Contains(message, "_meta"):
			return errmap.Invalid("_meta", "lacks the protocol version or the client's capabilities of this revision")
		case strings.HasPrefix(message, "unknown prompt "):
			return errmap.Invalid("name", "is not a prompt of this server, which has none")
		}
		return errmap.Invalid("params", "does not fit the method; see the MCP specification")
	case codeParseError:
		return errmap.Protocol(http.StatusBadRequest, "The MCP request body is not valid JSON.", nil)
	case jsonrpc.CodeInternalError:
		return errmap.Map(errors.New("mcp: internal error"))
	}
	return errmap.Invalid("request", "is not a JSON-RPC request this server takes")
}

// transportRefusal is the five-field INVALID_REQUEST, and the JSON-RPC
// code, of a refusal the SDK's handler wrote with status as the plain
// text (which is not repeated: it may echo the request), for the request
// r whose body is body. The checks are the SDK's, in its order.
func transportRefusal(status int, text []byte, r *http.Request, body []byte) (*errmap.Error, int64) {
	switch {
	case status == http.StatusForbidden || status == http.StatusMethodNotAllowed || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusUnsupportedMediaType:
		return errmap.Transport(status, r.Method, sdk.DefaultMaxRequestBodyBytes), codeInvalidRequest
	case status >= http.StatusInternalServerError:
		return errmap.Transport(status, "", 0), jsonrpc.CodeInternalError
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(sdk.SupportedProtocolVersions(), v) {
		return protocolFields(codeUnsupportedVersion, ""), codeInvalidRequest
	}
	if !acceptsBoth(r.Header.Values("Accept")) {
		return errmap.Invalid("Accept", "must list both application/json and text/event-stream"), codeInvalidRequest
	}
	if !jsontext.Value(body).IsValid() {
		return protocolFields(codeParseError, ""), codeParseError
	}
	if bytes.Contains(text, []byte("not handled")) {
		// The SDK's words for a method it does not serve.
		return protocolFields(jsonrpc.CodeMethodNotFound, ""), jsonrpc.CodeMethodNotFound
	}
	return errmap.Transport(http.StatusBadRequest, "", 0), codeInvalidRequest
}

// requestID is the id of the JSON-RPC request body, a string or a number
// of at most maxEchoedID bytes; nil when body is no JSON object with such
// an id (a batch, a notification, a body that is not JSON, whose id
// JSON-RPC answers as null).
func requestID(body []byte) json.RawMessage {
	if !jsontext.Value(body).IsValid() {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		if name.String() != "id" {
			if dec.SkipValue() != nil {
				return nil
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil || (v.Kind() != '"' && v.Kind() != '0') || len(v) > maxEchoedID {
			return nil
		}
		return json.RawMessage(bytes.Clone(v))
	}
	return nil
}

// maxEchoedID bounds the id a refusal echoes.
const maxEchoedID = 128

// protocolErrorFields gives every JSON-RPC error a method handler answers
// without data the five fields in its data (protocolFields), as every
// other error of the gateway has them; an unknown tool's name INVALID_REQUEST
// names name. The SDK's code and message stay.
func protocolErrorFields(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		var rpc *jsonrpc.Error
		if err == nil || !errors.As(err, &rpc) || rpc.Data != nil {
			return res, err
		}
		if method == "tools/call" && rpc.Code == jsonrpc.CodeInvalidParams && bytes.HasPrefix([]byte(rpc.Message), []byte("unknown tool ")) {
			rpc.Data = errmap.Invalid("name", "is not a tool of this server; call tools/list for the tools").Marshal()
		} else {
			rpc.Data = protocolFields(rpc.Code, rpc.Message).Marshal()
		}
		return res, err
	}
}
