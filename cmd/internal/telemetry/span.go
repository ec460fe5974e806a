package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// The gateway records its spans itself instead of with the SDK's
// TracerProvider: a span is a small struct whose attributes live in a
// slice used again, and it is encoded for the receiver once, as it ends,
// straight into the batch it is sent in. The SDK's span keeps its
// attributes in a slice of its own that grows with each SetAttributes,
// copies itself into a snapshot as it ends and deduplicates the
// attributes through a map: on a read's two spans, 4 to 5 µs of CPU and
// 3 KB more than these (cmd/loadbench/README.md, "Tracing"). The
// samplers other than the default are still the SDK's, as the OTEL_*
// variables name them.

// Limits of a span, as the OpenTelemetry specification's defaults
// (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT and friends): what is set beyond them
// is dropped and counted.
const (
	maxSpanAttrs  = 128
	maxSpanEvents = 128
	maxSpanLinks  = 128
)

// tracer makes erpgate's spans, each handed to the batcher as it ends when
// it is sampled.
type tracer struct {
	embedded.Tracer
	// sampler decides which spans are sampled; nil is the default,
	// parentbased_always_on, decided without a call.
	sampler sdktrace.Sampler
	batcher *batcher
}

// provider is the TracerProvider of the tracer's spans: any tracer it
// gives is the gateway's one.
type provider struct {
	embedded.TracerProvider
	t *tracer
}

func (p provider) Tracer(string, ...trace.TracerOption) trace.Tracer { return p.t }

// span is a recording span of a sampled trace. What most spans never
// have (events, links, an error's description) is apart, in more, so
// that a read's two spans allocate little.
type span struct {
	embedded.Span
	tracer       *tracer
	sc           trace.SpanContext
	parent       trace.SpanID // zero for a root
	remoteParent bool
	kind         trace.SpanKind
	start, end   int64 // Unix nanoseconds

	mu           sync.Mutex
	ended        bool
	status       codes.Code
	name         string
	attrs        *[]attribute.KeyValue // from attrPool; nil once ended
	droppedAttrs int
	more         *spanMore
}

// spanMore is what few spans have.
type spanMore struct {
	statusMessage string
	events        []event
	droppedEvents int
	links         []trace.Link
	droppedLinks  int
}

// event is a span's event.
type event struct {
	name  string
	time  time.Time
	attrs []attribute.KeyValue
}

// noMore is the spanMore of a span without one.
var noMore spanMore

// moreOf is s.more, made when s has none. Called with mu held, or before
// anyone else has the span.
func (s *span) moreOf() *spanMore {
	if s.more == nil {
		s.more = &spanMore{}
	}
	return s.more
}

// attrPool holds the attribute slices of spans that have ended; a read's
// spans take one each and give it back once encoded.
var attrPool = sync.Pool{New: func() any {
	s := make([]attribute.KeyValue, 0, 16)
	return &s
}}

// Start starts a span, the child of ctx's span (remote or not) unless
// opts ask for a new root. A span the sampler does not sample is a
// non-recording span that carries the trace on.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	if cfg.NewRoot() {
		ctx = trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	}
	parent := trace.SpanContextFromContext(ctx)
	tid := parent.TraceID()
	if !parent.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64()|1)
	}
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], rand.Uint64()|1)
	var res sdktrace.SamplingResult
	if t.sampler == nil {
		// parentbased_always_on: sampled unless the parent is not.
		res.Decision, res.Tracestate = sdktrace.RecordAndSample, parent.TraceState()
		if parent.IsValid() && !parent.IsSampled() {
			res.Decision = sdktrace.Drop
		}
	} else {
		res = t.sampler.ShouldSample(sdktrace.SamplingParameters{
			ParentContext: ctx, TraceID: tid, Name: name, Kind: cfg.SpanKind(), Attributes: cfg.Attributes(), Links: cfg.Links(),
		})
	}
	scc := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceState: res.Tracestate}
	if res.Decision != sdktrace.RecordAndSample {
		// Recorded but not sampled would be sent nowhere: such a span
		// records nothing.
		sc := trace.NewSpanContext(scc)
		ctx = trace.ContextWithSpanContext(ctx, sc)
		return ctx, trace.SpanFromContext(ctx)
	}
	scc.TraceFlags = parent.TraceFlags() | trace.FlagsSampled
	s := &span{tracer: t, sc: trace.NewSpanContext(scc), parent: parent.SpanID(), remoteParent: parent.IsRemote(),
		kind: cfg.SpanKind(), name: name, attrs: attrPool.Get().(*[]attribute.KeyValue)}
	if start := cfg.Timestamp(); !start.IsZero() {
		s.start = start.UnixNano()
	} else {
		s.start = time.Now().UnixNano()
	}
	s.addAttrs(cfg.Attributes())
	s.addAttrs(res.Attributes)
	for _, l := range cfg.Links() {
		s.addLink(l)
	}
	return trace.ContextWithSpan(ctx, s), s
}

