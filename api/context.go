package api

import "context"

type ctxKey int

const (
	requestIDKey ctxKey = iota
	runIDKey
	traceKey
)

// WithRequestID returns a context carrying the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, id)
}

// RequestIDFromContext returns the request id, or "".
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// WithRunID returns a context carrying the agent run id.
func WithRunID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, runIDKey, id)
}

// RunIDFromContext returns the agent run id, or "".
func RunIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey).(string)
	return id
}

// trace is filled in by the handler chain so the access log can name the
// operation and the outcome of the request.
type trace struct {
	client    string
	operation string
	code      string
	cause     error
	// key, digest and run identify a write for the records it creates.
	key, digest, run string
	// takenOver says the call took its idempotency key over from a call
	// that never finished: its gateway may have died after the write.
	takenOver bool
}

func withTrace(ctx context.Context, t *trace) context.Context {
	return context.WithValue(ctx, traceKey, t)
}

func traceFrom(ctx context.Context) *trace {
	t, _ := ctx.Value(traceKey).(*trace)
	if t == nil {
		return &trace{}
	}
	return t
}
