package api

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/trace"

	"github.com/erpgate/erpgate/erp"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	runIDKey
	recordKey
)

// The request id and the run id are held in a context as a *string, so
// that requestContext can answer them without boxing a string on every
// request.

// WithRequestID returns a context carrying the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey, &id)
}

// RequestIDFromContext returns the request id, or "".
func RequestIDFromContext(ctx context.Context) string {
	return idFrom(ctx, requestIDKey)
}

// WithRunID returns a context carrying the agent run id.
func WithRunID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, runIDKey, &id)
}

// RunIDFromContext returns the agent run id, or "".
func RunIDFromContext(ctx context.Context) string {
	return idFrom(ctx, runIDKey)
}

func idFrom(ctx context.Context, key ctxKey) string {
	if id, ok := ctx.Value(key).(*string); ok {
		return *id
	}
	return ""
}

// requestRecord is what the access log writes of a request beyond its
// method, path and status: the steps of an operation fill it in, and the
// handlers of writes read the client, key, digest and run from it.
type requestRecord struct {
	client    string
	operation string
	code      string
	cause     error
	// key, digest and run identify a write for the records it creates.
	key, digest, run string
	// takenOver says the call took its idempotency key over from a call
	// that never finished: its gateway may have died after the write.
	takenOver bool
	// span is the operation's span when tracing, for the access log.
	span trace.Span
	// fields are the body's top-level fields, for the access log's
	// arguments (logargs.go).
	fields map[string]json.RawMessage
	// called collects the ERP's services and resources the call reached
	// (erp.CalledKey), for the access log.
	called erp.Called
}

func withRecord(ctx context.Context, rec *requestRecord) context.Context {
	return context.WithValue(ctx, recordKey, rec)
}

// recordFrom returns the request's record, or a new one that nobody logs
// when the request has none.
func recordFrom(ctx context.Context) *requestRecord {
	rec, _ := ctx.Value(recordKey).(*requestRecord)
	if rec == nil {
		return &requestRecord{}
	}
	return rec
}
