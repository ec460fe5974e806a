package retry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of an attempt's span (Policy.Tracer). The adapter that
// makes the attempt adds its own: what it asked the ERP and what came back.
const (
	// AttrService is the service a refused call was for (Call.Service);
	// an attempt's span has the adapter's name of it instead.
	AttrService = attribute.Key("erpgate.erp.service")
	// AttrAttempt is the attempt's number in its call, from 1.
	AttrAttempt = attribute.Key("erpgate.erp.attempt")
	// AttrBreaker is the state of the service's circuit breaker when the
	// attempt was let through (closed or half-open), or open for a call
	// it refused.
	AttrBreaker = attribute.Key("erpgate.erp.breaker_state")
	// AttrResult is a failed attempt's result as the Observer is told
	// it: business, transient, timeout, error or unknown (breaker_open
	// for a call the breaker refused).
	AttrResult = attribute.Key("erpgate.erp.result")
	// AttrWrite says the call changes ERP state.
	AttrWrite = attribute.Key("erpgate.erp.write")
)

// TraceObserver is an Observer that is also told of the trace of a
// sampled attempt, for an exemplar of its duration: the Runner calls
// AttemptTraced instead of Attempt for such an attempt.
type TraceObserver interface {
	Observer
	AttemptTraced(service Service, result string, d time.Duration, trace trace.TraceID)
}

// clientKind is the kind of an attempt's span, made once: passed as a
// slice, it costs no allocation per span.
var clientKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// startAttempt starts the span of the call's n-th attempt in ctx, the
// attempt's context. Its attributes are few, each one spent on every
// read: the service is the adapter's to name (erp/sap names SAP's).
func (r *Runner) startAttempt(ctx context.Context, call Call, n int, br *breaker) (context.Context, trace.Span) {
	ctx, span := r.policy.Tracer.Start(ctx, spanName(call), clientKind...)
	ctx = context.WithValue(ctx, attemptSpanKey{}, span)
	if span.IsRecording() {
		state := "disabled"
		if !br.disabled {
			state = br.cb.State().String()
		}
		SetAttributes(span, func(a []attribute.KeyValue) []attribute.KeyValue {
			a = append(a, AttrAttempt.Int(n), AttrBreaker.String(state))
			if call.Write {
				a = append(a, AttrWrite.Bool(true))
			}
			return a
		})
	}
	return ctx, span
}

// SetAttributes sets on span, in one call, the attributes add appends to
// a slice it is given. The span copies them, and the slice serves span
// after span: written out in a call of the span's SetAttributes, an
// interface's method, the attributes would cost an allocation of their
// own on every traced call.
func SetAttributes(span trace.Span, add func([]attribute.KeyValue) []attribute.KeyValue) {
	buf := attrBufs.Get().(*[]attribute.KeyValue)
	attrs := add((*buf)[:0])
	span.SetAttributes(attrs...)
	clear(attrs)
	*buf = attrs[:0]
	attrBufs.Put(buf)
}

// attrBufs holds SetAttributes' slices.
var attrBufs = sync.Pool{New: func() any {
	s := make([]attribute.KeyValue, 0, 10)
	return &s
}}

// spanName names an attempt's span by its call ("read invoice"); the
// adapter names it better once it knows the request.
// attemptSpanKey is the context key of an attempt's own span.
type attemptSpanKey struct{}

// AttemptSpan is the span the Runner made for the attempt ctx belongs to,
// which the adapter may name after the request it sends and give the
// ERP's answer; nil without one (tracing off, or a context no attempt
// made), so that an adapter never renames the span of whatever encloses
// the call.
func AttemptSpan(ctx context.Context) trace.Span {
	span, _ := ctx.Value(attemptSpanKey{}).(trace.Span)
	return span
}

func spanName(call Call) string {
	if call.Operation == "" {
		return string(call.Service)
	}
	return call.Operation
}

// endAttempt ends an attempt's span with its result, named only for a
// failure. A failure's text stays out of the span: it is in the gateway's
// log, beside the trace id.
func endAttempt(span trace.Span, result string, err error) {
	if err != nil {
		span.SetStatus(codes.Error, result)
		span.SetAttributes(AttrResult.String(result), attribute.String("error.type", result))
	}
	span.End()
}

// traceRefused records, when tracing, the call's n-th attempt that the
// open breaker refused: a span of no duration, so that the trace shows
// why the call failed at once.
func (r *Runner) traceRefused(ctx context.Context, call Call, n int) {
	if r.policy.Tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	_, span := r.policy.Tracer.Start(ctx, spanName(call), clientKind[0],
		trace.WithAttributes(AttrService.String(string(call.Service)), AttrAttempt.Int(n), AttrBreaker.String("open")))
	span.SetStatus(codes.Error, "breaker open")
	span.SetAttributes(AttrResult.String("breaker_open"), attribute.String("error.type", "breaker_open"))
	span.End()
}
