package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TestOTLPEncoding: what the exporter writes is the OTLP protobuf the
// generated code reads, field by field: ids, parent (remote), kind, times,
// attributes of every type, events, links, status, flags, resource and
// scope; attributes whose lengths take one byte and more; and a batch far
// larger than one length byte holds.
func TestOTLPEncoding(t *testing.T) {
	res := []attribute.KeyValue{attribute.String("service.name", "erpgate-test")}
	capture := &captured{}
	tr := newTestTracer(newProtoEncoding(res, InstrumentationName, "v1.2.3"), capture, 512)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	psid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: psid, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	ended := exampleSpans(tr, ctx)
	if err := tr.batcher.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(capture.bodies) != 1 {
		t.Fatalf("%d requests, want 1", len(capture.bodies))
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(capture.bodies[0], &req); err != nil {
		t.Fatalf("the encoding does not decode: %v", err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("%d resource spans", len(req.ResourceSpans))
	}
	rs := req.ResourceSpans[0]
	if kv := rs.Resource.Attributes; len(kv) != 1 || kv[0].Key != "service.name" || kv[0].Value.GetStringValue() != "erpgate-test" {
		t.Errorf("resource %v", rs.Resource)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "github.com/erpgate/erpgate" || ss.Scope.Version != "v1.2.3" || len(ss.Spans) != ended {
		t.Fatalf("scope %q %q with %d spans, want %d", ss.Scope.Name, ss.Scope.Version, len(ss.Spans), ended)
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range ss.Spans {
		byName[s.Name] = s
	}
	srv, cl := byName["get_invoice"], byName["GET A_SupplierInvoice"]
	if srv == nil || cl == nil {
		t.Fatal("the server or the client span is missing")
	}
	if hex.EncodeToString(srv.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(srv.ParentSpanId) != "00f067aa0ba902b7" ||
		srv.Kind != tracepb.Span_SPAN_KIND_SERVER || srv.Flags != 0x301 {
		t.Errorf("server span: trace %x parent %x kind %v flags %#x", srv.TraceId, srv.ParentSpanId, srv.Kind, srv.Flags)
	}
	if srv.StartTimeUnixNano == 0 || srv.EndTimeUnixNano < srv.StartTimeUnixNano {
		t.Errorf("server span: times %d to %d", srv.StartTimeUnixNano, srv.EndTimeUnixNano)
	}
	if srv.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || srv.Status.GetMessage() != "INVOICE_NOT_FOUND" {
		t.Errorf("server span: status %v", srv.Status)
	}
	attrs := map[string]string{}
	for _, kv := range srv.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for k, want := range map[string]string{
		"http.route": `string_value:"/invoices/{invoice_id}"`, "http.response.status_code": "int_value:404",
		"erpgate.erp.write": "bool_value:true", "ratio": "double_value:0.25",
		"erpgate.sap.message_ids": `array_value:{values:{string_value:"M8/108"} values:{string_value:"M8/255"}}`,
		"ints":                    `array_value:{values:{int_value:-1} values:{int_value:2}}`,
		"near":                    `string_value:"` + strings.Repeat("n", 117) + `"`,
		"over":                    `string_value:"` + strings.Repeat("o", 118) + `"`,
		strings.Repeat("k", 130):  "int_value:7",
	} {
		if got := strings.Join(strings.Fields(attrs[k]), " "); got != strings.Join(strings.Fields(want), " ") {
			t.Errorf("attribute %s: %s, want %s", k, got, want)
		}
	}
	if len(srv.Events) != 1 || srv.Events[0].Name != "retry" || srv.Events[0].Attributes[0].Value.GetIntValue() != 2 {
		t.Errorf("events %v", srv.Events)
	}
	if len(srv.Links) != 1 || hex.EncodeToString(srv.Links[0].SpanId) != "00f067aa0ba902b7" || srv.Links[0].Flags != 0x301 ||
		srv.Links[0].Attributes[0].Value.GetStringValue() != "caller" {
		t.Errorf("links %v", srv.Links)
	}
	if hex.EncodeToString(cl.ParentSpanId) != hex.EncodeToString(srv.SpanId) || cl.Kind != tracepb.Span_SPAN_KIND_CLIENT ||
		cl.Flags != 0x101 || cl.Status != nil {
		t.Errorf("client span: parent %x kind %v flags %#x status %v", cl.ParentSpanId, cl.Kind, cl.Flags, cl.Status)
	}
}

// captured is an exporter that keeps what it is asked to send.
type captured struct {
	mu     sync.Mutex
	bodies [][]byte
	spans  int
}

func (c *captured) send(_ context.Context, body []byte, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies = append(c.bodies, bytes.Clone(body))
	c.spans += n
	return nil
}

func (c *captured) shutdown() {}

// newTestTracer is a tracer that samples what its parent does (and every
// root), with batches of batchSize spans sent to exp only when flushed or
// full.
func newTestTracer(enc encoding, exp exporter, batchSize int) *tracer {
	b := newBatcher(enc, exp, time.Hour, batchSize, 4*batchSize)
	return &tracer{batcher: b}
}

// exampleSpans ends a server span in ctx with attributes of every type,
// an event, a link and an error status, its client child, and 400 more,
// and returns how many.
func exampleSpans(tr trace.Tracer, ctx context.Context) int {
	remote := trace.SpanContextFromContext(ctx)
	ctx, server := tr.Start(ctx, "get_invoice", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "caller")}}))
	server.SetAttributes(attribute.String("http.route", "/invoices/{invoice_id}"), attribute.Int("http.response.status_code", 404),
		attribute.Bool("erpgate.erp.write", true), attribute.Float64("ratio", 0.25),
		attribute.StringSlice("erpgate.sap.message_ids", []string{"M8/108", "M8/255"}), attribute.Int64Slice("ints", []int64{-1, 2}),
		// An attribute's length in one byte, the most that fits, and
		// the least that does not; a key longer than one length byte.
		attribute.String("near", strings.Repeat("n", 117)), attribute.String("over", strings.Repeat("o", 118)),
		attribute.Int(strings.Repeat("k", 130), 7))
	server.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
	_, client := tr.Start(ctx, "GET A_SupplierInvoice", trace.WithSpanKind(trace.SpanKindClient))
	client.End()
	server.SetStatus(codes.Error, "INVOICE_NOT_FOUND")
	server.End()
	for i := 0; i < 400; i++ {
		_, s := tr.Start(context.Background(), "filler "+strings.Repeat("x", 40))
		s.SetAttributes(attribute.String("k", strings.Repeat("v", 30)))
		s.End()
	}
	return 402
}

// TestOTLPJSON: the JSON encoding is the protobuf one in OTLP's JSON
// mapping: read back (ids from hex) it is the same request, field by
// field.
func TestOTLPJSON(t *testing.T) {
	res := []attribute.KeyValue{attribute.String("service.name", "erpgate-test"), attribute.String("team", "ap \"payables\"")}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	psid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("erp=gate")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: psid, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	decode := func(enc encoding, unmarshal func([]byte, proto.Message) error) *coltracepb.ExportTraceServiceRequest {
		t.Helper()
		capture := &captured{}
		tr := newTestTracer(enc, capture, 512)
		exampleSpans(tr, ctx)
		if err := tr.batcher.flush(context.Background()); err != nil || len(capture.bodies) != 1 {
			t.Fatalf("%d requests, %v", len(capture.bodies), err)
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := unmarshal(capture.bodies[0], &req); err != nil {
			t.Fatalf("%s", capture.bodies[0][:min(len(capture.bodies[0]), 2000)])
		}
		return &req
	}
	fromProto := decode(newProtoEncoding(res, InstrumentationName, "v1"), func(b []byte, m proto.Message) error { return proto.Unmarshal(b, m) })
	fromJSON := decode(newJSONEncoding(res, InstrumentationName, "v1"), func(b []byte, m proto.Message) error {
		// OTLP's JSON writes ids in hex where protobuf's JSON mapping
		// writes base64: read them as OTLP says, then as protobuf does.
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return err
		}
		if err := hexToBase64(doc); err != nil {
			return err
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return err
		}
		return protojson.Unmarshal(b, m)
	})
	// The spans' ids are new in each run: compare all but them.
	for _, req := range []*coltracepb.ExportTraceServiceRequest{fromProto, fromJSON} {
		for _, s := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			if s.ParentSpanId != nil && !bytes.Equal(s.ParentSpanId, psid[:]) {
				s.ParentSpanId = []byte("child")
			}
			if !bytes.Equal(s.TraceId, tid[:]) {
				s.TraceId = []byte("root")
			}
			s.SpanId, s.StartTimeUnixNano, s.EndTimeUnixNano = nil, 0, 0
			for _, e := range s.Events {
				e.TimeUnixNano = 0
			}
		}
	}
	if !proto.Equal(fromProto, fromJSON) {
		t.Errorf("the JSON encoding differs from the protobuf one:\n%v\n%v", fromJSON.ResourceSpans[0].ScopeSpans[0].Spans[:2], fromProto.ResourceSpans[0].ScopeSpans[0].Spans[:2])
	}
	if got := len(fromJSON.ResourceSpans[0].ScopeSpans[0].Spans); got != 402 {
		t.Errorf("%d spans", got)
	}
}

