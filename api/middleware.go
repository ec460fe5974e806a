package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/openapi"
)

// headerIDPattern accepts a request or run id: 1 to 128 of
// [A-Za-z0-9._:-], what the contract's pattern ^[A-Za-z0-9._:-]{1,128}$
// allows, checked without a regular expression on every request.
var headerIDPattern idPattern

type idPattern struct{}

// MatchString reports whether s is a well-formed id.
func (idPattern) MatchString(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// requestContext is the context a request is served in below requestID:
// its id, its run id and the access log's record, in one allocation with
// the status recorder, and one copy of the request.
type requestContext struct {
	context.Context
	// id and run are each the one value of its response header, so that
	// neither the header nor Value needs an allocation of its own.
	id, run [1]string
	rec     requestRecord
	sw      statusRecorder
}

// Value answers the request's id (also under erp's key, for the ERP
// adapters to send on), run id and record, the operation's span once it
// has started (spanKey), and asks the parent for anything else. A request
// without a run id leaves it to the parent, as context.WithValue would.
func (c *requestContext) Value(key any) any {
	switch key {
	case requestIDKey, erp.RequestIDKey{}:
		return &c.id[0]
	case runIDKey:
		if c.run[0] != "" {
			return &c.run[0]
		}
	case recordKey:
		return &c.rec
	case erp.CalledKey{}:
		return &c.rec.called
	}
	if c.rec.span != nil && spanKey != nil && key == spanKey {
		return c.rec.span // the operation's (carriesSpan)
	}
	return c.Context.Value(key)
}

// requestID accepts a well-formed X-Request-Id or makes one, echoes it on
// the response, and does the same for X-Run-Id. Without a well-formed
// X-Run-Id, Mcp-Param-Run-Id is the run id: the header MCP clients mirror
// from the run_id argument (x-mcp-header in the contract). It also starts
// the request's access-log record (accessLog), in the trace context of the
// request's traceparent, when it has one (withTraceContext).
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, run := callIDs(r.Header)
		h := w.Header()
		rc := &requestContext{Context: withTraceContext(r.Context(), r), id: [1]string{id}}
		h["X-Request-Id"] = rc.id[:]
		if run != "" {
			rc.run[0] = run
			h["X-Run-Id"] = rc.run[:]
		}
		next.ServeHTTP(w, r.WithContext(rc))
	})
}

// callIDs are the request id of a request with header h, its well-formed
// X-Request-Id or a new one, and its run id, from a well-formed X-Run-Id
// or else Mcp-Param-Run-Id; "" without one.
func callIDs(h http.Header) (id, run string) {
	id = h.Get("X-Request-Id")
	if !headerIDPattern.MatchString(id) {
		id = newID()
	}
	run = h.Get("X-Run-Id")
	if !headerIDPattern.MatchString(run) {
		run = h.Get("Mcp-Param-Run-Id")
	}
	if !headerIDPattern.MatchString(run) {
		run = ""
	}
	return id, run
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recoverPanic turns a panic into INTERNAL; the stack goes to the log only.
func (s *Server) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "panic", "request_id", RequestIDFromContext(r.Context()),
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			e := errmap.Map(fmt.Errorf("panic: %v", v))
			recordFrom(r.Context()).code = string(e.Code)
			errmap.Write(w, e)
		}()
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog writes one line per request with its ids, operation and code,
// and of an operation's call its arguments, redacted, and the ERP's
// services and entity sets it called (logargs.go): the one entry of each
// invocation, REST or MCP. The cause of an error is logged here and never
// sent to the client.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// Behind requestID the record and the status recorder come with
		// the request's context; on its own, accessLog makes them.
		var rec *requestRecord
		var sw *statusRecorder
		if rc, ok := r.Context().(*requestContext); ok {
			rec, sw = &rc.rec, &rc.sw
			sw.ResponseWriter = w
			next.ServeHTTP(sw, r)
		} else {
			rec, sw = &requestRecord{}, &statusRecorder{ResponseWriter: w}
			next.ServeHTTP(sw, r.WithContext(withRecord(r.Context(), rec)))
		}
		level := slog.LevelInfo
		if rec.cause != nil && sw.status >= 500 {
			level = slog.LevelError
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		// Typed attributes, not key-value pairs: one line per request is
		// the gateway's hottest log and boxing each value would allocate.
		path := r.URL.Path
		if rec.operation != "" {
			path = logPath(r)
		}
		attrs := make([]slog.Attr, 0, 13)
		attrs = append(attrs, slog.String("request_id", RequestIDFromContext(r.Context())), slog.String("method", r.Method),
			slog.String("path", path), slog.Int("status", sw.status), slog.Int64("duration_ms", time.Since(start).Milliseconds()))
		if run := RunIDFromContext(r.Context()); run != "" {
			attrs = append(attrs, slog.String("run_id", run))
		}
		if rec.operation != "" {
			attrs = append(attrs, slog.String("operation", rec.operation))
		}
		if rec.code != "" {
			attrs = append(attrs, slog.String("code", rec.code))
		}
		if rec.client != "" {
			attrs = append(attrs, slog.String("client", rec.client))
		}
		if rec.operation != "" {
			// The call's arguments, redacted, and what it called of the
			// ERP: one entry per invocation (logargs.go).
			attrs = appendInvocation(attrs, r, rec)
		}
		if rec.cause != nil {
			attrs = appendCause(attrs, rec.cause)
		}
		ctx := r.Context()
		if rec.span != nil && !carriesSpan(ctx, rec) {
			// The operation's span, for the log's trace_id and span_id.
			ctx = trace.ContextWithSpan(ctx, rec.span)
		}
		s.log.LogAttrs(ctx, level, "request", attrs...)
	})
}

