// Package telemetry sets up erpgate's OpenTelemetry traces from the
// standard OTEL_* environment variables: off (no tracer at all, so that
// nothing is spent on spans) unless an OTLP endpoint is configured, else
// the gateway's own tracer (span.go), which encodes each span as it ends
// and sends them in batches to an OTLP/HTTP receiver. It also
// holds what the gateway's wiring adds around the traced packages: the log
// handler that writes trace_id and span_id on every line logged inside a
// span, and the records store that makes a span of every write.
//
// The spans themselves are made where the work is: the operation's server
// span in api, the tool call's in api/mcp, an ERP attempt's in retry (with
// SAP's details from erp/sap), a records write's here (Records).
package telemetry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName names the tracer of erpgate's spans.
const InstrumentationName = "github.com/erpgate/erpgate"

// DefaultServiceName is service.name when OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) does not set one.
const DefaultServiceName = "erpgate"

// Settings are the trace settings the OTEL_* variables give. The zero
// value is tracing off.
type Settings struct {
	// Endpoint is the URL spans are sent to, with its path
	// (http://collector:4318/v1/traces); "" is tracing off.
	Endpoint string
	// JSON sends OTLP/HTTP JSON instead of protobuf.
	JSON bool
	// Headers are sent with every export (OTEL_EXPORTER_OTLP_HEADERS).
	Headers map[string]string
	// Gzip compresses the exports.
	Gzip bool
	// Timeout bounds one export; 0 is the exporter's default (10s).
	Timeout time.Duration
	// TLS holds the receiver's CA and a client certificate
	// (OTEL_EXPORTER_OTLP_CERTIFICATE, …_CLIENT_CERTIFICATE,
	// …_CLIENT_KEY); nil for the system's roots and none.
	TLS *tls.Config
	// Sampler decides which traces are recorded; nil is the default,
	// parentbased_always_on.
	Sampler sdktrace.Sampler
	// SamplerName is the OTEL_TRACES_SAMPLER it was made from, for the
	// start-up log.
	SamplerName string
	// Resource describes the process: service.name and the attributes of
	// OTEL_RESOURCE_ATTRIBUTES.
	Resource []attribute.KeyValue
	// BatchDelay, BatchSize and QueueSize batch the ended spans
	// (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
	// OTEL_BSP_MAX_QUEUE_SIZE); zero takes DefaultBatchDelay and friends.
	BatchDelay           time.Duration
	BatchSize, QueueSize int
}

// Enabled reports whether the settings turn tracing on.
func (s Settings) Enabled() bool { return s.Endpoint != "" }

// FromEnv reads the settings from the OTEL_* variables through getenv.
// Tracing is on when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set, or OTEL_TRACES_EXPORTER is otlp
// (the default endpoint, http://localhost:4318); OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turns it off whatever else is set. Values it
// cannot honour (another exporter, the grpc protocol, an unknown sampler)
// are errors, so that a gateway never runs believing it traces when it
// does not.
func FromEnv(getenv func(string) string) (Settings, error) {
	var s Settings
	if b, err := envBool(getenv, "OTEL_SDK_DISABLED"); err != nil || b {
		return Settings{}, err
	}
	exporter := strings.TrimSpace(strings.ToLower(getenv("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "none":
		return Settings{}, nil
	case "", "otlp":
	default:
		return Settings{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: erpgate exports traces with otlp only (or none)", exporter)
	}
	endpoint, perSignal := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), true
	if endpoint == "" {
		endpoint, perSignal = getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), false
	}
	if endpoint == "" && exporter != "otlp" {
		return Settings{}, nil
	}
	if endpoint == "" {
		endpoint = "http://localhost:4318"
	}
	var err error
	if s.Endpoint, err = tracesURL(endpoint, perSignal); err != nil {
		return Settings{}, err
	}
	protocol := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	switch protocol {
	case "", "http/protobuf":
	case "http/json":
		s.JSON = true
	case "grpc":
		return Settings{}, errors.New("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: erpgate exports OTLP over HTTP only; set http/protobuf and the receiver's HTTP port (4318)")
	default:
		return Settings{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: want http/protobuf or http/json", protocol)
	}
	if h := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"); h != "" {
		if s.Headers, err = keyValues(h); err != nil {
			return Settings{}, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %w", err)
		}
	}
	switch c := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"); c {
	case "", "none":
	case "gzip":
		s.Gzip = true
	default:
		return Settings{}, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%s: want gzip or none", c)
	}
	if t := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return Settings{}, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%s: want a positive number of milliseconds", t)
		}
		s.Timeout = time.Duration(ms) * time.Millisecond
	}
	if s.TLS, err = tlsFromEnv(getenv); err != nil {
		return Settings{}, err
	}
	if s.Sampler, s.SamplerName, err = sampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return Settings{}, err
	}
	if s.Resource, err = resourceAttrs(getenv); err != nil {
		return Settings{}, err
	}
	var delay int
	for _, v := range []struct {
		key string
		to  *int
	}{{"OTEL_BSP_SCHEDULE_DELAY", &delay}, {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &s.BatchSize}, {"OTEL_BSP_MAX_QUEUE_SIZE", &s.QueueSize}} {
		if t := strings.TrimSpace(getenv(v.key)); t != "" {
			n, err := strconv.Atoi(t)
			if err != nil || n <= 0 {
				return Settings{}, fmt.Errorf("%s=%s: want a positive integer", v.key, t)
			}
			*v.to = n
		}
	}
	s.BatchDelay = time.Duration(delay) * time.Millisecond
	return s, nil
}

