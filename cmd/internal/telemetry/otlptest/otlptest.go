// Package otlptest is an OTLP/HTTP trace receiver in process, for tests
// and benchmarks: it takes what an exporter sends to /v1/traces in
// protobuf and keeps the spans, or counts and discards them.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Span is one span as received, with its ids in hex and its attributes
// as text.
type Span struct {
	Name                          string
	Kind                          tracepb.Span_SpanKind
	TraceID, SpanID, ParentSpanID string
	Attrs                         map[string]string
	// Error says the span's status is an error.
	Error bool
	// Service is the service.name of the span's resource.
	Service string
}

// Receiver is an OTLP/HTTP receiver on a loopback port.
type Receiver struct {
	srv     *httptest.Server
	discard bool
	mu      sync.Mutex
	spans   []Span
	count   atomic.Int64
	exports atomic.Int64
}

// New starts a receiver that keeps every span; Close stops it.
func New() *Receiver { return start(false) }

// NewDiscarding starts a receiver that counts the spans, reading no more
// of an export than the fields that hold them, and keeps none, for
// benchmarks.
func NewDiscarding() *Receiver { return start(true) }

func start(discard bool) *Receiver {
	r := &Receiver{discard: discard}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// URL is the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) URL() string { return r.srv.URL }

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// Count is how many spans have arrived.
func (r *Receiver) Count() int64 { return r.count.Load() }

// Exports is how many export requests have arrived.
func (r *Receiver) Exports() int64 { return r.exports.Load() }

// Spans returns the spans kept so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.discard {
		// Only counted: decoding every span would take the CPU the
		// gateway measured beside it needs, which a collector elsewhere
		// would not.
		n, err := countSpans(data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.exports.Add(1)
		r.count.Add(int64(n))
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.exports.Add(1)
	var got []Span
	for _, rs := range export.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				r.count.Add(1)
				got = append(got, Span{Name: sp.GetName(), Kind: sp.GetKind(),
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()), Attrs: attrs(sp.GetAttributes()),
					Error: sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR, Service: service})
			}
		}
	}
	if len(got) > 0 {
		r.mu.Lock()
		r.spans = append(r.spans, got...)
		r.mu.Unlock()
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// attrs writes attributes as text: a string as it is, other values as
// protobuf's text of them, a list of strings joined by commas.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = text(kv.GetValue())
	}
	return out
}

func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, text(e))
		}
		return strings.Join(parts, ",")
	}
	return v.String()
}

// countSpans counts the spans of an ExportTraceServiceRequest from its
// wire format: its resource_spans (field 1), their scope_spans (field 2)
// and theirs spans (field 2), each a length-delimited message.
func countSpans(b []byte) (int, error) {
	n := 0
	err := eachField(b, 1, func(rs []byte) error {
		return eachField(rs, 2, func(ss []byte) error {
			return eachField(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls fn with the bytes of each length-delimited field num of
// the message b, skipping the other fields.
func eachField(b []byte, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		f, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if f == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := fn(v); err != nil {
				return err
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(f, typ, b)
		if m < 0 {
			return protowire.ParseError(m)
		}
		b = b[m:]
	}
	return nil
}
