package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/errmap"
)

// An operation's line of the access log (accessLog) is the one entry of
// the call: its caller (client), operation, arguments, the ERP's services
// and entity sets it called (erp_calls), status, code, latency
// (duration_ms), run id, request id and, from the log handler, the trace
// id. A tool call of /mcp is served by the REST handler and logged there,
// once; one that /mcp refuses before the operation (an unknown tool,
// arguments that are not an object, a path argument of the wrong type)
// has the same one line, which api/mcp writes through LogRefusedCall. The
// arguments are the path's parameters, the query's and the
// body's top-level fields, each written as this table says:
//
//	argument                                   written as
//	-----------------------------------------  -----------------------------------------------
//	invoice_id, po_id, item, supplier_id,      as it is: business document numbers and the
//	approval_id, hold_id, run_id,              gateway's own record ids, the handles people
//	idempotency_key                            look a call up by
//	proposed_action, decision, queue, code,    as it is: values of the contract's
//	status, corrected_amount, recheck_at,      enumerations, amounts, dates, page sizes and
//	limit, after, before                       cursors, which say nothing of a person
//	justification, reason, summary, evidence,  "len=N hash=H": free text (or a list of it)
//	question, note, name (search_suppliers),   that may hold personal data, replaced by its
//	and any field not named above              length in characters and a short keyed hash
//
// A value of a field kept as it is that is not of the form of an id (1 to
// 128 letters, digits, '.', '_', ':' or '-'; a JSON number or boolean) is
// written as free text is: a field that holds prose is never echoed. The
// hash is an HMAC-SHA-256 under a key each process draws at start, cut to
// 12 hex digits: the same text has the same hash within one process's log,
// so that repeats of a call can be told apart, and without the key no one
// can confirm a guess of the text (a name) from its hash.
var logArgKept = map[string]bool{
	"invoice_id": true, "po_id": true, "item": true, "supplier_id": true,
	"approval_id": true, "hold_id": true, "run_id": true, "idempotency_key": true,
	"proposed_action": true, "decision": true, "queue": true, "code": true, "status": true,
	"corrected_amount": true, "recheck_at": true, "limit": true, "after": true, "before": true,
}

// logArgKey is the key of the arguments' hashes, drawn once per process.
var logArgKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

// redacted is the access log's text in place of the value v: its length
// in characters and its keyed hash.
func redacted(v string) string {
	m := logArgMACs.Get().(hash.Hash)
	m.Reset()
	_, _ = io.WriteString(m, v)
	var sum [sha256.Size]byte
	h := m.Sum(sum[:0])
	logArgMACs.Put(m)
	return "len=" + strconv.Itoa(utf8.RuneCountInString(v)) + " hash=" + hex.EncodeToString(h[:6])
}

// logArgMACs keeps the HMACs of redacted, keyed with logArgKey, for reuse.
var logArgMACs = sync.Pool{New: func() any { return hmac.New(sha256.New, logArgKey) }}

// keptAsIs reports whether the argument name's value v is written as it is.
func keptAsIs(name, v string) bool { return logArgKept[name] && headerIDPattern.MatchString(v) }

// logPath is the path the access log writes of an operation's call: the
// request's, or its route's pattern ("/approvals/{approval_id}") when a
// parameter in it is not written as it is, so that the path never shows
// what the arguments redact.
func logPath(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		for i, k := range rc.URLParams.Keys {
			if i < len(rc.URLParams.Values) && k != "*" && !keptAsIs(k, rc.URLParams.Values[i]) {
				return rc.RoutePattern()
			}
		}
	}
	return r.URL.Path
}

// logArg is the attribute of the argument name with the value v, as the
// table of logArgKept says. literal says v is a JSON number, boolean or
// null, written as it is when the field is kept.
func logArg(name, v string, literal bool) slog.Attr {
	if literal && logArgKept[name] || keptAsIs(name, v) {
		return slog.String(name, v)
	}
	return slog.String(name, redacted(v))
}