// tlsFromEnv reads the receiver's CA and the client certificate from the
// files the OTEL_EXPORTER_OTLP_*CERTIFICATE and *_KEY variables name.
func tlsFromEnv(getenv func(string) string) (*tls.Config, error) {
	ca := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE")
	cert := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")
	key := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: no PEM certificate in %s", ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// tracesURL is where the spans go: a per-signal endpoint as it is (the
// root path when it has none), a general one with /v1/traces appended.
func tracesURL(endpoint string, perSignal bool) (string, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("OTLP endpoint %q: want an http or https URL", endpoint)
	}
	switch {
	case perSignal && u.Path == "":
		u.Path = "/"
	case !perSignal:
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

func firstSet(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	return ""
}

func envBool(getenv func(string) string, key string) (bool, error) {
	v := strings.TrimSpace(getenv(key))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%s: want true or false", key, v)
	}
	return b, nil
}

// keyValues reads the W3C Baggage-like list of OTEL_EXPORTER_OTLP_HEADERS
// and OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by commas, the
// values percent-encoded.
func keyValues(list string) (map[string]string, error) {
	out := map[string]string{}
	for pair := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", pair)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %s is not percent-encoded", k)
		}
		out[k] = dv
	}
	return out, nil
}

// sampler is the sampler OTEL_TRACES_SAMPLER names (parentbased_always_on
// by default), with OTEL_TRACES_SAMPLER_ARG the ratio of the ratio-based
// ones (default 1).
func sampler(name, arg string) (sdktrace.Sampler, string, error) {
	name = strings.TrimSpace(strings.ToLower(name))
	ratio := 1.0
	if strings.HasSuffix(name, "traceidratio") && strings.TrimSpace(arg) != "" {
		r, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
		if err != nil || r < 0 || r > 1 {
			return nil, "", fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%s: want a ratio from 0 to 1", arg)
		}
		ratio = r
	}
	switch name {
	case "", "parentbased_always_on":
		return nil, "parentbased_always_on", nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), name, nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), name, nil
	case "always_on":
		return sdktrace.AlwaysSample(), name, nil
	case "always_off":
		return sdktrace.NeverSample(), name, nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), name, nil
	}
	return nil, "", fmt.Errorf("OTEL_TRACES_SAMPLER=%s: want always_on, always_off, traceidratio or their parentbased_ forms", name)
}

// resourceAttrs are the process's resource: OTEL_RESOURCE_ATTRIBUTES,
// service.name from OTEL_SERVICE_NAME (which wins) or erpgate, and
// service.version from the build.
func resourceAttrs(getenv func(string) string) ([]attribute.KeyValue, error) {
	kv := map[string]string{}
	if list := getenv("OTEL_RESOURCE_ATTRIBUTES"); list != "" {
		var err error
		if kv, err = keyValues(list); err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
		}
	}
	if name := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); name != "" {
		kv["service.name"] = name
	}
	if kv["service.name"] == "" {
		kv["service.name"] = DefaultServiceName
	}
	if _, ok := kv["service.version"]; !ok {
		kv["service.version"] = version()
	}
	attrs := make([]attribute.KeyValue, 0, len(kv))
	for k, v := range kv {
		attrs = append(attrs, attribute.String(k, v))
	}
	return attrs, nil
}

// version is the module's version in the binary's build information, or
// "devel".
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Tracing is the running trace pipeline: the tracer to make spans with,
// whose batcher exports them.
type Tracing struct {
	tracer *tracer
}

// Dropped is how many spans were dropped because the queue of spans to
// export was full (the receiver too slow or away).
func (t *Tracing) Dropped() int64 {
	if t == nil {
		return 0
	}
	return t.tracer.batcher.Dropped()
}

// Start starts exporting spans as s says; failed exports are logged to
// logger (nil: not at all), at most once a minute. It connects to nothing
// yet: spans are batched and sent in the background, and a receiver that
// is down costs dropped spans, never a failed call.
func Start(s Settings, logger *slog.Logger) (*Tracing, error) {
	if !s.Enabled() {
		return nil, errors.New("telemetry: tracing is off")
	}
	res := slices.Clone(s.Resource)
	if len(res) == 0 {
		res = []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	}
	slices.SortFunc(res, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
	var enc encoding = newProtoEncoding(res, InstrumentationName, version())
	contentType := "application/x-protobuf"
	if s.JSON {
		enc, contentType = newJSONEncoding(res, InstrumentationName, version()), "application/json"
	}
	b := newBatcher(enc, newOTLPHTTP(s, contentType), s.BatchDelay, s.BatchSize, s.QueueSize)
	b.log = logger
	return &Tracing{tracer: &tracer{sampler: s.Sampler, batcher: b}}, nil
}

// Tracer is the tracer of erpgate's spans; nil for a nil Tracing, which
// the traced packages take as tracing off.
func (t *Tracing) Tracer() trace.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// Shutdown sends the spans not yet sent and stops the exporter, within
// ctx. A nil Tracing has nothing to do.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.tracer.batcher.shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: flush spans: %w", err)
	}
	return nil
}
