package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/errmap"
)

// Credential is one client allowed to call the tools: its name, the SHA-256
// of its API key (the key itself is never stored), and its scopes. A
// caller known by an access token has its token's client id and subject
// too, which the ERP's requests name (erp.Caller).
type Credential struct {
	Name            string
	KeySHA256       [sha256.Size]byte
	Scopes          []string
	Client, Subject string
}

// ParseCredential reads "name:sha256hex:scope+scope", the form of one
// client in configuration.
func ParseCredential(s string) (Credential, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 || parts[0] == "" {
		return Credential{}, fmt.Errorf("credential %q: want name:sha256hex:scope+scope", redact(s))
	}
	sum, err := hex.DecodeString(parts[1])
	if err != nil || len(sum) != sha256.Size {
		return Credential{}, fmt.Errorf("credential %q: the key hash must be 64 hex digits (sha256 of the key)", parts[0])
	}
	c := Credential{Name: parts[0], Scopes: strings.Split(parts[2], "+")}
	copy(c.KeySHA256[:], sum)
	for _, sc := range c.Scopes {
		if !slices.Contains(Scopes, sc) {
			return Credential{}, fmt.Errorf("credential %q: unknown scope %q (want %s)", c.Name, sc, strings.Join(Scopes, ", "))
		}
	}
	return c, nil
}

// redact keeps only the name part of a malformed credential for messages.
func redact(s string) string {
	name, _, _ := strings.Cut(s, ":")
	return name + ":…"
}

// anonymous is the client of a call without credentials to a gateway
// configured with none (Options.Credentials, OAuth): an agent, with the
// agents' scopes only, so that it can never decide an approval, list the
// queues or read the audit log.
var anonymous = Credential{Name: "anonymous", Scopes: []string{ScopeRead, ScopeWrite, ScopePost}}

// identify finds the client by its API key, sent as "Authorization:
// Bearer <key>" or "X-API-Key: <key>", or, when the server takes OAuth
// access tokens, by the JWT access token sent as "Authorization: Bearer
// <token>". Keys are compared by hash in constant time. With neither keys
// nor OAuth configured a call without a key is anonymous, and a call with
// one is the demonstration person it belongs to (Options.DemoPeople).
func (s *Server) identify(r *http.Request) (*Credential, error) {
	if c := delegated(r); c != nil {
		return c, nil // delegate.go: the console's request for a signed-in person
	}
	key := r.Header.Get("X-API-Key")
	bearer := false
	if auth := r.Header.Get("Authorization"); key == "" && len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		key, bearer = strings.TrimSpace(auth[7:]), true
	}
	if s.open && key == "" {
		return &anonymous, nil
	}
	if bearer && s.oauth != nil && looksLikeJWT(key) {
		return s.oauth.authenticate(r.Context(), key)
	}
	sum := sha256.Sum256([]byte(key))
	var found *Credential
	for i := range s.creds {
		if subtle.ConstantTimeCompare(sum[:], s.creds[i].KeySHA256[:]) == 1 {
			found = &s.creds[i]
		}
	}
	if found == nil || key == "" {
		return nil, refusal.Unauthenticated{OAuth: s.oauth != nil, Bearer: bearer && key != ""}
	}
	return found, nil
}

// authenticate is identify that counts a refusal in the metrics
// (erpgate_auth_failures_total) and against the source address's limit
// of failed authentications, which turns it into RATE_LIMITED once spent.
func (s *Server) authenticate(r *http.Request) (*Credential, error) {
	c, err := s.identify(r)
	if err == nil {
		return c, nil
	}
	return nil, s.authRefusal(r, authFailReason(r, err), err)
}

// authRefusal counts a failed authentication for its reason and returns
// err, or the RATE_LIMITED that replaces it. A token that could not be
// checked is no fault of the caller's and is not held against its address.
func (s *Server) authRefusal(r *http.Request, reason string, err error) error {
	s.metrics.authFailed(reason)
	if reason == "unverifiable" {
		return err
	}
	if limited := s.authFailed(r); limited != nil {
		return limited
	}
	return err
}

// authFailReason is the metrics reason of an authentication that failed
// with err (nil when only the HTTP status is known): one of
// authFailReasons.
func authFailReason(r *http.Request, err error) string {
	var u refusal.Unauthenticated
	auth := r.Header.Get("Authorization")
	switch {
	case errors.As(err, &u) && u.Token == refusal.TokenUnverifiable:
		return "unverifiable"
	case errors.As(err, &u) && u.Token != "":
		return "bad_token"
	case r.Header.Get("X-API-Key") == "" && auth == "":
		return "missing"
	case err == nil && len(auth) > 7 && looksLikeJWT(strings.TrimSpace(auth[7:])):
		return "bad_token"
	}
	return "unknown_key"
}

// authenticated reports whether every caller needs credentials: a gateway
// configured with none (open) serves a call without them as anonymous.
func (s *Server) authenticated() bool { return !s.open }

// refuseUnauthenticated writes the refusal of a request identify refused,
// with the WWW-Authenticate of OAuth, outside the operations' pipeline.
func (s *Server) refuseUnauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	e := errmap.Map(err)
	if rec := recordFrom(r.Context()); rec != nil {
		rec.code = string(e.Code)
	}
	if c := s.challenge(err); c != "" {
		w.Header().Set("WWW-Authenticate", c)
	}
	errmap.Write(w, e)
}

// scopeOf is the scope an operation needs: post_invoice needs its own
// scope when the server is so configured.
func (s *Server) scopeOf(o operation) string {
	if o.name == opPostInvoice.name && s.postScope {
		return ScopePost
	}
	return o.scope
}

// monitoringEndpoint guards /healthz, /readyz and /metrics: open by
// default, behind any valid API key when the server is configured to
// protect them (Options.ProtectOps).
func (s *Server) monitoringEndpoint(next http.Handler) http.Handler {
	if !s.protectOps {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.authenticate(r); err != nil {
			s.refuseUnauthenticated(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorize checks that the client holds the scope.
func authorize(c *Credential, o operation, scope string) error {
	if slices.Contains(c.Scopes, scope) {
		return nil
	}
	return refusal.ScopeMissing{Scope: scope, Operation: o.name}
}

// Allows reports whether the credentials in header may call operation: the
// view of the tools a client gets on /mcp. Without credentials configured
// every operation is allowed.
func (s *Server) Allows(header http.Header, operation string) bool {
	c, err := s.identify(&http.Request{Header: header})
	if err != nil {
		return false
	}
	for _, o := range operations {
		if o.name == operation {
			return authorize(c, o, s.scopeOf(o)) == nil
		}
	}
	return false
}
