package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/erpgate/erpgate/errmap"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The direct path: a POST that is one tools/call of a known tool, in a
// protocol version whose transport the SDK serves without a session, is
// answered here, with the bytes the SDK's stateless JSON answer has, and
// without the SDK's per-request session (a connection, goroutines, several
// decodes of the body, its log lines). Every other request, and any call
// this path is not sure of, goes to the SDK unchanged.

// directVersions are the MCP-Protocol-Version values of the direct path.
var directVersions = map[string]bool{"2025-03-26": true, "2025-06-18": true, "2025-11-25": true, versionHeaders: true}

// versionHeaders is the revision of the standard request headers
// (Mcp-Method, Mcp-Name, Mcp-Param-*; SEP-2243) and of the per-request
// _meta (SEP-2575): a call carries its protocol version and the client's
// capabilities in params._meta instead of an initialize before it, and
// the result names the server in its own _meta and says it is complete.
const versionHeaders = "2026-07-28"

// The _meta members of a request of versionHeaders, and of its result.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	// metaPrefix begins the names of the protocol's own _meta members.
	metaPrefix = "io.modelcontextprotocol/"
)

// directID is the form of a request id the direct path echoes as it came:
// an integer of at most 15 digits, or a plain string.
var directID = regexp.MustCompile(`^(?:0|-?[1-9][0-9]{0,14}|"[A-Za-z0-9_.:/-]{1,64}")$`)

// direct serves r, which arrived at start, when it is a call the direct
// path can answer, and reports whether it did; when it did not, r is as it
// came (its body restored) for the SDK.
func (s *Server) direct(w http.ResponseWriter, r *http.Request, start time.Time) bool {
	if !directRequest(r) {
		return false
	}
	// Read the body within the SDK's bound; past it, the SDK answers.
	body, err := readBody(r.Body, sdk.DefaultMaxRequestBodyBytes+1)
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
	t, id, args, decoded, meta, ok := s.directCall(body, r.Header)
	if !ok {
		return restore()
	}
	var serverInfo []byte
	if r.Header.Get("Mcp-Protocol-Version") == versionHeaders {
		serverInfo = s.serverInfo
	}
	// The REST answer and this answer are written into buffers used
	// again by the calls after this one: neither is kept past the Write.
	rec := recorders.Get().(*recorder)
	defer rec.release()
	ct := callTrace{tool: t.name, spanName: t.spanName, id: idText(id), meta: metaTrace(meta), protocol: r.Header.Get("Mcp-Protocol-Version"), header: r.Header,
		start: start, path: r.URL.Path}
	status, res, err := s.call(r.Context(), t, args, decoded, r.Header, r.RemoteAddr, rec, &ct)
	if err != nil {
		// A protocol error, found before the REST handler ran: the SDK
		// words it (and its tool handler traces it).
		return restore()
	}
	// From here on the REST handler has run: the request is answered
	// here whatever happens, never handed to the SDK to run again.
	s.directAnswers.Add(1)
	// The body was read to its end: closed, the server has none of it
	// left to discard after the answer.
	_ = r.Body.Close()
	buf := answers.Get().(*[]byte)
	defer releaseAnswer(buf)
	out := appendResponse((*buf)[:0], id, status, res, serverInfo)
	*buf = out
	if s.failEncode.Load() {
		out, err = nil, errEncodeForced
	}
	if err != nil {
		s.log.ErrorContext(r.Context(), "mcp tool result not encoded", "tool", t.name, "error", err)
		e := errmap.Map(err)
		if out, err = encodeResponse(id, e.Status, e.Marshal(), serverInfo); err != nil {
			out = internalError(id)
		}
	}
	h := w.Header()
	h["Cache-Control"] = headerNoCache
	h["Content-Type"] = headerJSON
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return true
}

// headerNoCache is the Cache-Control of the direct path's answers, as
// the SDK sends it (shared as headerJSON is).
var headerNoCache = []string{"no-cache, no-transform"}

