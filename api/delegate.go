package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/api/refusal"
)

// The console (api/console) signs people in with their API key once and
// then acts for them through this router, so that a person's decision takes
// the same pipeline as one sent with curl: scope, audit, idempotency and the
// segregation of duties.

// ErrNoKeys is SignIn's error when the server has no API keys configured:
// without them every caller is anonymous and nobody can sign in.
var ErrNoKeys = errors.New("api: no API keys are configured")

// SignIn returns the configured client whose API key is key (compared by
// hash in constant time), or UNAUTHENTICATED. OAuth access tokens do not
// sign in: a session would outlive them. A wrong key counts against the
// source address of r as a failed authentication at the API does
// (Options.AuthFailLimit), in the same count: once it is spent the answer
// is RATE_LIMITED, at the API and here alike. A right key still signs in,
// as it still calls the API.
func (s *Server) SignIn(r *http.Request, key string) (Credential, error) {
	if len(s.creds) == 0 {
		return Credential{}, ErrNoKeys
	}
	sum := sha256.Sum256([]byte(key))
	var found *Credential
	for i := range s.creds {
		if subtle.ConstantTimeCompare(sum[:], s.creds[i].KeySHA256[:]) == 1 {
			found = &s.creds[i]
		}
	}
	if found == nil || key == "" {
		reason := "unknown_key"
		if key == "" {
			reason = "missing"
		}
		return Credential{}, s.authRefusal(r, reason, refusal.Unauthenticated{OAuth: s.oauth != nil})
	}
	return *found, nil
}

// ClientNamed returns the configured client named name, as the
// configuration holds it now: a session finds its person's current scopes
// and key hash through it.
func (s *Server) ClientNamed(name string) (Credential, bool) {
	for _, c := range s.creds {
		if c.Name == name {
			return c, true
		}
	}
	return Credential{}, false
}

type delegateKey struct{}

// ServeAs serves r through the router as the configured client named
// name, without its key: the console's requests for a signed-in person. A
// name no longer configured is UNAUTHENTICATED.
func (s *Server) ServeAs(w http.ResponseWriter, r *http.Request, name string) {
	c, ok := s.ClientNamed(name)
	ctx := context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil))
	if ok {
		ctx = context.WithValue(ctx, delegateKey{}, &c)
	}
	r = r.WithContext(ctx)
	r.Header.Del("Authorization")
	r.Header.Del("X-API-Key")
	s.router.ServeHTTP(w, r)
}

// delegated is the client ServeAs serves a request as, if any.
func delegated(r *http.Request) *Credential {
	c, _ := r.Context().Value(delegateKey{}).(*Credential)
	return c
}

// RunJSON returns the run's history, the document GET /runs/{run_id}
// answers, or found false for a run the store does not hold.
func (s *Server) RunJSON(ctx context.Context, id string) (_ []byte, found bool, _ error) {
	st, err := s.runs.Get(ctx, id)
	if err != nil || st == nil {
		return nil, false, err
	}
	b, err := marshal(toRun(st, s.runs.Limits().Budget))
	return b, err == nil, err
}