// appendInvocation appends the access log's attributes of an operation's
// call beyond its ids, client, operation and code: its arguments
// (logArgKept) and the ERP's services and resources it called.
func appendInvocation(attrs []slog.Attr, r *http.Request, rec *requestRecord) []slog.Attr {
	var args []slog.Attr
	if rc := chi.RouteContext(r.Context()); rc != nil && len(rc.URLParams.Keys) > 0 {
		args = make([]slog.Attr, 0, len(rc.URLParams.Keys)+len(rec.fields))
		for i, k := range rc.URLParams.Keys {
			if k != "*" && i < len(rc.URLParams.Values) {
				args = append(args, logArg(k, rc.URLParams.Values[i], false))
			}
		}
	}
	if r.URL.RawQuery != "" {
		if q, err := url.ParseQuery(r.URL.RawQuery); err == nil {
			for _, k := range slices.Sorted(maps.Keys(q)) {
				args = append(args, logArg(k, strings.Join(q[k], ","), false))
			}
		}
	}
	if len(rec.fields) > 0 {
		for _, k := range slices.Sorted(maps.Keys(rec.fields)) {
			args = append(args, bodyArg(k, rec.fields[k]))
		}
	}
	if len(args) > 0 {
		attrs = append(attrs, slog.Attr{Key: "args", Value: slog.GroupValue(args...)})
	}
	if called := rec.called.String(); called != "" {
		attrs = append(attrs, slog.String("erp_calls", called))
	}
	return attrs
}

// bodyArg is the attribute of the body's field name with the JSON value
// raw: a string as logArg writes it, a number, boolean or null as it is
// when the field is kept, anything else (a list, an object) redacted
// whole, its JSON as it came.
func bodyArg(name string, raw json.RawMessage) slog.Attr {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return slog.String(name, redacted(""))
	}
	switch raw[0] {
	case '"':
		// A string without escapes is its bytes between the quotes.
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			return logArg(name, string(raw[1:len(raw)-1]), false)
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return logArg(name, s, false)
		}
	case '[', '{':
	default:
		return logArg(name, string(raw), true)
	}
	return slog.String(name, redacted(string(raw)))
}

// RefusedCall is a call of an operation that the MCP endpoint refused
// before the operation ran, so that no REST request logged it: an unknown
// tool, arguments that are not a JSON object, a path argument of the
// wrong type.
type RefusedCall struct {
	// Method, Path and Header are the MCP request's: its headers name the
	// caller, the request id and the run id, as a tool call's do.
	Method, Path string
	Header       http.Header
	// Operation is the tool's name as the call asked for it.
	Operation string
	// Args are the call's arguments as they came; arguments that are not
	// a JSON object are left out of the line.
	Args json.RawMessage
	// Code is the refusal's five-field code; the line's status is the
	// code's.
	Code string
	// Start is when the call arrived.
	Start time.Time
}

// LogRefusedCall writes the access log's one line of a refused call, at
// info, as accessLog writes an operation's: its request id, method, path,
// status, latency, run id, operation, code, caller and arguments as the
// table above says (an argument whose name is not of the form of an id
// left out), in ctx's trace. An operation's name not of the form of an id
// is redacted as free text is; the caller is named only when its
// credentials are valid.
func (s *Server) LogRefusedCall(ctx context.Context, c RefusedCall) {
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	h := c.Header
	id, run := callIDs(h)
	status := http.StatusBadRequest
	if e, ok := errmap.Lookup(errmap.Code(c.Code)); ok {
		status = e.Status
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String("request_id", id), slog.String("method", c.Method), slog.String("path", c.Path),
		slog.Int("status", status), slog.Int64("duration_ms", time.Since(c.Start).Milliseconds()))
	if run != "" {
		attrs = append(attrs, slog.String("run_id", run))
	}
	op := c.Operation
	if !headerIDPattern.MatchString(op) {
		op = redacted(op)
	}
	attrs = append(attrs, slog.String("operation", op))
	if c.Code != "" {
		attrs = append(attrs, slog.String("code", c.Code))
	}
	if client, err := s.identify((&http.Request{Header: h}).WithContext(ctx)); err == nil {
		attrs = append(attrs, slog.String("client", client.Name))
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(c.Args, &members) == nil && len(members) > 0 {
		args := make([]slog.Attr, 0, len(members))
		for _, k := range slices.Sorted(maps.Keys(members)) {
			// A name that is not of the form of an id may be prose: left
			// out, as it is no argument of the operation.
			if headerIDPattern.MatchString(k) {
				args = append(args, bodyArg(k, members[k]))
			}
		}
		if len(args) > 0 {
			attrs = append(attrs, slog.Attr{Key: "args", Value: slog.GroupValue(args...)})
		}
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
}