// readBody reads body up to its end or, when it is longer, to limit
// bytes, as io.ReadAll of an io.LimitReader does.
func readBody(body io.Reader, limit int64) ([]byte, error) {
	b := make([]byte, 0, 512)
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		free := b[len(b):cap(b)]
		if n := limit - int64(len(b)); int64(len(free)) > n {
			free = free[:n]
		}
		n, err := body.Read(free)
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// directRequest reports whether r is a POST the SDK would take as far as
// its method, headers and listener go, of a protocol version of the
// direct path, without a session.
func directRequest(r *http.Request) bool {
	return r.Method == http.MethodPost && jsonContent(r.Header.Get("Content-Type")) &&
		directVersions[r.Header.Get("Mcp-Protocol-Version")] && r.Header.Get("Mcp-Session-Id") == "" &&
		acceptsBoth(r.Header.Values("Accept")) && hostAllowed(r) && r.Body != nil
}

// jsonContent reports whether a Content-Type is JSON as the SDK wants
// it: its media type, parameters (such as charset=utf-8) aside, is
// application/json.
func jsonContent(v string) bool {
	if v == "application/json" {
		return true
	}
	t, _, err := mime.ParseMediaType(v)
	return err == nil && t == "application/json"
}

// directMessage is the one tools/call of the direct path: the raw values
// of its members, each a part of the body it was decoded from.
type directMessage struct {
	jsonrpc, id, method   jsontext.Value
	meta, name, arguments jsontext.Value
}

// decoders are the direct path's JSON decoders, each with the reader of
// the bytes it decodes.
var decoders = sync.Pool{New: func() any {
	d := &decoder{}
	d.dec = jsontext.NewDecoder(&d.rd)
	return d
}}

type decoder struct {
	rd  bytes.Reader
	dec *jsontext.Decoder
}

// decoderOf returns a decoder of b, strict as the SDK's decoding (no
// member name twice, valid UTF-8); give it back with release.
func decoderOf(b []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.rd.Reset(b)
	d.dec.Reset(&d.rd)
	return d
}

func (d *decoder) release() {
	d.rd.Reset(nil)
	decoders.Put(d)
}

// value reads the next value and returns it as the part of b, the bytes
// being decoded, that it is.
func (d *decoder) value(b []byte) (jsontext.Value, bool) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, false
	}
	end := int(d.dec.InputOffset())
	return b[end-len(v) : end], true
}

// decodeMessage decodes body in one pass when it is one JSON object of the
// members a request has (jsonrpc, id, method, and params with _meta, name
// and arguments), no other, none twice, names matched exactly, and nothing
// after it.
func decodeMessage(body []byte) (msg directMessage, ok bool) {
	d := decoderOf(body)
	defer d.release()
	dec := d.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return msg, false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return msg, false
		}
		var at *jsontext.Value
		switch string(name) {
		case `"jsonrpc"`:
			at = &msg.jsonrpc
		case `"id"`:
			at = &msg.id
		case `"method"`:
			at = &msg.method
		case `"params"`:
			if !d.params(body, &msg) {
				return msg, false
			}
			continue
		default:
			return msg, false
		}
		if *at, ok = d.value(body); !ok {
			return msg, false
		}
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return msg, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return msg, false
	}
	return msg, true
}

// params decodes the params of a request into msg: an object of _meta,
// name and arguments, or null.
func (d *decoder) params(body []byte, msg *directMessage) bool {
	dec := d.dec
	tok, err := dec.ReadToken()
	switch {
	case err != nil:
		return false
	case tok.Kind() == 'n':
		return true
	case tok.Kind() != '{':
		return false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return false
		}
		var at *jsontext.Value
		switch string(name) {
		case `"_meta"`:
			at = &msg.meta
		case `"name"`:
			at = &msg.name
		case `"arguments"`:
			at = &msg.arguments
		default:
			return false
		}
		var ok bool
		if *at, ok = d.value(body); !ok {
			return false
		}
	}
	tok, err = dec.ReadToken()
	return err == nil && tok.Kind() == '}'
}