// hexToBase64 rewrites the ids of an OTLP JSON document in base64.
func hexToBase64(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				b, err := hex.DecodeString(s)
				if err != nil {
					return err
				}
				v[k] = base64.StdEncoding.EncodeToString(b)
				continue
			}
			if err := hexToBase64(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := hexToBase64(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestSpanAsTheAPIAsks: the last value of an attribute wins; nothing is
// recorded once a span ends, and it ends once; Ok is a final status and
// Unset changes nothing; a child of an unsampled parent records nothing and
// is not sent; invalid attributes and those over the limit are dropped
// and counted.
func TestSpanAsTheAPIAsks(t *testing.T) {
	capture := &captured{}
	tr := newTestTracer(newProtoEncoding(nil, InstrumentationName, ""), capture, 512)
	_, s := tr.Start(context.Background(), "first")
	if !s.IsRecording() || !s.SpanContext().IsSampled() || s.TracerProvider().Tracer("x") != trace.Tracer(tr) {
		t.Fatal("a root span is not recorded and sampled")
	}
	s.SetAttributes(attribute.String("a", "1"), attribute.String("b", "1"), attribute.KeyValue{}, attribute.String("a", "2"))
	s.SetStatus(codes.Ok, "")
	s.SetStatus(codes.Error, "too late")
	s.SetStatus(codes.Unset, "")
	s.RecordError(errors.New("boom"))
	s.End()
	s.SetAttributes(attribute.String("after", "end"))
	s.SetName("renamed")
	s.End()
	if s.IsRecording() {
		t.Error("an ended span still records")
	}
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true})
	_, child := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), unsampled), "child")
	if child.IsRecording() || child.SpanContext().IsSampled() || child.SpanContext().TraceID() != unsampled.TraceID() {
		t.Errorf("a child of an unsampled parent: recording %v, context %v", child.IsRecording(), child.SpanContext())
	}
	child.SetAttributes(attribute.String("k", "v"))
	child.End()
	// A sampler set otherwise is asked.
	never := &tracer{sampler: sdktrace.NeverSample(), batcher: tr.batcher}
	if _, s := never.Start(context.Background(), "never"); s.IsRecording() || s.SpanContext().IsSampled() || !s.SpanContext().IsValid() {
		t.Errorf("a span never sampled: recording %v, context %v", s.IsRecording(), s.SpanContext())
	}
	_, big := tr.Start(context.Background(), "big")
	for i := range maxSpanAttrs + 3 {
		big.SetAttributes(attribute.Int("n"+strconv.Itoa(i), i))
	}
	big.End()
	if err := tr.batcher.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var req coltracepb.ExportTraceServiceRequest
	if len(capture.bodies) != 1 || proto.Unmarshal(capture.bodies[0], &req) != nil {
		t.Fatalf("%d requests", len(capture.bodies))
	}
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != 2 {
		t.Fatalf("%d spans sent, want 2 (the unsampled child is not)", len(spans))
	}
	first := spans[0]
	attrs := map[string]string{}
	for _, kv := range first.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if first.Name != "first" || len(first.Attributes) != 2 || attrs["a"] != "2" || attrs["b"] != "1" {
		t.Errorf("span %q attributes %v", first.Name, first.Attributes)
	}
	if first.Status.GetCode() != tracepb.Status_STATUS_CODE_OK || first.Status.GetMessage() != "" {
		t.Errorf("status %v", first.Status)
	}
	if len(first.Events) != 1 || first.Events[0].Name != "exception" || first.Events[0].Attributes[1].Value.GetStringValue() != "boom" {
		t.Errorf("events %v", first.Events)
	}
	if len(spans[1].Attributes) != maxSpanAttrs || spans[1].DroppedAttributesCount != 3 {
		t.Errorf("%d attributes, %d dropped", len(spans[1].Attributes), spans[1].DroppedAttributesCount)
	}
}

