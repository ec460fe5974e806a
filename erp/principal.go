package erp

import "context"

// PrincipalKey is the context key of the identity a call to the ERP is
// made for: the name of the calling agent or person as the gateway knows
// it (an API key's name, an access token's client or subject). An adapter
// that signs in per identity asks the ERP for a session of that name. Its
// value is a *string (WithPrincipal) or a *Caller (WithCaller).
type PrincipalKey struct{}

// WithPrincipal returns a context whose calls to the ERP are made for name.
func WithPrincipal(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, PrincipalKey{}, &name)
}

// PrincipalFrom returns the identity ctx carries, or "" for a call of the
// gateway's own (a start-up check, a scheduled re-check).
func PrincipalFrom(ctx context.Context) string {
	return CallerFrom(ctx).Name
}

// Caller is who a call to the ERP is made for, as the ERP's logs are told
// it: never a credential, only names.
type Caller struct {
	// Name is the identity the call is made for (PrincipalFrom): an API
	// key's name, or an access token's client id or else its subject.
	Name string
	// Client and Subject are an access token's client id (client_id, or
	// azp) and subject (sub); both empty for a client known by its API
	// key.
	Client, Subject string
}

// WithCaller returns a context whose calls to the ERP are made for c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, PrincipalKey{}, &c)
}

// CallerFrom returns the caller ctx carries; the zero Caller for a call of
// the gateway's own.
func CallerFrom(ctx context.Context) Caller {
	switch v := ctx.Value(PrincipalKey{}).(type) {
	case *Caller:
		if v != nil {
			return *v
		}
	case *string:
		if v != nil {
			return Caller{Name: *v}
		}
	}
	return Caller{}
}