// directCall decodes body when it is exactly one tools/call request of a
// known tool: members jsonrpc "2.0", id, method and params, params with
// name, arguments and _meta only (a _meta of versionHeaders, or of an
// earlier revision, see metaBefore), no member twice;
// for versionHeaders, with the request headers the SDK wants and agreeing
// with the body. The arguments come back as they came and, when they are
// an object of plain values, decoded (see scalarArgs).
func (s *Server) directCall(body []byte, header http.Header) (t *tool, id jsontext.Value, args json.RawMessage, decoded map[string]any, meta jsontext.Value, ok bool) {
	msg, ok := decodeMessage(body)
	if !ok || msg.id == nil || msg.name == nil ||
		string(msg.jsonrpc) != `"2.0"` || string(msg.method) != `"tools/call"` || !directID.Match(msg.id) {
		return nil, nil, nil, nil, nil, false
	}
	v7 := header.Get("Mcp-Protocol-Version") == versionHeaders
	if v7 && (msg.meta == nil || !s.metaOK(msg.meta)) || !v7 && msg.meta != nil && !metaBefore(msg.meta) {
		return nil, nil, nil, nil, nil, false
	}
	t = s.toolNamed(msg.name)
	if t == nil {
		return nil, nil, nil, nil, nil, false
	}
	a := msg.arguments
	if a != nil && a.Kind() == 'n' {
		// The SDK keeps no null arguments.
		a = nil
	}
	if a != nil {
		decoded, _ = scalarArgs(a)
	}
	if v7 && !t.headersAgree(a, decoded, header) {
		return nil, nil, nil, nil, nil, false
	}
	return t, msg.id, json.RawMessage(a), decoded, msg.meta, true
}

// toolNamed returns the tool whose name is raw, a JSON value, or nil.
func (s *Server) toolNamed(raw jsontext.Value) *tool {
	if raw.Kind() != '"' {
		return nil
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		// Valid JSON without an escape: the name is the text between
		// the quotes.
		return s.tools[string(raw[1:len(raw)-1])]
	}
	var name string
	if jsonv2.Unmarshal(raw, &name) != nil {
		return nil
	}
	return s.tools[name]
}

// metaOK reports whether raw is a _meta of versionHeaders the SDK takes
// (see metaTaken); the protocol's own members of the _meta values it has
// taken are kept, as a client sends the same ones with every call, beside
// members that change from call to call, such as a trace context.
func (s *Server) metaOK(raw jsontext.Value) bool {
	if s.metas.has(raw) {
		// The very _meta of an earlier call, read through no further.
		return true
	}
	key, ok := protocolMembers(raw)
	if !ok {
		return false
	}
	if s.metas.has(key) {
		return true
	}
	if !metaTaken(raw) {
		return false
	}
	s.metas.add(key)
	return true
}

// protocolMembers is what decides whether the SDK takes raw, a _meta
// object: the names and values, as sent, of its members of the protocol's
// own (io.modelcontextprotocol/); metaTaken takes any other member as it
// is. When raw has no other member, raw itself is its key, so that a
// client that sends the same _meta every time is found without reading
// it. ok is false when raw is not an object the decoder reads through.
func protocolMembers(raw jsontext.Value) (key []byte, ok bool) {
	others := false
	if raw.Kind() != '{' {
		return nil, false
	}
	d := decoderOf(raw)
	defer d.release()
	dec := d.dec
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		n := name.String() // the token is good until the next read only
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		if !strings.HasPrefix(n, metaPrefix) {
			others = true
		} else {
			// No NUL stands raw in JSON text: the pairs cannot run together.
			key = append(append(append(append(key, n...), 0), v...), 0)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false // something after the object
	}
	if !others {
		return raw, true
	}
	return key, true
}

