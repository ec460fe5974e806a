package telemetry

import (
	"encoding/hex"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// jsonEncoding writes OTLP/HTTP's JSON (OTEL_EXPORTER_OTLP_PROTOCOL=
// http/json): the protobuf messages' JSON mapping, with the ids in hex,
// enums as numbers and 64-bit integers as strings, as the OTLP
// specification asks.
type jsonEncoding struct {
	head []byte // the request up to its spans' array
}

func newJSONEncoding(res []attribute.KeyValue, scopeName, scopeVersion string) *jsonEncoding {
	b := []byte(`{"resourceSpans":[{"resource":{"attributes":`)
	b = appendJSONAttrs(b, res)
	b = append(b, `},"scopeSpans":[{"scope":{"name":`...)
	b = appendJSONString(b, scopeName)
	b = append(b, `,"version":`...)
	b = appendJSONString(b, scopeVersion)
	b = append(b, `},"spans":[`...)
	return &jsonEncoding{head: b}
}

func (e *jsonEncoding) appendItem(batch []byte, n int, s *span) []byte {
	if n > 0 {
		batch = append(batch, ',')
	}
	return e.appendSpan(batch, s)
}

func (e *jsonEncoding) appendRequest(b []byte, spans []byte) []byte {
	b = append(b, e.head...)
	b = append(b, spans...)
	return append(b, `]}]}]}`...)
}

// appendSpan appends a Span object.
func (e *jsonEncoding) appendSpan(b []byte, s *span) []byte {
	b = appendJSONSpanContext(b, s.sc)
	flags := uint32(s.sc.TraceFlags()) | flagHasIsRemote
	if pid := s.parent; pid.IsValid() {
		b = append(b, `,"parentSpanId":"`...)
		b = hex.AppendEncode(b, pid[:])
		b = append(b, '"')
		if s.remoteParent {
			flags |= flagIsRemote
		}
	}
	b = append(b, `,"flags":`...)
	b = strconv.AppendUint(b, uint64(flags), 10)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, s.name)
	if s.kind != trace.SpanKindUnspecified {
		b = append(b, `,"kind":`...)
		b = strconv.AppendInt(b, int64(s.kind), 10)
	}
	b = append(b, `,"startTimeUnixNano":`...)
	b = appendJSONNanos(b, s.start)
	b = append(b, `,"endTimeUnixNano":`...)
	b = appendJSONNanos(b, s.end)
	attrs := *s.attrs
	b = append(b, `,"attributes":[`...)
	first := true
	for i, kv := range attrs {
		if setAgain(attrs[i+1:], kv.Key) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONKV(b, kv)
	}
	b = append(b, ']')
	b = appendJSONCount(b, `,"droppedAttributesCount":`, s.droppedAttrs)
	m := s.more
	if m == nil {
		m = &noMore
	}
	if len(m.events) > 0 {
		b = append(b, `,"events":[`...)
		for i, ev := range m.events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"timeUnixNano":`...)
			b = appendJSONTime(b, ev.time)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, ev.name)
			b = append(b, `,"attributes":`...)
			b = appendJSONAttrs(b, ev.attrs)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendJSONCount(b, `,"droppedEventsCount":`, m.droppedEvents)
	if len(m.links) > 0 {
		b = append(b, `,"links":[`...)
		for i, l := range m.links {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONSpanContext(b, l.SpanContext)
			lflags := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
			if l.SpanContext.IsRemote() {
				lflags |= flagIsRemote
			}
			b = append(b, `,"flags":`...)
			b = strconv.AppendUint(b, uint64(lflags), 10)
			b = append(b, `,"attributes":`...)
			b = appendJSONAttrs(b, l.Attributes)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendJSONCount(b, `,"droppedLinksCount":`, m.droppedLinks)
	if s.status != codes.Unset {
		b = append(b, `,"status":{"code":`...)
		b = strconv.AppendUint(b, otlpStatus(s.status), 10)
		if m.statusMessage != "" {
			b = append(b, `,"message":`...)
			b = appendJSONString(b, m.statusMessage)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendJSONSpanContext opens a Span or Link object with the trace id,
// span id and trace state of sc.
func appendJSONSpanContext(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, `{"traceId":"`...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, `","spanId":"`...)
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '"')
	if ts := sc.TraceState().String(); ts != "" {
		b = append(b, `,"traceState":`...)
		b = appendJSONString(b, ts)
	}
	return b
}

func appendJSONCount(b []byte, field string, n int) []byte {
	if n == 0 {
		return b
	}
	b = append(b, field...)
	return strconv.AppendInt(b, int64(n), 10)
}

// appendJSONNanos appends ns, a time in nanoseconds since the epoch, as
// a string.
func appendJSONNanos(b []byte, ns int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, ns, 10)
	return append(b, '"')
}

// appendJSONTime appends t in nanoseconds since the epoch, a 64-bit
// integer and so a string.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, unixNano(t), 10)
	return append(b, '"')
}

func appendJSONAttrs(b []byte, kvs []attribute.KeyValue) []byte {
	b = append(b, '[')
	for i, kv := range kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONKV(b, kv)
	}
	return append(b, ']')
}

func appendJSONKV(b []byte, kv attribute.KeyValue) []byte {
	b = append(b, `{"key":`...)
	b = appendJSONString(b, string(kv.Key))
	b = append(b, `,"value":`...)
	b = appendJSONValue(b, kv.Value)
	return append(b, '}')
}

// appendJSONValue appends an AnyValue object.
func appendJSONValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = append(b, `{"boolValue":`...)
		b = strconv.AppendBool(b, v.AsBool())
	case attribute.INT64:
		b = append(b, `{"intValue":"`...)
		b = strconv.AppendInt(b, v.AsInt64(), 10)
		b = append(b, '"')
	case attribute.FLOAT64:
		b = append(b, `{"doubleValue":`...)
		switch f := v.AsFloat64(); {
		case math.IsNaN(f):
			b = append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(f, -1):
			b = append(b, `"-Infinity"`...)
		default:
			b = strconv.AppendFloat(b, f, 'g', -1, 64)
		}
	case attribute.STRINGSLICE, attribute.INT64SLICE, attribute.BOOLSLICE, attribute.FLOAT64SLICE:
		b = append(b, `{"arrayValue":{"values":[`...)
		for i, e := range sliceValues(v) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONValue(b, e)
		}
		b = append(b, `]}`...)
	default:
		b = append(b, `{"stringValue":`...)
		b = appendJSONString(b, v.Emit())
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string; bytes that are not UTF-8
// become U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	// The error only says that AppendQuote replaced invalid bytes.
	out, _ := jsontext.AppendQuote(b, s)
	return out
}
