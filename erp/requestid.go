package erp

import "context"

// RequestIDKey is the context key of the gateway's request id: the id the
// gateway answers a request with, which an adapter sends on to the ERP so
// that the ERP's logs can be joined with the gateway's. Its value is a
// *string. WithRequestID puts one into a context; a context type that
// answers Value itself answers this key with a *string.
type RequestIDKey struct{}

// WithRequestID returns a context carrying the request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, RequestIDKey{}, &id)
}

// RequestIDFrom returns the request id ctx carries, or "".
func RequestIDFrom(ctx context.Context) string {
	if id, ok := ctx.Value(RequestIDKey{}).(*string); ok && id != nil {
		return *id
	}
	return ""
}
