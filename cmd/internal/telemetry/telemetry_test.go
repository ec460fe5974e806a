package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      map[string]string
		endpoint string // "" for off
		err      string
	}{
		{"nothing set: off", nil, "", ""},
		{"a service name alone: off", map[string]string{"OTEL_SERVICE_NAME": "ap"}, "", ""},
		{"general endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces", ""},
		{"general endpoint with a path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com/otlp/"}, "https://otel.example.com/otlp/v1/traces", ""},
		{"traces endpoint as it is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/traces"}, "http://b:4318/traces", ""},
		{"traces endpoint without a path", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318"}, "http://b:4318/", ""},
		{"exporter otlp alone: the default endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, "http://localhost:4318/v1/traces", ""},
		{"SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "", ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "", ""},
		{"exporter zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "", "otlp only"},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "", "OTLP over HTTP only"},
		{"bad endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "", "want an http or https URL"},
		{"bad sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "sometimes"}, "", "OTEL_TRACES_SAMPLER=sometimes"},
		{"bad ratio", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "", "ratio"},
		{"bad disabled", map[string]string{"OTEL_SDK_DISABLED": "maybe"}, "", "want true or false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := FromEnv(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Endpoint != c.endpoint || s.Enabled() != (c.endpoint != "") {
				t.Errorf("endpoint %q (enabled %v), want %q", s.Endpoint, s.Enabled(), c.endpoint)
			}
		})
	}
}

func TestFromEnvSettings(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    "http://c:4318",
		"OTEL_EXPORTER_OTLP_HEADERS":     "api-key=abc%20def,tenant=ap",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
		"OTEL_EXPORTER_OTLP_TIMEOUT":     "2500",
		"OTEL_EXPORTER_OTLP_PROTOCOL":    "http/json",
		"OTEL_TRACES_SAMPLER":            "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":        "0.25",
		"OTEL_RESOURCE_ATTRIBUTES":       "deployment.environment.name=prod,service.name=other",
		"OTEL_SERVICE_NAME":              "erpgate-eu",
	}
	s, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.Headers["api-key"] != "abc def" || s.Headers["tenant"] != "ap" || !s.Gzip || s.Timeout != 2500*time.Millisecond || !s.JSON {
		t.Errorf("settings %+v", s)
	}
	if s.SamplerName != "parentbased_traceidratio" || !strings.Contains(s.Sampler.Description(), "0.25") {
		t.Errorf("sampler %s: %s", s.SamplerName, s.Sampler.Description())
	}
	res := map[string]string{}
	for _, kv := range s.Resource {
		res[string(kv.Key)] = kv.Value.AsString()
	}
	if res["service.name"] != "erpgate-eu" || res["deployment.environment.name"] != "prod" || res["service.version"] == "" {
		t.Errorf("resource %v", res)
	}
}

func TestLogHandler(t *testing.T) {
	var buf strings.Builder
	logger := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "api")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	// More attributes than a record holds inline, as the access log has.
	logger.LogAttrs(ctx, slog.LevelInfo, "request", slog.Int("a", 1), slog.Int("b", 2), slog.Int("c", 3), slog.Int("d", 4),
		slog.Int("e", 5), slog.Int("f", 6), slog.Int("g", 7))
	logger.InfoContext(context.Background(), "no trace")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"g":7,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"`) ||
		strings.Contains(lines[0], "BUG") || strings.Contains(lines[1], "trace_id") || !strings.Contains(lines[1], `"component":"api"`) {
		t.Errorf("log:\n%s", buf.String())
	}
}
