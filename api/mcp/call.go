package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/errmap"
)

// remoteAddrHeader carries the MCP client's address from the HTTP handler
// to the tool handler, which sees only request headers.
const remoteAddrHeader = "Erpgate-Mcp-Remote-Addr"

// forwarded are the MCP request's headers a tool call passes on to the REST
// handler: credentials, the request id, the run id (X-Run-Id, or the
// Mcp-Param-Run-Id a client mirrors from the run_id argument), and
// X-Forwarded-For, for the limits by source address behind a trusted proxy.
var forwarded = []string{"Authorization", "X-API-Key", "X-Request-Id", "X-Run-Id", "Mcp-Param-Run-Id", "X-Forwarded-For"}

// forwardedKeys are the forwarded headers' keys in canonical form.
var forwardedKeys = func() []string {
	keys := make([]string, len(forwarded))
	for i, k := range forwarded {
		keys[i] = http.CanonicalHeaderKey(k)
	}
	return keys
}()

// headerJSON is the value of a Content-Type or Accept header of JSON,
// shared by the headers that have it: a header's values are replaced or
// appended to (which copies a slice of len and cap 1), never written in
// place.
var headerJSON = []string{"application/json"}

// invalidParams is the JSON-RPC error of a call whose arguments do not fit
// the tool's input schema: a protocol error, not a tool result. Its data
// is the five-field INVALID_REQUEST, for clients that show it to the model.
func invalidParams(tool, format string, a ...any) error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("invalid arguments for tool %s: %s", tool, fmt.Sprintf(format, a...)),
		Data:    errmap.Invalid("arguments", "must be a JSON object of the tool's input schema").Marshal(),
	}
}

// request builds the REST request of a call of args, from parse: the
// contract's method and path with the path arguments filled in, the query
// arguments, and a JSON body of the body arguments.
func (t *tool) request(ctx context.Context, args map[string]any, header http.Header, remote string) (*http.Request, error) {
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	sort.Strings(names)

	path := t.path
	var query url.Values
	var body map[string]any
	if t.body {
		body = map[string]any{}
	}
	var key []string
	for _, name := range names {
		v := args[name]
		in := inBody // an unknown argument of an operation with a body
		if a, ok := t.args[name]; ok {
			in = a.in
		}
		switch in {
		case inPath:
			path = strings.ReplaceAll(path, "{"+name+"}", url.PathEscape(scalar(v)))
		case inQuery:
			if query == nil {
				query = url.Values{}
			}
			if list, ok := v.([]any); ok {
				for _, e := range list {
					query.Add(name, scalar(e))
				}
			} else {
				query.Add(name, scalar(v))
			}
		case inBody:
			body[name] = v
		case inHeader:
			key = []string{scalar(v)}
		}
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}

	var rd io.Reader
	if t.body {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return nil, invalidParams(t.name, "%v", err)
		}
		rd = bytes.NewReader(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	req, err := http.NewRequestWithContext(ctx, t.method, target, rd)
	if err != nil {
		return nil, invalidParams(t.name, "%v", err)
	}
	req.RequestURI = target
	h := req.Header
	if key != nil {
		h["Idempotency-Key"] = key
	}
	if t.body {
		h["Content-Type"] = headerJSON
	}
	h["Accept"] = headerJSON
	for _, k := range forwardedKeys {
		if v := header[k]; len(v) > 0 {
			h[k] = append([]string(nil), v...)
		}
	}
	req.RemoteAddr = remote
	return req, nil
}

// parse decodes the arguments and checks those REST cannot check itself.
// Arguments that are not a JSON object are a protocol error. Every other
// mistake is the five-field INVALID_REQUEST naming the field, a tool
// result: body fields go to the REST handler as they came, so that its
// decoder and checks refuse an unknown field, a wrong type or a missing
// field with the body REST clients get; path, query and header arguments,
// which REST receives as text, are checked here for their JSON type and
// presence, and refused with the errmap error REST gives for the same
// mistake in a body. A path id sent as a JSON integer is its digits as text
// (idAsText). Values (patterns, enums, lengths) are checked by the REST
// handler for every argument.
func (t *tool) parse(raw json.RawMessage, decoded map[string]any) (map[string]any, *errmap.Error, error) {
	args := decoded
	raw = bytes.TrimSpace(raw)
	if args == nil && len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		args, _ = scalarArgs(raw)
		if args == nil {
			var invalid *errmap.Error
			var err error
			if args, invalid, err = t.decodeArgs(raw); err != nil || invalid != nil {
				return nil, invalid, err
			}
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := args[name]
		a, ok := t.args[name]
		if !ok {
			if t.body {
				// The REST decoder refuses the unknown body field.
				continue
			}
			return nil, t.withPathIDs(errmap.Invalid(name, problemUnknown), args), nil
		}
		// Platforms that fill every optional argument send null for the
		// ones they have no value for; REST treats a null field as absent.
		if v == nil {
			delete(args, name)
			continue
		}
		v = idAsText(a, v)
		nv, err := checkType(a.schema, v, name)
		switch {
		case err == nil:
			args[name] = nv
		case a.in != inBody:
			return nil, t.withPathIDs(errmap.Invalid(name, problemType), args), nil
		}
	}
	required := make([]string, 0, len(t.args))
	for name, a := range t.args {
		if _, ok := args[name]; a.required && a.in != inBody && !ok {
			required = append(required, name)
		}
	}
	if len(required) > 0 {
		sort.Strings(required)
		return nil, t.withPathIDs(errmap.Invalid(required[0], problemMissing), args), nil
	}
	return args, nil, nil
}

// decodeArgs decodes raw, arguments that are not null, with
// encoding/json, as the SDK does, and refuses what REST's decoder refuses
// and encoding/json lets through.
func (t *tool) decodeArgs(raw json.RawMessage) (map[string]any, *errmap.Error, error) {
	if raw[0] != '{' {
		return nil, nil, invalidParams(t.name, "arguments must be a JSON object")
	}
	args := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return nil, nil, invalidParams(t.name, "arguments are not a valid JSON object")
	}
	// encoding/json keeps the last of a name given twice and mends
	// invalid UTF-8; REST refuses both, and so do the arguments
	// (strictly valid arguments, the usual ones, have neither).
	if !jsontext.Value(raw).IsValid() {
		if field, problem := strictProblem(raw); problem != "" {
			return nil, t.withPathIDs(errmap.Invalid(field, problem), args), nil
		}
	}
	return args, nil, nil
}

