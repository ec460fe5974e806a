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
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// otlpHTTP sends export requests over OTLP/HTTP, in protobuf or JSON as
// its encoding writes them. The batcher calls send from one goroutine at a
// time.
type otlpHTTP struct {
	url         string
	headers     map[string]string
	gzip        bool
	contentType string
	client      *http.Client

	zbuf bytes.Buffer
	zw   *gzip.Writer
}

// exportWriteBuffer holds a batch of the default size (512 spans of about
// 250 bytes each) with room to spare.
const exportWriteBuffer = 256 << 10

// defaultOTLPTimeout bounds one export when the settings give none.
const defaultOTLPTimeout = 10 * time.Second

func newOTLPHTTP(s Settings, contentType string) *otlpHTTP {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = defaultOTLPTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A batch is written from the connection's buffer, in one write when
	// it fits: through a smaller one, the transport would copy it through
	// a 32 KB buffer of its own, made anew for most exports, 32 KB a write.
	tr.WriteBufferSize = exportWriteBuffer
	if s.TLS != nil {
		tr.TLSClientConfig = s.TLS
	}
	return &otlpHTTP{url: s.Endpoint, headers: s.Headers, gzip: s.Gzip, contentType: contentType,
		client: &http.Client{Transport: tr, Timeout: timeout}}
}

// send posts one request of n spans. A receiver's refusal, or no answer,
// loses them: the gateway never waits for its traces.
func (e *otlpHTTP) send(ctx context.Context, body []byte, n int) error {
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
	req.Header.Set("Content-Type", e.contentType)
	req.Header.Set("User-Agent", "erpgate/"+version())
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: %d spans not sent: %w", n, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("otlp: %d spans refused: the receiver answered %d", n, resp.StatusCode)
	}
	return nil
}

// shutdown closes the exporter's idle connections.
func (e *otlpHTTP) shutdown() { e.client.CloseIdleConnections() }

// protoEncoding writes OTLP's protobuf (ExportTraceServiceRequest)
// itself, straight from the spans, instead of building the protobuf
// message's Go values (go.opentelemetry.io/otel/exporters/otlp/otlptrace
// allocates three values per attribute): on a gateway that traces every
// call, the export was the greater part of what tracing cost. Its
// resource and scope are written once.
type protoEncoding struct {
	resource []byte // the ResourceSpans.resource field
	scope    []byte // the ScopeSpans.scope field
}

func newProtoEncoding(res []attribute.KeyValue, scopeName, scopeVersion string) *protoEncoding {
	e := &protoEncoding{}
	b, at := openMessage(nil, fResourceSpansRes)
	for _, kv := range res {
		b = appendKV(b, fResourceAttrs, kv)
	}
	e.resource = closeMessage(b, at)
	b, at = openMessage(nil, fScopeSpansScope)
	b = appendString(b, fScopeName, scopeName)
	b = appendString(b, fScopeVersion, scopeVersion)
	e.scope = closeMessage(b, at)
	return e
}

// appendItem appends s as a ScopeSpans.spans field.
func (e *protoEncoding) appendItem(batch []byte, _ int, s *span) []byte {
	batch, at := openMessage(batch, fScopeSpansSpans)
	return closeMessage(e.appendSpan(batch, s), at)
}