// TestBatches: spans go in batches of the batch size as they fill, the
// rest when flushed; beyond the queue's size they are dropped and
// counted; after shutdown none is taken.
func TestBatches(t *testing.T) {
	gate := make(chan struct{})
	capture := &captured{}
	exp := blockingExporter{gate: gate, captured: capture}
	b := newBatcher(newProtoEncoding(nil, InstrumentationName, ""), exp, time.Hour, 10, 30)
	tr := &tracer{batcher: b}
	for range 45 {
		_, s := tr.Start(context.Background(), "s")
		s.End()
	}
	// The loop waits in its first send: 30 are queued, 10 of them in the
	// batch being sent, so 5 of the 45 were dropped.
	if got := b.Dropped(); got < 5 {
		t.Errorf("dropped %d, want at least 5", got)
	}
	close(gate)
	if err := b.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, late := tr.Start(context.Background(), "late")
	late.End()
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if capture.spans+int(b.Dropped()) != 46 {
		t.Errorf("%d sent and %d dropped of 46", capture.spans, b.Dropped())
	}
	for _, body := range capture.bodies {
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil || len(req.ResourceSpans[0].ScopeSpans[0].Spans) > 10 {
			t.Errorf("a request of more than 10 spans, or unreadable: %v", err)
		}
	}
}