// scalarArgs decodes raw when it is one strictly valid JSON object (no
// member name twice, valid UTF-8) whose members are all strings, numbers,
// booleans or null, into the map encoding/json decodes it to with
// UseNumber; for any other raw, ok is false. The usual arguments are of
// this shape, and decoded so without encoding/json's reflection.
func scalarArgs(raw []byte) (args map[string]any, ok bool) {
	d := decoderOf(raw)
	defer d.release()
	dec := d.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	args = make(map[string]any, 4)
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		// A token is valid up to the next read.
		name := tok.String()
		tok, err = dec.ReadToken()
		if err != nil {
			return nil, false
		}
		var v any
		switch tok.Kind() {
		case '"':
			v = tok.String()
		case '0':
			v = json.Number(tok.String())
		case 't', 'f':
			v = tok.Bool()
		case 'n':
		default:
			return nil, false
		}
		args[name] = v
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return args, true
}

// strictProblem finds in raw what REST's decoder refuses and encoding/json
// lets through: a member name given twice, and invalid UTF-8, with the
// field it is in ("arguments" when that is not of the form of a field).
func strictProblem(raw []byte) (field, problem string) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for {
		_, err := dec.ReadToken()
		if err == nil {
			continue
		}
		var syntax *jsontext.SyntacticError
		if !errors.As(err, &syntax) {
			return "", ""
		}
		field = "arguments"
		for tok := range syntax.JSONPointer.Tokens() {
			if fieldName.MatchString(tok) {
				field = tok
			}
			break
		}
		switch {
		case errors.Is(syntax.Err, jsontext.ErrDuplicateName):
			return field, problemDuplicate
		case !utf8.Valid(raw):
			return field, problemUTF8
		}
		return "", ""
	}
}

