// Package logtest holds what the tests of api and api/mcp read the
// gateway's JSON log with.
package logtest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// Lines is a log's JSON lines, written by any goroutine.
type Lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Take returns the lines written since the last Take, decoded, and the
// text they were written as; a line that is not JSON fails t.
func (l *Lines) Take(t testing.TB) ([]map[string]any, string) {
	t.Helper()
	l.mu.Lock()
	text := l.buf.String()
	l.buf.Reset()
	l.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, line)
		}
		out = append(out, m)
	}
	return out, text
}

// Logger is a JSON logger into l that adds trace_id to a record logged in
// a span's context, as the gateway's production log handler does
// (cmd/internal/telemetry).
func (l *Lines) Logger() *slog.Logger {
	return slog.New(traceIDs{slog.NewJSONHandler(l, nil)})
}

type traceIDs struct{ slog.Handler }

func (h traceIDs) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()))
	}
	return h.Handler.Handle(ctx, r)
}
