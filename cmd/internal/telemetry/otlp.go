package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// otlpHTTP exports spans over OTLP/HTTP in protobuf. It writes the
// ExportTraceServiceRequest itself, straight from the spans into one
// buffer used again, instead of building the protobuf message's Go values
// (go.opentelemetry.io/otel/exporters/otlp/otlptrace allocates three
// values per attribute): on a gateway that traces every call, the export
// was the greater part of what tracing cost. The batcher calls
// ExportSpans from one goroutine at a time.
type otlpHTTP struct {
	url     string
	headers map[string]string
	gzip    bool
	client  *http.Client

	buf, span, scratch []byte
	zbuf               bytes.Buffer
	zw                 *gzip.Writer
}

// defaultOTLPTimeout bounds one export when the settings give none.
const defaultOTLPTimeout = 10 * time.Second

func newOTLPHTTP(s Settings) *otlpHTTP {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = defaultOTLPTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.TLS != nil {
		tr.TLSClientConfig = s.TLS
	}
	return &otlpHTTP{url: s.Endpoint, headers: s.Headers, gzip: s.Gzip,
		client: &http.Client{Transport: tr, Timeout: timeout}}
}

// ExportSpans sends spans in one request. A receiver's refusal, or no
// answer, loses them: the gateway never waits for its traces.
func (e *otlpHTTP) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	e.buf = e.encode(e.buf[:0], spans)
	body := e.buf
	if e.gzip {
		e.zbuf.Reset()
		if e.zw == nil {
			e.zw = gzip.NewWriter(&e.zbuf)
		} else {
			e.zw.Reset(&e.zbuf)
		}
		_, _ = e.zw.Write(body)
		_ = e.zw.Close()
		body = e.zbuf.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "erpgate/"+version())
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: %d spans not sent: %w", len(spans), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("otlp: %d spans refused: the receiver answered %d", len(spans), resp.StatusCode)
	}
	return nil
}