// appendRequest appends the request of one ResourceSpans of one
// ScopeSpans that holds the batch's spans.
func (e *protoEncoding) appendRequest(b []byte, spans []byte) []byte {
	scopeSpans := len(e.scope) + len(spans)
	resourceSpans := len(e.resource) + protowire.SizeTag(fResourceSpansScope) + protowire.SizeBytes(scopeSpans)
	b = protowire.AppendTag(b, fRequestResourceSpans, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(resourceSpans))
	b = append(b, e.resource...)
	b = protowire.AppendTag(b, fResourceSpansScope, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(scopeSpans))
	b = append(b, e.scope...)
	return append(b, spans...)
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

// appendSpan appends the fields of a Span message.
func (e *protoEncoding) appendSpan(b []byte, s *span) []byte {
	b = appendSpanContext(b, s.sc)
	flags := uint32(s.sc.TraceFlags()) | flagHasIsRemote
	if pid := s.parent; pid.IsValid() {
		b = protowire.AppendTag(b, fSpanParentID, protowire.BytesType)
		b = protowire.AppendBytes(b, pid[:])
		if s.remoteParent {
			flags |= flagIsRemote
		}
	}
	b = appendString(b, fSpanName, s.name)
	if s.kind != trace.SpanKindUnspecified {
		b = protowire.AppendTag(b, fSpanKind, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s.kind))
	}
	b = appendFixed64(b, fSpanStart, uint64(s.start))
	b = appendFixed64(b, fSpanEnd, uint64(s.end))
	attrs := *s.attrs
	for i, kv := range attrs {
		if !setAgain(attrs[i+1:], kv.Key) {
			b = appendKV(b, fSpanAttrs, kv)
		}
	}
	b = appendUint(b, fSpanDroppedAttrs, uint64(s.droppedAttrs))
	m := s.more
	if m == nil {
		m = &noMore
	}
	for _, ev := range m.events {
		var at int
		b, at = openMessage(b, fSpanEvents)
		b = appendFixed64(b, fEventTime, unixNano(ev.time))
		b = appendString(b, fEventName, ev.name)
		for _, kv := range ev.attrs {
			b = appendKV(b, fEventAttrs, kv)
		}
		b = closeMessage(b, at)
	}
	b = appendUint(b, fSpanDroppedEvents, uint64(m.droppedEvents))
	for _, l := range m.links {
		var at int
		b, at = openMessage(b, fSpanLinks)
		b = appendSpanContext(b, l.SpanContext)
		for _, kv := range l.Attributes {
			b = appendKV(b, fLinkAttrs, kv)
		}
		lflags := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
		if l.SpanContext.IsRemote() {
			lflags |= flagIsRemote
		}
		b = protowire.AppendTag(b, fLinkFlags, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, lflags)
		b = closeMessage(b, at)
	}
	b = appendUint(b, fSpanDroppedLinks, uint64(m.droppedLinks))
	if s.status != codes.Unset {
		var at int
		b, at = openMessage(b, fSpanStatus)
		b = appendString(b, fStatusMessage, m.statusMessage)
		b = appendUint(b, fStatusCode, otlpStatus(s.status))
		b = closeMessage(b, at)
	}
	b = protowire.AppendTag(b, fSpanFlags, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// appendSpanContext appends the trace id, span id and trace state of sc,
// the first three fields of a Span and of a Link alike.
func appendSpanContext(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = protowire.AppendTag(b, fSpanTraceID, protowire.BytesType)
	b = protowire.AppendBytes(b, tid[:])
	b = protowire.AppendTag(b, fSpanID, protowire.BytesType)
	b = protowire.AppendBytes(b, sid[:])
	return appendString(b, fSpanTraceState, sc.TraceState().String())
}

// otlpStatus is OTLP's number of a status code: 1 OK, 2 ERROR (the API's
// are the other way round).
func otlpStatus(c codes.Code) uint64 {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

// appendKV appends a KeyValue as field f. A value of one field (all but
// arrays) has its size known ahead, and is written in one pass.
func appendKV(b []byte, f protowire.Number, kv attribute.KeyValue) []byte {
	key := string(kv.Key)
	var vsize int
	switch kv.Value.Type() {
	case attribute.STRING:
		vsize = 1 + protowire.SizeBytes(len(kv.Value.AsString()))
	case attribute.BOOL:
		vsize = 2
	case attribute.INT64:
		vsize = 1 + protowire.SizeVarint(uint64(kv.Value.AsInt64()))
	case attribute.FLOAT64:
		vsize = 9
	default:
		b, at := openMessage(b, f)
		b = appendString(b, fKVKey, key)
		var vat int
		b, vat = openMessage(b, fKVValue)
		b = appendAnyValue(b, kv.Value)
		b = closeMessage(b, vat)
		return closeMessage(b, at)
	}
	if n := 2 + len(key) + 2 + vsize; n < 0x80 && f < 0x10 {
		// Most attributes: each tag and each length in one byte.
		const bytesType = byte(protowire.BytesType)
		b = append(b, byte(f)<<3|bytesType, byte(n), fKVKey<<3|bytesType, byte(len(key)))
		b = append(b, key...)
		b = append(b, fKVValue<<3|bytesType, byte(vsize))
		return appendAnyValue(b, kv.Value)
	}
	b = protowire.AppendTag(b, f, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(1+protowire.SizeBytes(len(key))+1+protowire.SizeBytes(vsize)))
	b = protowire.AppendTag(b, fKVKey, protowire.BytesType)
	b = protowire.AppendString(b, key)
	b = protowire.AppendTag(b, fKVValue, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(vsize))
	return appendAnyValue(b, kv.Value)
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
		b, at := openMessage(b, fAnyArray)
		for _, e := range sliceValues(v) {
			var eat int
			b, eat = openMessage(b, fArrayValues)
			b = appendAnyValue(b, e)
			b = closeMessage(b, eat)
		}
		return closeMessage(b, at)
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

// openMessage appends the tag of field f, a message, and room for its
// length, which closeMessage writes once the message's fields follow; at
// is where the room is.
func openMessage(b []byte, f protowire.Number) (_ []byte, at int) {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	at = len(b)
	return append(b, 0, 0), at // room for a length below 16384
}

// closeMessage writes the length of the message opened at at, moving the
// message up when its length takes more than the room left for it.
func closeMessage(b []byte, at int) []byte {
	const room = 2
	n := len(b) - at - room
	size := protowire.SizeVarint(uint64(n))
	switch {
	case size > room:
		b = append(b, make([]byte, size-room)...)
		copy(b[at+size:], b[at+room:at+room+n])
	case size < room:
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
