package telemetry

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestOTLPEncoding: what the exporter writes is the OTLP protobuf the
// generated code reads, field by field: ids, parent (remote), kind, times,
// attributes of every type, events, links, status, flags, resource and
// scope; and a batch far larger than one length byte holds.
func TestOTLPEncoding(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewSchemaless(attribute.String("service.name", "erpgate-test"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	tr := tp.Tracer("github.com/erpgate/erpgate")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	psid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: psid, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	ctx, server := tr.Start(ctx, "get_invoice", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "caller")}}))
	server.SetAttributes(attribute.String("http.route", "/invoices/{invoice_id}"), attribute.Int("http.response.status_code", 404),
		attribute.Bool("erpgate.erp.write", true), attribute.Float64("ratio", 0.25),
		attribute.StringSlice("erpgate.sap.message_ids", []string{"M8/108", "M8/255"}), attribute.Int64Slice("ints", []int64{-1, 2}))
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
	ended := rec.Ended()

	e := &otlpHTTP{}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(e.encode(nil, ended), &req); err != nil {
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
	if ss.Scope.Name != "github.com/erpgate/erpgate" || len(ss.Spans) != len(ended) {
		t.Fatalf("scope %q with %d spans, want %d", ss.Scope.Name, len(ss.Spans), len(ended))
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