// fieldName is the form of a field a refusal names (REST's
// fieldNamePattern); any other name is not echoed.
var fieldName = regexp.MustCompile(`^[A-Za-z0-9_.\[\]-]{1,64}$`)

// withPathIDs adds to e's details the path arguments of the right form
// (their contract pattern), as REST adds the ids of the path to the
// details of every error.
func (t *tool) withPathIDs(e *errmap.Error, args map[string]any) *errmap.Error {
	for name, a := range t.args {
		v, ok := args[name].(string)
		if a.in == inPath && ok && a.pattern != nil && a.pattern.MatchString(v) {
			e.WithDetail(name, v)
		}
	}
	return e
}

// The problems of an argument REST receives as text, worded as REST words
// the same mistake in a JSON body.
const (
	problemUnknown   = "is not a field of this operation"
	problemType      = "has the wrong type; see the operation's schema"
	problemMissing   = "is required"
	problemDuplicate = "is given more than once; send each field once"
	problemUTF8      = "is not valid UTF-8"
)

// checkType checks v against the types of s (recursing into arrays and
// objects) and returns v with integral numbers written as integers.
func checkType(s *openapi3.Schema, v any, at string) (any, error) {
	kind := kindOf(v)
	if n, ok := v.(json.Number); ok && kind == openapi3.TypeInteger {
		v = json.Number(integer(n))
	}
	if s.Type != nil && !s.Type.IsEmpty() {
		ok := s.Type.Includes(kind) ||
			(kind == openapi3.TypeInteger && s.Type.Includes(openapi3.TypeNumber)) ||
			(kind == openapi3.TypeNull && s.Nullable)
		if !ok {
			return nil, fmt.Errorf("argument %q must be of type %s, not %s", at, strings.Join(s.Type.Slice(), " or "), kind)
		}
	}
	switch x := v.(type) {
	case []any:
		if s.Items == nil || s.Items.Value == nil {
			return x, nil
		}
		for i, e := range x {
			ne, err := checkType(s.Items.Value, e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			x[i] = ne
		}
	case map[string]any:
		closed := s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has
		for k, e := range x {
			p, ok := s.Properties[k]
			if !ok || p == nil || p.Value == nil {
				if closed {
					return nil, fmt.Errorf("argument %q has an unknown field %q", at, k)
				}
				continue
			}
			ne, err := checkType(p.Value, e, at+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = ne
		}
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				return nil, fmt.Errorf("argument %q lacks the required field %q", at, r)
			}
		}
	}
	return v, nil
}

// kindOf names the JSON type of a decoded value.
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return openapi3.TypeNull
	case string:
		return openapi3.TypeString
	case bool:
		return openapi3.TypeBoolean
	case []any:
		return openapi3.TypeArray
	case map[string]any:
		return openapi3.TypeObject
	case json.Number:
		if integer(x) != "" {
			return openapi3.TypeInteger
		}
		return openapi3.TypeNumber
	}
	return "unknown"
}

// integer returns n written as an integer when its value is whole (JSON
// Schema counts 10.0 as an integer; REST parses only 10), else "".
func integer(n json.Number) string {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return ""
	}
	return strconv.FormatInt(int64(f), 10)
}

// scalar writes a path or query value as text.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// result turns the REST answer into the tool result. An error keeps the
// REST body byte for byte (without its trailing newline) as the one text
// block, so the agent reads exactly the five fields REST clients read.
func result(status int, body []byte) *sdk.CallToolResult {
	text := strings.TrimSuffix(string(body), "\n")
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
	if status >= 400 {
		res.IsError = true
		return res
	}
	if obj := bytes.TrimSpace(body); len(obj) > 0 && obj[0] == '{' && json.Valid(obj) {
		res.StructuredContent = json.RawMessage(obj)
	}
	return res
}

// recorder keeps the REST handler's answer in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// recorders are recorders for the direct path, whose answers are not
// kept past the call.
var recorders = sync.Pool{New: func() any { return &recorder{header: http.Header{}} }}

// release empties r and gives it back to recorders.
func (r *recorder) release() {
	clear(r.header)
	r.status = 0
	r.body.Reset()
	recorders.Put(r)
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
