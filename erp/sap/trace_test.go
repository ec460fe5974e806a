package sap

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/erpgate/erpgate/retry"
)

// TestAttemptSpanIsTheRunners: the client names and describes the span the
// Runner made for an attempt, and leaves the span of whatever encloses the
// call alone, also when the Runner makes none.
func TestAttemptSpanIsTheRunners(t *testing.T) {
	for _, runnerTraces := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		f := newFake(t, respond(http.StatusOK, okJSON))
		policy := oneAttempt(2 * time.Second)
		if runnerTraces {
			policy.Tracer = tp.Tracer("retry")
		}
		c := f.client(Options{Runner: retry.New(policy, nil)})
		ctx, outer := tp.Tracer("api").Start(context.Background(), "get_supplier")
		if err := pingFor(ctx, c); err != nil {
			t.Fatal(err)
		}
		outer.End()
		_ = tp.Shutdown(context.Background())

		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
			if s.Name() == "get_supplier" {
				for _, kv := range s.Attributes() {
					if kv.Key == attrSAPService {
						t.Errorf("runner tracing %v: the enclosing span got the attempt's %s", runnerTraces, kv.Key)
					}
				}
			}
		}
		want := []string{"get_supplier"}
		if runnerTraces {
			want = []string{"GET A_Supplier", "get_supplier"}
		}
		if len(names) != len(want) || names[0] != want[0] || names[len(names)-1] != want[len(want)-1] {
			t.Errorf("runner tracing %v: spans %q, want %q", runnerTraces, names, want)
		}
	}
}