// appendCause appends the access log's attributes of a request's cause:
// the ERP's message ids, when it sent any, and the cause's text. Apart
// from accessLog, so that a request without a cause puts nothing on the
// heap for errors.As.
func appendCause(attrs []slog.Attr, cause error) []slog.Attr {
	var up *erp.UpstreamError
	if errors.As(cause, &up) && len(up.MessageIDs) > 0 {
		attrs = append(attrs, slog.Any("erp_message_ids", up.MessageIDs))
	}
	return append(attrs, slog.String("cause", cause.Error()))
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	e := errmap.Protocol(http.StatusNotFound, "No operation at this path. See /openapi.json for the operations.", nil)
	recordFrom(r.Context()).code = string(e.Code)
	errmap.Write(w, e)
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	e := errmap.Protocol(http.StatusMethodNotAllowed,
		fmt.Sprintf("Method %s is not allowed at this path. See /openapi.json for the operations.", safeMethod(r.Method)), nil)
	recordFrom(r.Context()).code = string(e.Code)
	w.Header().Set("Allow", strings.Join(s.allowed(r.URL.Path), ", "))
	errmap.Write(w, e)
}

// safeMethod returns the method when it is a plain token, so the message
// never echoes arbitrary input.
func safeMethod(m string) string {
	if len(m) <= 16 && headerIDPattern.MatchString(m) {
		return m
	}
	return "this"
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	body, _ := marshal(healthResponse{Status: "ok"})
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if s.ready != nil {
		if err := s.ready(r.Context()); err != nil {
			e := errmap.Map(err)
			recordFrom(r.Context()).cause = err
			errmap.Write(w, e)
			return
		}
	}
	if s.oauth != nil {
		// Without the issuer's keys no access token can be checked: out of
		// the load balancer until they can be had (AUTH_UNAVAILABLE).
		if err := s.oauth.ready(r.Context()); err != nil {
			recordFrom(r.Context()).cause = err
			errmap.Write(w, errmap.Map(err))
			return
		}
	}
	resp := healthResponse{Status: "ready", Store: &storeHealth{Engine: s.records.Engine(), Status: "ok"}}
	if err := s.records.Ping(r.Context()); err != nil {
		// Without its records the gateway can take no write: out of the
		// load balancer until the database is back.
		recordFrom(r.Context()).cause = err
		errmap.Write(w, errmap.Map(refusal.StoreUnavailable{Which: refusal.StoreRecords, Engine: s.records.Engine(), Err: err}))
		return
	}
	if s.breakers != nil {
		resp.Breakers = map[string]string{}
		for svc, state := range s.breakers() {
			resp.Breakers[string(svc)] = state
			if state != "closed" {
				resp.Status = "degraded"
			}
		}
	}
	// What the ERP's services answered when their $metadata was last read
	// ("ok", "not_found", "forbidden", "unreachable", …), when the ERP
	// client keeps that. A service that is not ok makes the gateway
	// degraded but keeps it in the load balancer, as an open breaker does:
	// it answers the agent with a named code either way.
	ready := struct {
		healthResponse
		ERP  map[string]string `json:"erp,omitempty"`
		Auth string            `json:"auth"`
	}{healthResponse: resp, Auth: s.authState()}
	if ss, ok := s.erp.(interface {
		ServiceStatus() (map[erp.Service]string, bool)
	}); ok {
		if states, read := ss.ServiceStatus(); read {
			ready.ERP = make(map[string]string, len(states))
			for svc, state := range states {
				ready.ERP[string(svc)] = state
				if state != "ok" {
					ready.Status = "degraded"
				}
			}
		}
	}
	body, _ := marshal(ready)
	writeJSON(w, http.StatusOK, body)
}