// Shutdown closes the exporter's idle connections.
func (e *otlpHTTP) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// The field numbers of opentelemetry/proto (collector/trace/v1,
// trace/v1, resource/v1, common/v1).
const (
	fRequestResourceSpans = 1 // ExportTraceServiceRequest.resource_spans
	fResourceSpansRes     = 1 // ResourceSpans.resource
	fResourceSpansScope   = 2 // ResourceSpans.scope_spans
	fResourceSpansSchema  = 3
	fResourceAttrs        = 1 // Resource.attributes
	fScopeSpansScope      = 1 // ScopeSpans.scope
	fScopeSpansSpans      = 2
	fScopeSpansSchema     = 3
	fScopeName            = 1 // InstrumentationScope.name
	fScopeVersion         = 2
	fSpanTraceID          = 1
	fSpanID               = 2
	fSpanTraceState       = 3
	fSpanParentID         = 4
	fSpanName             = 5
	fSpanKind             = 6
	fSpanStart            = 7
	fSpanEnd              = 8
	fSpanAttrs            = 9
	fSpanDroppedAttrs     = 10
	fSpanEvents           = 11
	fSpanDroppedEvents    = 12
	fSpanLinks            = 13
	fSpanDroppedLinks     = 14
	fSpanStatus           = 15
	fSpanFlags            = 16
	fEventTime            = 1
	fEventName            = 2
	fEventAttrs           = 3
	fEventDroppedAttrs    = 4
	fLinkTraceID          = 1
	fLinkSpanID           = 2
	fLinkTraceState       = 3
	fLinkAttrs            = 4
	fLinkDroppedAttrs     = 5
	fLinkFlags            = 6
	fStatusMessage        = 2
	fStatusCode           = 3
	fKVKey                = 1
	fKVValue              = 2
	fAnyString            = 1
	fAnyBool              = 2
	fAnyInt               = 3
	fAnyDouble            = 4
	fAnyArray             = 5
	fArrayValues          = 1
	// The span flags of whether the parent is remote (SpanFlags).
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// encode appends the ExportTraceServiceRequest of spans to b: one
// ResourceSpans per run of spans of one resource, one ScopeSpans per run
// of one scope within it.
func (e *otlpHTTP) encode(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	for i := 0; i < len(spans); {
		res := spans[i].Resource()
		j := i + 1
		for j < len(spans) && spans[j].Resource() == res {
			j++
		}
		b = appendMessage(b, fRequestResourceSpans, func(b []byte) []byte {
			b = appendMessage(b, fResourceSpansRes, func(b []byte) []byte {
				for _, kv := range res.Attributes() {
					b = e.appendKV(b, fResourceAttrs, kv)
				}
				return b
			})
			for k := i; k < j; {
				scope := spans[k].InstrumentationScope()
				l := k + 1
				for l < j && spans[l].InstrumentationScope() == scope {
					l++
				}
				b = appendMessage(b, fResourceSpansScope, func(b []byte) []byte {
					b = appendMessage(b, fScopeSpansScope, func(b []byte) []byte {
						b = appendString(b, fScopeName, scope.Name)
						return appendString(b, fScopeVersion, scope.Version)
					})
					for _, s := range spans[k:l] {
						e.span = e.appendSpan(e.span[:0], s)
						b = protowire.AppendTag(b, fScopeSpansSpans, protowire.BytesType)
						b = protowire.AppendBytes(b, e.span)
					}
					return appendString(b, fScopeSpansSchema, scope.SchemaURL)
				})
				k = l
			}
			return appendString(b, fResourceSpansSchema, res.SchemaURL())
		})
		i = j
	}
	return b
}

// appendSpan appends the fields of a Span message.
func (e *otlpHTTP) appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = protowire.AppendTag(b, fSpanTraceID, protowire.BytesType)
	b = protowire.AppendBytes(b, tid[:])
	b = protowire.AppendTag(b, fSpanID, protowire.BytesType)
	b = protowire.AppendBytes(b, sid[:])
	b = appendString(b, fSpanTraceState, sc.TraceState().String())
	flags := uint32(sc.TraceFlags()) | flagHasIsRemote
	if p := s.Parent(); p.IsValid() {
		pid := p.SpanID()
		b = protowire.AppendTag(b, fSpanParentID, protowire.BytesType)
		b = protowire.AppendBytes(b, pid[:])
		if p.IsRemote() {
			flags |= flagIsRemote
		}
	}
	b = appendString(b, fSpanName, s.Name())
	if k := s.SpanKind(); k != trace.SpanKindUnspecified {
		b = protowire.AppendTag(b, fSpanKind, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(k))
	}
	b = appendFixed64(b, fSpanStart, unixNano(s.StartTime()))
	b = appendFixed64(b, fSpanEnd, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		b = e.appendKV(b, fSpanAttrs, kv)
	}
	b = appendUint(b, fSpanDroppedAttrs, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		b = appendMessage(b, fSpanEvents, func(b []byte) []byte {
			b = appendFixed64(b, fEventTime, unixNano(ev.Time))
			b = appendString(b, fEventName, ev.Name)
			for _, kv := range ev.Attributes {
				b = e.appendKV(b, fEventAttrs, kv)
			}
			return appendUint(b, fEventDroppedAttrs, uint64(ev.DroppedAttributeCount))
		})
	}
	b = appendUint(b, fSpanDroppedEvents, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, fSpanLinks, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = protowire.AppendTag(b, fLinkTraceID, protowire.BytesType)
			b = protowire.AppendBytes(b, ltid[:])
			b = protowire.AppendTag(b, fLinkSpanID, protowire.BytesType)
			b = protowire.AppendBytes(b, lsid[:])
			b = appendString(b, fLinkTraceState, l.SpanContext.TraceState().String())
			for _, kv := range l.Attributes {
				b = e.appendKV(b, fLinkAttrs, kv)
			}
			b = appendUint(b, fLinkDroppedAttrs, uint64(l.DroppedAttributeCount))
			lflags := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
			if l.SpanContext.IsRemote() {
				lflags |= flagIsRemote
			}
			b = protowire.AppendTag(b, fLinkFlags, protowire.Fixed32Type)
			return protowire.AppendFixed32(b, lflags)
		})
	}
	b = appendUint(b, fSpanDroppedLinks, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset || st.Description != "" {
		b = appendMessage(b, fSpanStatus, func(b []byte) []byte {
			b = appendString(b, fStatusMessage, st.Description)
			// OTLP's codes: 1 OK, 2 ERROR (the API's are the other way round).
			code := uint64(0)
			switch st.Code {
			case codes.Ok:
				code = 1
			case codes.Error:
				code = 2
			}
			return appendUint(b, fStatusCode, code)
		})
	}
	b = protowire.AppendTag(b, fSpanFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// appendKV appends a KeyValue as field f.
func (e *otlpHTTP) appendKV(b []byte, f protowire.Number, kv attribute.KeyValue) []byte {
	e.scratch = appendAnyValue(e.scratch[:0], kv.Value)
	key := string(kv.Key)
	n := protowire.SizeTag(fKVKey) + protowire.SizeBytes(len(key)) + protowire.SizeTag(fKVValue) + protowire.SizeBytes(len(e.scratch))
	b = protowire.AppendTag(b, f, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	b = protowire.AppendTag(b, fKVKey, protowire.BytesType)
	b = protowire.AppendString(b, key)
	b = protowire.AppendTag(b, fKVValue, protowire.BytesType)
	return protowire.AppendBytes(b, e.scratch)
}

// appendAnyValue appends the fields of an AnyValue.
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.STRING:
		b = protowire.AppendTag(b, fAnyString, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BOOL:
		b = protowire.AppendTag(b, fAnyBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, fAnyInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, fAnyDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRINGSLICE, attribute.INT64SLICE, attribute.BOOLSLICE, attribute.FLOAT64SLICE:
		return appendMessage(b, fAnyArray, func(b []byte) []byte {
			for _, e := range sliceValues(v) {
				b = appendMessage(b, fArrayValues, func(b []byte) []byte { return appendAnyValue(b, e) })
			}
			return b
		})
	}
	b = protowire.AppendTag(b, fAnyString, protowire.BytesType)
	return protowire.AppendString(b, v.Emit())
}

// sliceValues are the elements of a slice attribute.
func sliceValues(v attribute.Value) []attribute.Value {
	var out []attribute.Value
	switch v.Type() {
	case attribute.STRINGSLICE:
		for _, s := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(s))
		}
	case attribute.INT64SLICE:
		for _, n := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(n))
		}
	case attribute.BOOLSLICE:
		for _, t := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(t))
		}
	case attribute.FLOAT64SLICE:
		for _, f := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(f))
		}
	}
	return out
}

// appendMessage appends field f, a message whose fields fill appends:
// written in place after room for its length, then moved up when the
// length takes more than that room.
func appendMessage(b []byte, f protowire.Number, fill func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	const room = 2 // a length below 16384
	at := len(b)
	b = append(b, make([]byte, room)...)
	b = fill(b)
	n := len(b) - at - room
	size := protowire.SizeVarint(uint64(n))
	if size != room {
		// Shift the message to fit its length exactly.
		b = append(b, make([]byte, max(size-room, 0))...)
		copy(b[at+size:], b[at+room:at+room+n])
		b = b[:at+size+n]
	}
	protowire.AppendVarint(b[at:at], uint64(n))
	return b
}

func appendString(b []byte, f protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, f, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendUint(b []byte, f protowire.Number, n uint64) []byte {
	if n == 0 {
		return b
	}
	b = protowire.AppendTag(b, f, protowire.VarintType)
	return protowire.AppendVarint(b, n)
}

func appendFixed64(b []byte, f protowire.Number, n uint64) []byte {
	b = protowire.AppendTag(b, f, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, n)
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}
