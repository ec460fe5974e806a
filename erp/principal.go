package erp

import (
	"context"
	"log/slog"
)

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

// SubjectTokenKey is the context key of the caller's own access token,
// put there only as the subject of a token exchange (RFC 8693): a
// credential, which an adapter may exchange at the customer's identity
// provider for a token of its own toward the ERP, and must never send on
// to the ERP, write to a log, put in a span or in an error. Its value is a
// *SubjectToken.
type SubjectTokenKey struct{}

// SubjectToken is the access token a caller presented, already verified
// by the gateway, and the operation the call serves.
type SubjectToken struct {
	// Token is the access token as the caller sent it.
	Token string
	// Operation is the gateway's operation the call serves, the tool's
	// name ("get_invoice"): an exchanged token is narrowed to it.
	Operation string
}

// redactedToken is what fmt and log/slog show of a SubjectToken.
const redactedToken = "[subject token]"

// String, GoString and LogValue keep the token out of anything printed or
// logged by mistake.
func (SubjectToken) String() string { return redactedToken }

// GoString is String for %#v.
func (SubjectToken) GoString() string { return redactedToken }

// LogValue is String for log/slog.
func (t SubjectToken) LogValue() slog.Value {
	return slog.GroupValue(slog.String("token", redactedToken), slog.String("operation", t.Operation))
}

// WithSubjectToken returns a context whose calls to the ERP may exchange
// t.Token for a token of their own (see SubjectTokenKey).
func WithSubjectToken(ctx context.Context, t SubjectToken) context.Context {
	return context.WithValue(ctx, SubjectTokenKey{}, &t)
}

// SubjectTokenFrom returns the caller's access token ctx carries for an
// exchange; false for a caller known by an API key and for a call of the
// gateway's own.
func SubjectTokenFrom(ctx context.Context) (SubjectToken, bool) {
	if t, ok := ctx.Value(SubjectTokenKey{}).(*SubjectToken); ok && t != nil && t.Token != "" {
		return *t, true
	}
	return SubjectToken{}, false
}

// The reasons of a CallerCredentialError.
const (
	// CredentialExchangeRefused: the identity provider refused to exchange
	// the caller's access token (RFC 8693 invalid_grant: expired, revoked
	// or not for this use).
	CredentialExchangeRefused = "exchange_refused"
	// CredentialTokenRequired: the ERP is reached only with an exchange of
	// the caller's own access token, and the caller has none (it is known
	// by an API key).
	CredentialTokenRequired = "access_token_required"
	// CredentialScopeRefused: the identity provider would not exchange
	// the caller's access token for the scope of the operation (RFC 6749
	// invalid_scope): the caller does not hold it, or the identity
	// provider does not know it.
	CredentialScopeRefused = "exchange_scope_refused"
)

// CallerCredentialError says a call cannot reach the ERP for its caller's
// credentials, which the caller must change: not a fault of the ERP nor of
// the gateway's configuration. Nothing was sent to the ERP.
type CallerCredentialError struct {
	// Reason is one of the Credential reasons.
	Reason string
	// Scope and Operation, for CredentialScopeRefused, are the scope
	// asked for and the operation it was asked for.
	Scope, Operation string
	// Err is the identity provider's answer, for the log only.
	Err error
}

func (e *CallerCredentialError) Error() string {
	if e.Err != nil {
		return "caller's credentials: " + e.Reason + ": " + e.Err.Error()
	}
	return "caller's credentials: " + e.Reason
}

func (e *CallerCredentialError) Unwrap() error { return e.Err }