// handleContract serves a contract document. flat, when not nil, is the
// same contract with every $ref inlined and servers only at the top
// (openapi.Flat), served for ?flat=1 to clients that resolve no references.
func (s *Server) handleContract(contentType string, doc, flat []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(doc) == 0 {
			s.notFound(w, r)
			return
		}
		body := doc
		if flat != nil && r.URL.Query().Get("flat") == "1" {
			body = flat
		}
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}
}

// flatContract is openapi.Flat of the served JSON contract, or nil when
// there is none (or it cannot be flattened, which the openapi tests rule
// out for the embedded contract).
func (s *Server) flatContract() []byte {
	if len(s.contractJSON) == 0 {
		return nil
	}
	flat, err := openapi.Flat(s.contractJSON)
	if err != nil {
		s.log.Error("flat contract", "err", err)
		return nil
	}
	return flat
}

// allowed lists the methods the router serves at path, for a 405's Allow
// header.
func (s *Server) allowed(path string) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if s.router.Match(chi.NewRouteContext(), m, path) {
			out = append(out, m)
		}
	}
	return out
}

// headerBytes is the size of r's request line and header fields as they
// came on the wire, near enough to hold them to a limit.
func (s *Server) headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len(r.Host) + 8
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// refuseOversize answers a request whose header is over
// Options.MaxHeaderBytes (431) or whose announced body is over
// Options.MaxBodyBytes (413), unread.
func (s *Server) refuseOversize(w http.ResponseWriter, r *http.Request) {
	e := tooLarge(s.maxBody)
	if s.headerBytes(r) > s.maxHeader {
		e = errmap.Protocol(http.StatusRequestHeaderFieldsTooLarge,
			fmt.Sprintf("The request's header fields are larger than %d bytes.", s.maxHeader), map[string]any{"limit_bytes": s.maxHeader})
	}
	recordFrom(r.Context()).code = string(e.Code)
	errmap.Write(w, e)
}

// mcpWriter is the response writer of /mcp. It counts a 401 as a failed
// authentication of the source address, answering RATE_LIMITED instead
// once the address's failures are spent. The MCP endpoint writes its
// transport's refusals (a wrong method, Host or Origin, content type or
// Accept, an oversize body) as JSON-RPC errors with the five fields; one
// in plain text, should any get past it, is written here as the five
// fields.
type mcpWriter struct {
	http.ResponseWriter
	s *Server
	r *http.Request
	// wrote is set once the status is written; swallow once the writer
	// has written its own body in place of the transport's.
	wrote, swallow bool
}

func (w *mcpWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote = true
	h := w.Header()
	var e *errmap.Error
	switch {
	case status == http.StatusUnauthorized:
		if err := w.s.authRefusal(w.r, authFailReason(w.r, nil), nil); err != nil {
			h.Del("WWW-Authenticate")
			e = errmap.Map(err)
		}
	case status >= 400 && !strings.HasPrefix(h.Get("Content-Type"), "application/"):
		e = mcpRefusal(status, w.r)
	}
	if e == nil {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.swallow = true
	h.Del("X-Content-Type-Options")
	errmap.Write(w.ResponseWriter, e)
}

func (w *mcpWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends what is buffered, for the transport's event streams.
func (w *mcpWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.swallow {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *mcpWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mcpRefusal is the five-field INVALID_REQUEST of an HTTP status the MCP
// transport refused a request with (errmap.Transport).
func mcpRefusal(status int, r *http.Request) *errmap.Error {
	return errmap.Transport(status, r.Method, sdk.DefaultMaxRequestBodyBytes)
}
