package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/erpgate/erpgate/retry"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A tool call's span (Options.Tracer) follows the OpenTelemetry semantic
// conventions for MCP: a server span named "tools/call <tool>" with the
// attributes below; a result with isError has error.type tool_error. The
// REST handler that serves the call adds its own to the same span (the
// five-field code, the run, the invoice, the client): it makes no span of
// its own inside one of this process.
const (
	attrMethod          = attribute.Key("mcp.method.name")
	attrSession         = attribute.Key("mcp.session.id")
	attrProtocol        = attribute.Key("mcp.protocol.version")
	attrToolName        = attribute.Key("gen_ai.tool.name")
	attrGenAIOperation  = attribute.Key("gen_ai.operation.name")
	attrRequestID       = attribute.Key("jsonrpc.request.id")
	attrRPCStatus       = attribute.Key("rpc.response.status_code")
	attrErrorType       = attribute.Key("error.type")
	attrCode            = attribute.Key("erpgate.code")
	methodToolsCall     = "tools/call"
	errorTypeToolError  = "tool_error"
	genAIOperationTools = "execute_tool"
)

// serverKind is the kind of a tool call's span, made once: passed as
// a slice, it costs no allocation per span.
var serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// callIDHeader carries a tools/call's JSON-RPC id from the HTTP handler to
// the SDK's tool handler, which sees only request headers, as
// remoteAddrHeader carries the peer's address.
const callIDHeader = "Erpgate-Mcp-Call-Id"

// traceMeta is the trace context of a request's params._meta.
type traceMeta struct {
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate"`
}

func (m *traceMeta) Get(key string) string {
	switch key {
	case "traceparent":
		return m.Traceparent
	case "tracestate":
		return m.Tracestate
	}
	return ""
}

func (m *traceMeta) Set(string, string) {}

func (m *traceMeta) Keys() []string { return []string{"traceparent", "tracestate"} }

// metaTrace reads the trace context of a raw params._meta: the string
// members traceparent and tracestate, the others skipped unread.
func metaTrace(raw jsontext.Value) traceMeta {
	var m traceMeta
	if raw == nil || !bytes.Contains(raw, []byte(`"traceparent"`)) {
		return m
	}
	d := decoderOf(raw)
	defer d.release()
	dec := d.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return m
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return traceMeta{}
		}
		var to *string
		switch name.String() {
		case "traceparent":
			to = &m.Traceparent
		case "tracestate":
			to = &m.Tracestate
		}
		if to == nil || dec.PeekKind() != '"' {
			if dec.SkipValue() != nil {
				return traceMeta{}
			}
			continue
		}
		v, err := dec.ReadToken()
		if err != nil {
			return traceMeta{}
		}
		*to = v.String()
	}
	return m
}

// sdkMetaTrace reads the trace context of the SDK's params._meta.
func sdkMetaTrace(meta map[string]any) traceMeta {
	var m traceMeta
	m.Traceparent, _ = meta["traceparent"].(string)
	m.Tracestate, _ = meta["tracestate"].(string)
	return m
}

// callTrace is what the span of one tools/call is made of.
type callTrace struct {
	tool     string
	spanName string // "tools/call <tool>"
	id       string // the JSON-RPC id as its text ("7", or a string's value)
	protocol string
	meta     traceMeta
	header   http.Header
	// final says no other path answers the call after this one.
	final bool
	// start is when the call arrived, and path the MCP request's path,
	// for the access log's line of a refusal.
	start time.Time
	path  string
}

// context returns ctx in the call's trace context: params._meta's
// traceparent (and tracestate), or else the HTTP request's. With tracing
// the call's span is its child; without, it is only passed on to the ERP
// as it came.
func (ct *callTrace) context(ctx context.Context) context.Context {
	var parent propagation.TextMapCarrier
	switch {
	case ct.meta.Traceparent != "":
		parent = &ct.meta
	case ct.header != nil && ct.header.Get("Traceparent") != "":
		parent = propagation.HeaderCarrier(ct.header)
	}
	if parent == nil {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, parent)
}

// startCall starts the call's span in ctx, its trace context; nil
// without tracing.
func (s *Server) startCall(ctx context.Context, ct *callTrace) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	ctx, span := s.tracer.Start(ctx, ct.spanName, serverKind...)
	if span.IsRecording() {
		retry.SetAttributes(span, func(attrs []attribute.KeyValue) []attribute.KeyValue {
			attrs = append(attrs, attrMethod.String(methodToolsCall), attrToolName.String(ct.tool),
				attrGenAIOperation.String(genAIOperationTools))
			if ct.id != "" {
				attrs = append(attrs, attrRequestID.String(ct.id))
			}
			if ct.protocol != "" {
				attrs = append(attrs, attrProtocol.String(ct.protocol))
			}
			if sid := ct.header.Get("Mcp-Session-Id"); sid != "" {
				attrs = append(attrs, attrSession.String(sid))
			}
			return attrs
		})
	}
	return ctx, span
}

// endCall ends a call's span with its answer: the REST status of its
// result, or err, a protocol error.
func endCall(span trace.Span, status int, err error) {
	if span == nil {
		return
	}
	switch {
	case err != nil:
		code := "error"
		if rpc, ok := errors.AsType[*jsonrpc.Error](err); ok {
			code = strconv.FormatInt(rpc.Code, 10)
			span.SetAttributes(attrRPCStatus.String(code))
		}
		span.SetAttributes(attrErrorType.String(code))
		span.SetStatus(codes.Error, code)
	case status >= 400:
		span.SetAttributes(attrErrorType.String(errorTypeToolError))
		span.SetStatus(codes.Error, errorTypeToolError)
	}
	span.End()
}

// idText is a JSON-RPC id as the span names it: a number as written, a
// string's value.
func idText(id jsontext.Value) string {
	if len(id) > 1 && id[0] == '"' {
		var s string
		if jsonv2.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

// peekCallID reads the JSON-RPC id of r when it is one tools/call, for
// the span the SDK's tool handler makes, and leaves r's body as it came.
// "" for any other request.
func peekCallID(r *http.Request) string {
	if r.Method != http.MethodPost || r.Body == nil {
		return ""
	}
	body, err := readBody(r.Body, maxPeek)
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) >= maxPeek {
		return ""
	}
	msg, ok := decodeMessage(body)
	if !ok || string(msg.method) != `"`+methodToolsCall+`"` || msg.id == nil || !directID.Match(msg.id) {
		return ""
	}
	return idText(msg.id)
}

// maxPeek bounds what peekCallID reads of a body: a tool call of the
// gateway's tools is far shorter.
const maxPeek = 64 << 10