// metaTaken reports whether raw is a _meta of versionHeaders the SDK
// takes: the protocol version, the client's capabilities, perhaps the
// client's name, and any members outside the protocol's own
// (io.modelcontextprotocol/), such as a progress token or trace context,
// which a tool call's answer does not depend on.
func metaTaken(raw jsontext.Value) bool {
	var meta map[string]jsontext.Value
	if raw == nil || jsonv2.Unmarshal(raw, &meta) != nil {
		return false
	}
	if string(meta[metaProtocolVersion]) != `"`+versionHeaders+`"` {
		return false
	}
	caps, ok := meta[metaClientCapabilities]
	if !ok || !capabilitiesOK(caps) {
		return false
	}
	if info, ok := meta[metaClientInfo]; ok {
		var impl sdk.Implementation
		if !remarshals(info, &impl) {
			return false
		}
	}
	for k := range meta {
		if strings.HasPrefix(k, metaPrefix) && k != metaProtocolVersion && k != metaClientCapabilities && k != metaClientInfo {
			return false
		}
	}
	return true
}

// metaBefore reports whether raw is a _meta the SDK takes in a call of a
// revision before versionHeaders without looking into it: null, or an
// object without the protocol's own members (io.modelcontextprotocol/),
// such as a progress token or a trace context. A member of the protocol's
// own, such as a protocol version, the SDK checks against the request's
// headers: such a call goes to the SDK.
func metaBefore(raw jsontext.Value) bool {
	switch raw.Kind() {
	case 'n':
		return true
	case '{':
	default:
		return false
	}
	if !bytes.Contains(raw, []byte(metaPrefix)) && bytes.IndexByte(raw, '\\') < 0 {
		// No member can be named with the prefix, escaped or not.
		return true
	}
	d := decoderOf(raw)
	defer d.release()
	dec := d.dec
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil || strings.HasPrefix(name.String(), metaPrefix) || dec.SkipValue() != nil {
			return false
		}
	}
	return true
}

// maxMetas bounds the _meta values a Server keeps as taken.
const maxMetas = 1024

// metaSet is a bounded set of _meta values, safe for concurrent use; when
// full, it starts again empty.
type metaSet struct {
	mu sync.RWMutex
	m  map[string]struct{}
}

func (ms *metaSet) has(raw []byte) bool {
	ms.mu.RLock()
	_, ok := ms.m[string(raw)]
	ms.mu.RUnlock()
	return ok
}

func (ms *metaSet) add(raw []byte) {
	ms.mu.Lock()
	if ms.m == nil || len(ms.m) >= maxMetas {
		ms.m = make(map[string]struct{})
	}
	ms.m[string(raw)] = struct{}{}
	ms.mu.Unlock()
}

// capabilitiesOK reports whether raw is client capabilities the SDK
// decodes: an object whose members the SDK knows are of the types it
// wants (it leaves out the members it does not know, and so does
// encoding/json here; a member named as a known one in other capitals,
// which encoding/json would take for it, must be of its type too).
func capabilitiesOK(raw jsontext.Value) bool {
	var caps struct {
		sdk.ClientCapabilities
		Roots *sdk.RootCapabilities `json:"roots,omitempty"`
	}
	return remarshals(raw, &caps)
}

// remarshals reports whether raw, an object, decodes into v as the SDK
// decodes a _meta member: to a generic value, encoded again, decoded into
// its type.
func remarshals(raw jsontext.Value, v any) bool {
	if raw.Kind() != '{' {
		return false
	}
	var generic any
	if json.Unmarshal(raw, &generic) != nil {
		return false
	}
	b, err := json.Marshal(generic)
	return err == nil && json.Unmarshal(b, v) == nil
}

