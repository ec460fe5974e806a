package otlptest_test

import (
	"bytes"
	"net/http"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/erpgate/erpgate/cmd/internal/telemetry/otlptest"
)

// TestDiscardingCountsAsTheDecoder: the discarding receiver, which only
// walks the fields that hold spans, counts what the keeping one decodes,
// across resources and scopes and past the other fields of each; a body
// that is not the protobuf is refused by both.
func TestDiscardingCountsAsTheDecoder(t *testing.T) {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	span := func(name string) *tracepb.Span {
		return &tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: name,
			Attributes: []*commonpb.KeyValue{{Key: "k", Value: str("v")}},
			Events:     []*tracepb.Span_Event{{Name: "e"}}, Links: []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{3}, 16)}}}
	}
	var req coltracepb.ExportTraceServiceRequest
	want := 0
	for r := range 3 {
		rs := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: str("s")}}},
			SchemaUrl: "https://opentelemetry.io/schemas/1.26.0"}
		for s := range r + 1 {
			ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: "scope", Version: "1"}}
			for range 5*s + 1 {
				ss.Spans = append(ss.Spans, span("x"))
				want++
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		req.ResourceSpans = append(req.ResourceSpans, rs)
	}
	body, err := proto.Marshal(&req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*otlptest.Receiver{otlptest.New(), otlptest.NewDiscarding()} {
		defer r.Close()
		for _, b := range [][]byte{body, []byte("\x0a\xff")} {
			resp, err := http.Post(r.URL()+"/v1/traces", "application/x-protobuf", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if ok := len(b) == len(body); ok != (resp.StatusCode == http.StatusOK) {
				t.Errorf("a body of %d bytes: status %d", len(b), resp.StatusCode)
			}
		}
		if r.Count() != int64(want) || r.Exports() != 1 {
			t.Errorf("counted %d spans in %d exports, want %d in 1", r.Count(), r.Exports(), want)
		}
	}
}
