package erp

import "context"

// PrincipalKey is the context key of the identity a call to the ERP is
// made for: the name of the calling agent or person as the gateway knows
// it (an API key's name, an access token's client or subject). An adapter
// that signs in per identity asks the ERP for a session of that name. Its
// value is a *string; WithPrincipal puts one into a context.
type PrincipalKey struct{}

// WithPrincipal returns a context whose calls to the ERP are made for name.
func WithPrincipal(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, PrincipalKey{}, &name)
}

// PrincipalFrom returns the identity ctx carries, or "" for a call of the
// gateway's own (a start-up check, a scheduled re-check).
func PrincipalFrom(ctx context.Context) string {
	if name, ok := ctx.Value(PrincipalKey{}).(*string); ok && name != nil {
		return *name
	}
	return ""
}