// headersAgree reports whether the standard request headers of a call of
// t are all there and agree with its name and arguments as the SDK wants:
// Mcp-Method and Mcp-Name given once each, and for each argument with an
// x-mcp-header, no Mcp-Param-* header when the argument is not there, and
// when it is, the same plain text or no header at all (a client that does
// not mirror it, taken as mirrorParams takes it; a value the SDK would want
// Base64-encoded, or compare as a number, goes to the SDK). decoded is
// args decoded by scalarArgs, or nil.
func (t *tool) headersAgree(args jsontext.Value, decoded map[string]any, header http.Header) bool {
	if v := header.Values("Mcp-Method"); len(v) != 1 || v[0] != "tools/call" {
		return false
	}
	if v := header.Values("Mcp-Name"); len(v) != 1 || v[0] != t.name {
		return false
	}
	if len(t.headers) == 0 {
		return true
	}
	if decoded == nil {
		return t.headersAgreeRaw(args, header)
	}
	for arg, h := range t.headers {
		values := header.Values("Mcp-Param-" + h)
		v, present := decoded[arg]
		if !present || v == nil {
			if len(values) != 0 {
				return false
			}
			continue
		}
		text, ok := v.(string)
		if !ok || !plainHeader(text) || (len(values) > 0 && (len(values) != 1 || values[0] != text)) {
			return false
		}
	}
	return true
}

// headersAgreeRaw is headersAgree for arguments scalarArgs does not decode.
func (t *tool) headersAgreeRaw(args jsontext.Value, header http.Header) bool {
	var members map[string]jsontext.Value
	if args != nil && jsonv2.Unmarshal(args, &members) != nil {
		// Not an object: the SDK does not look for argument headers, and
		// neither may a client send one.
		members = nil
	}
	for arg, h := range t.headers {
		values := header.Values("Mcp-Param-" + h)
		v, present := members[arg]
		if !present || v.Kind() == 'n' {
			if len(values) != 0 {
				return false
			}
			continue
		}
		var text string
		if v.Kind() != '"' || jsonv2.Unmarshal(v, &text) != nil || !plainHeader(text) ||
			(len(values) > 0 && (len(values) != 1 || values[0] != text)) {
			return false
		}
	}
	return true
}

// plainHeader reports whether s goes into a header as it is: printable
// ASCII, not empty, no space at either end, not Base64-wrapped.
func plainHeader(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || strings.HasPrefix(s, "=?base64?") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// errEncodeForced is the encoding failure of failEncode.
var errEncodeForced = errors.New("mcp: encoding forced to fail")

// internalError is the JSON-RPC internal error of a call whose answer
// could not be written, with the five fields of INTERNAL in its data.
func internalError(id jsontext.Value) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` +
		strconv.Itoa(jsonrpc.CodeInternalError) + `,"message":"internal error","data":` +
		string(protocolFields(jsonrpc.CodeInternalError, "").Marshal()) + `}}`)
}

// encodeResponse writes the JSON-RPC answer with the tool result of the
// REST answer (see result) as the SDK writes it: encoding/json with HTML
// escaping for the result, the structured content compacted. With
// serverInfo (the server's name, as JSON), the result is of versionHeaders:
// it names the server in _meta and has resultType complete.
func encodeResponse(id jsontext.Value, status int, body, serverInfo []byte) ([]byte, error) {
	return appendResponse(nil, id, status, body, serverInfo), nil
}

// appendResponse appends the answer of encodeResponse to out.
func appendResponse(out []byte, id jsontext.Value, status int, body, serverInfo []byte) []byte {
	// The body twice, once as text with its quotes escaped.
	out = slices.Grow(out, 2*len(body)+bytes.Count(body, []byte{'"'})+len(serverInfo)+160)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":{`...)
	if serverInfo != nil {
		out = append(out, `"_meta":{"`+metaServerInfo+`":`...)
		out = append(out, serverInfo...)
		out = append(out, `},`...)
	}
	out = append(out, `"content":[{"type":"text","text":`...)
	out = appendString(out, bytes.TrimSuffix(body, []byte("\n")))
	out = append(out, "}]"...)
	end := "}}"
	if serverInfo != nil {
		end = `,"resultType":"complete"}}`
	}
	if status >= 400 {
		return append(out, `,"isError":true`+end...)
	}
	if obj := bytes.TrimSpace(body); len(obj) > 0 && obj[0] == '{' {
		out = appendStructured(out, obj)
	}
	return append(out, end...)
}

