package api

import (
	"context"
	"net/http"

	"github.com/erpgate/erpgate/retry"
	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of an operation's span (Options.Tracer), beside the HTTP
// ones of the semantic conventions.
const (
	// AttrCode is the five-field code of a call answered with an error,
	// or the named outcome of a success that has one (TOLERANCE_EXCEEDED).
	AttrCode = attribute.Key("erpgate.code")
	// AttrOperation is the operationId, on a span named otherwise (a tool
	// call's on /mcp).
	AttrOperation = attribute.Key("erpgate.operation")
	// AttrRunID, AttrInvoiceID and AttrClient are the call's agent run,
	// the invoice it is about and the client that made it. (The request
	// id is in the access log's line, which names the trace.)
	AttrRunID     = attribute.Key("erpgate.run_id")
	AttrInvoiceID = attribute.Key("erpgate.invoice_id")
	AttrClient    = attribute.Key("erpgate.client")
)

// serverKind is the kind of an operation's span, made once: passed as
// a slice, it costs no allocation per span.
var serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// traceContext reads the W3C trace context of a request (traceparent and
// tracestate). The gateway uses no other propagation format.
var traceContext propagation.TraceContext

// withTraceContext returns ctx, r's, with the span context of r's
// traceparent (and tracestate) as its remote parent, or ctx as it is when r
// has none: with tracing on, the operation's span is its child; off, the
// ERP's requests carry it on as it came, and the log lines name it.
func withTraceContext(ctx context.Context, r *http.Request) context.Context {
	if _, ok := r.Header["Traceparent"]; !ok {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(r.Header))
}

// spanKey is the key the OpenTelemetry API keeps a context's span under,
// learnt once from trace.SpanFromContext: a request's context
// (requestContext) answers it with the operation's span once that span has
// started, so that starting it takes no copy of the request to carry it (a
// third of what tracing allocates for a REST call). Nil should the API
// ever find a span otherwise; the request is then copied as before.
var spanKey = learnSpanKey()

func learnSpanKey() any {
	k := &keyContext{Context: context.Background()}
	trace.SpanFromContext(k)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})
	k.key, k.value = k.asked, trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), sc))
	if k.key == nil || !trace.SpanFromContext(k).SpanContext().Equal(sc) {
		return nil
	}
	return k.key
}

// keyContext answers value under key, and notes the key it was last asked
// for.
type keyContext struct {
	context.Context
	key, value, asked any
}

func (k *keyContext) Value(key any) any {
	k.asked = key
	if k.key != nil && key == k.key {
		return k.value
	}
	return nil
}

// carriesSpan reports whether ctx answers the span of rec, its request's
// record, as the current span: when it is the request's own context.
func carriesSpan(ctx context.Context, rec *requestRecord) bool {
	rc, ok := ctx.(*requestContext)
	return ok && spanKey != nil && &rc.rec == rec
}

// operationSpan starts the span of c, a call of o, and reports whether it
// is the call's own to end. A call made inside a span of this process (a
// tool call of /mcp, which has the span of its own) adds its attributes to
// that span instead of starting another. Nil without tracing.
func (s *Server) operationSpan(c *operationCall, o operation) (span trace.Span, own bool) {
	if s.tracer == nil {
		return nil, false
	}
	ctx := c.r.Context()
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsRemote() {
		return trace.SpanFromContext(ctx), false
	}
	ctx, span = s.tracer.Start(ctx, o.name, serverKind...)
	c.record.span = span
	if !carriesSpan(c.r.Context(), c.record) {
		c.r = c.r.WithContext(ctx)
	}
	return span, true
}

// endOperation ends the span of c with its answer resp.
func endOperation(span trace.Span, own bool, c *operationCall, resp *response, o operation) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		if own && resp.status >= 500 {
			span.SetStatus(codes.Error, resp.code)
		}
		retry.SetAttributes(span, func(attrs []attribute.KeyValue) []attribute.KeyValue {
			if own {
				attrs = append(attrs, attribute.String("http.request.method", c.r.Method),
					attribute.Int("http.response.status_code", resp.status))
				if rc := chi.RouteContext(c.r.Context()); rc != nil {
					attrs = append(attrs, attribute.String("http.route", rc.RoutePattern()))
				}
				if resp.status >= 400 {
					attrs = append(attrs, attribute.String("error.type", resp.code))
				}
			} else {
				attrs = append(attrs, AttrOperation.String(o.name))
			}
			if resp.code != OutcomeOK && resp.code != "" {
				attrs = append(attrs, AttrCode.String(resp.code))
			}
			if c.run != "" {
				attrs = append(attrs, AttrRunID.String(c.run))
			}
			if id := c.args.invoiceID(c.r); id != "" && invoiceIDPattern.MatchString(id) {
				attrs = append(attrs, AttrInvoiceID.String(id))
			}
			if c.record.client != "" {
				attrs = append(attrs, AttrClient.String(c.record.client))
			}
			return attrs
		})
	}
	if own {
		span.End()
	}
}

// sampledTrace is the trace id of span for an exemplar: zero unless
// tracing is on and the span is sampled.
func sampledTrace(span trace.Span) trace.TraceID {
	if span == nil {
		return trace.TraceID{}
	}
	if sc := span.SpanContext(); sc.IsSampled() {
		return sc.TraceID()
	}
	return trace.TraceID{}
}