// blockingExporter sends nothing until gate is closed.
type blockingExporter struct {
	gate chan struct{}
	*captured
}

func (e blockingExporter) send(ctx context.Context, body []byte, n int) error {
	<-e.gate
	return e.captured.send(ctx, body, n)
}

// TestStartSendsJSON: with OTEL_EXPORTER_OTLP_PROTOCOL=http/json the
// gateway posts OTLP JSON, with its content type and headers, gzipped when
// asked, and the spans ended before Shutdown arrive.
func TestStartSendsJSON(t *testing.T) {
	type got struct {
		contentType, encoding, key string
		body                       []byte
	}
	gotc := make(chan got, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			rd = zr
		}
		body, _ := io.ReadAll(rd)
		gotc <- got{r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"), r.Header.Get("Api-Key"), body}
	}))
	defer srv.Close()
	s, err := FromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
			"OTEL_EXPORTER_OTLP_HEADERS": "api-key=secret", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	tracing, err := Start(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracing.Tracer().Start(context.Background(), "get_invoice")
	span.End()
	if err := tracing.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := <-gotc
	var req struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID string `json:"traceId"`
					Name    string `json:"name"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(g.body, &req); err != nil || len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 1 {
		t.Fatalf("%v: %s", err, g.body)
	}
	sp := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if g.contentType != "application/json" || g.encoding != "gzip" || g.key != "secret" || sp.Name != "get_invoice" || len(sp.TraceID) != 32 {
		t.Errorf("content type %q, encoding %q, key %q, span %+v", g.contentType, g.encoding, g.key, sp)
	}
}