// answers are buffers for the direct path's answers.
var answers = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptAnswer is the largest answer buffer kept for another call.
const maxKeptAnswer = 64 << 10

func releaseAnswer(buf *[]byte) {
	if cap(*buf) <= maxKeptAnswer {
		answers.Put(buf)
	}
}

// appendStructured appends the structured content of obj, a REST body
// that starts as an object, as encoding/json writes a json.RawMessage
// with HTML escaping: compacted, and nothing when it is not JSON.
func appendStructured(out, obj []byte) []byte {
	out = append(out, `,"structuredContent":`...)
	// A name given twice is compacted as any other member, as
	// encoding/json does; the check of each object's names for it is
	// left out.
	if jsontext.Value(obj).IsValid(allowDuplicates) {
		return appendCompact(out, obj)
	}
	// Not JSON with valid UTF-8, or not JSON at all: encoding/json
	// decides.
	buf := bytes.NewBuffer(out)
	at := buf.Len()
	if json.NewEncoder(buf).Encode(json.RawMessage(obj)) != nil {
		return out[:at-len(`,"structuredContent":`)]
	}
	return buf.Bytes()[:buf.Len()-1] // the encoder's newline
}

// allowDuplicates lets a JSON value name a member twice.
var allowDuplicates = jsontext.AllowDuplicateNames(true)

// appendCompact appends src, valid JSON, as encoding/json compacts it with
// HTML escaping: without the whitespace between tokens, and with <, >, &,
// U+2028 and U+2029 escaped (in valid JSON they are only in strings).
func appendCompact(dst, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			i++
			start = i
		case '"':
			// A string: up to its closing quote, escaping what needs it.
			for i++; i < len(src); {
				c := src[i]
				if !inStringSpecial[c] {
					i++
					continue
				}
				switch {
				case c == '"':
				case c == '\\':
					i += 2 // the escaped character is never special
					continue
				case c == 0xE2:
					if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
						dst = append(dst, src[start:i]...)
						dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
						i += 3
						start = i
					} else {
						i++
					}
					continue
				default: // <, > or &
					dst = append(dst, src[start:i]...)
					dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
					i++
					start = i
					continue
				}
				break
			}
			i++ // the closing quote
		default:
			i++
		}
	}
	return append(dst, src[start:]...)
}

// inStringSpecial are the bytes of a JSON string appendCompact looks at:
// its end, an escape, and the first bytes of what it escapes.
var inStringSpecial = [256]bool{'"': true, '\\': true, '<': true, '>': true, '&': true, 0xE2: true}

// appendString appends src as a JSON string as encoding/json writes it
// with HTML escaping: the short escapes \b, \f, \n, \r, \t, \" and \\,
// \u00XX for the other control characters and for <, > and &, \ufffd for
// each byte of invalid UTF-8, and U+2028 and U+2029 escaped.
func appendString(dst, src []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		if b := src[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, src[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRune(src[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}

// hexDigits are the digits of a \u escape, as encoding/json writes them.
const hexDigits = "0123456789abcdef"

// acceptMCP is the Accept header MCP clients send with a POST.
const acceptMCP = "application/json, text/event-stream"

// acceptsBoth reports whether Accept takes both JSON and an event stream,
// as the SDK requires of a POST.
func acceptsBoth(values []string) bool {
	if len(values) == 1 && values[0] == acceptMCP {
		return true
	}
	var jsonOK, streamOK bool
	for _, v := range values {
		for raw := range strings.SplitSeq(v, ",") {
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
	if !ok || local == nil || !localLoopback(local) {
		return true
	}
	return loopback(r.Host)
}

// localLoopback reports whether the listener's address a is loopback, as
// loopback(a.String()) does, without writing a TCP address as text.
func localLoopback(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return loopback(a.String())
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