func (s *span) SpanContext() trace.SpanContext { return s.sc }

func (s *span) TracerProvider() trace.TracerProvider { return provider{t: s.tracer} }

// IsRecording reports whether the span still takes attributes: until it
// ends.
func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended
}

func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.addAttrs(kv)
	}
}

// addAttrs adds kv's valid attributes, up to the limit. Called with mu
// held, or before anyone else has the span.
func (s *span) addAttrs(kv []attribute.KeyValue) {
	for _, a := range kv {
		switch {
		case !a.Valid():
		case len(*s.attrs) >= maxSpanAttrs:
			s.droppedAttrs++
		default:
			*s.attrs = append(*s.attrs, a)
		}
	}
}

func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.name = name
	}
}

// SetStatus sets the status as the API says: Ok is final, Error takes a
// description, Unset changes nothing.
func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || code == codes.Unset || s.status == codes.Ok {
		return
	}
	s.status = code
	if code == codes.Error && description != "" {
		s.moreOf().statusMessage = description
	} else if s.more != nil {
		s.more.statusMessage = ""
	}
}

func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addEvent(name, cfg)
}

// addEvent adds an event, up to the limit. Called with mu held.
func (s *span) addEvent(name string, cfg trace.EventConfig) {
	if s.ended {
		return
	}
	m := s.moreOf()
	if len(m.events) >= maxSpanEvents {
		m.droppedEvents++
		return
	}
	at := cfg.Timestamp()
	if at.IsZero() {
		at = time.Now()
	}
	m.events = append(m.events, event{name: name, time: at, attrs: cfg.Attributes()})
}

// RecordError adds err as an exception event, as the semantic conventions
// name its attributes.
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	opts = append(opts, trace.WithAttributes(attribute.String("exception.type", fmt.Sprintf("%T", err)),
		attribute.String("exception.message", err.Error())))
	s.AddEvent("exception", opts...)
}

func (s *span) AddLink(l trace.Link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.addLink(l)
	}
}

// addLink adds a link to a valid span context, up to the limit. Called
// with mu held, or before anyone else has the span.
func (s *span) addLink(l trace.Link) {
	switch m := s.moreOf(); {
	case !l.SpanContext.IsValid():
	case len(m.links) >= maxSpanLinks:
		m.droppedLinks++
	default:
		m.links = append(m.links, l)
	}
}

// End ends the span, once: it is encoded into the batch it will be sent
// in, and its attribute slice goes back to the pool.
func (s *span) End(opts ...trace.SpanEndOption) {
	end := time.Time{}
	if len(opts) > 0 {
		cfg := trace.NewSpanEndConfig(opts...)
		end = cfg.Timestamp()
	}
	if end.IsZero() {
		end = time.Now()
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended, s.end = true, end.UnixNano()
	s.mu.Unlock()
	// Ended, the span is changed by no one any more: it is read without
	// the lock.
	s.tracer.batcher.add(s)
	attrs := s.attrs
	s.attrs = nil
	clear(*attrs)
	*attrs = (*attrs)[:0]
	attrPool.Put(attrs)
}

// setAgain reports whether an attribute of later sets k again: the
// encoders keep the last value of a key, as the API asks.
func setAgain(later []attribute.KeyValue, k attribute.Key) bool {
	for _, a := range later {
		if a.Key == k {
			return true
		}
	}
	return false
}
