package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/errmap"
)

// OAuth makes the gateway an OAuth 2.1 resource server: beside API keys it
// takes JWT access tokens of one authorization server, checks them against
// the server's JSON Web Key Set, and maps their scopes to the gateway's.
type OAuth struct {
	// Issuer is the authorization server's issuer URL, the tokens' iss.
	// Required.
	Issuer string
	// JWKSURL is where the issuer's signing keys are. Empty: found on
	// first use through the issuer's OpenID Connect discovery document
	// (/.well-known/openid-configuration) or its RFC 8414 metadata
	// (/.well-known/oauth-authorization-server).
	JWKSURL string
	// Resource is the gateway's public URL, the resource of its RFC 9728
	// metadata. Required.
	Resource string
	// Audience must be one of a token's aud (RFC 8707). Default Resource.
	Audience string
	// ScopeClaim is the claim holding the token's scopes, space separated
	// or an array. Default "scope"; scp is read as well.
	ScopeClaim string
	// Leeway is the clock skew allowed on exp, nbf and iat. Default 30s.
	Leeway time.Duration
	// TokenTypes are the JWT header typ values a token may have, compared
	// without case and with or without "application/". Default: at+jwt,
	// the type RFC 9068 gives access tokens, so that an ID token or another
	// JWT of the issuer is never taken for one. "*" takes any typ, none
	// included, for an authorization server that does not write at+jwt.
	TokenTypes []string
	// HTTPClient fetches the discovery document and the keys. Default
	// an http.Client with a DefaultKeysTimeout timeout: a call waits for
	// the keys no longer than that, and is AUTH_UNAVAILABLE when they
	// cannot be had.
	HTTPClient *http.Client
}

// oauthPrefix starts the client name of a caller known by an access token,
// as written in the records and the audit log.
const oauthPrefix = "oauth:"

// resourceMetadataPath is where the RFC 9728 protected resource metadata
// is served.
const resourceMetadataPath = "/.well-known/oauth-protected-resource"

// signingAlgs are the token signatures accepted: every asymmetric one the
// key set can check, never "none" or a shared secret.
var signingAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// discoveryRetry is how long a failed discovery is remembered before the
// issuer is asked again.
const discoveryRetry = 10 * time.Second

// DefaultKeysTimeout bounds a fetch of the issuer's discovery document or
// keys when OAuth.HTTPClient is not set.
const DefaultKeysTimeout = 5 * time.Second

// keysRetry is how long calls are refused at once, AUTH_UNAVAILABLE,
// after the issuer's keys could not be fetched and none were ever had,
// before a call tries again.
const keysRetry = 5 * time.Second

// resourceServer checks the access tokens of one issuer.
type resourceServer struct {
	cfg      OAuth
	metadata string // URL of the protected resource metadata
	now      func() time.Time

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	failedAt time.Time
	failure  error
	jwksURL  string // the keys' URL once known
	// keys is what the fetches of the issuer's documents and keys found.
	keys keyState
}

// keyState records the fetches of the issuer's keys: when the last one
// succeeded and when one last failed.
type keyState struct {
	mu             sync.Mutex
	okAt, failedAt time.Time
}

func (k *keyState) record(ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ok {
		k.okAt = time.Now()
	} else {
		k.failedAt = time.Now()
	}
}

// down reports whether the last fetch failed, and since when; never
// says whether any fetch ever succeeded.
func (k *keyState) down() (failedAt time.Time, down, never bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.failedAt, !k.failedAt.IsZero() && !k.okAt.After(k.failedAt), k.okAt.IsZero()
}

// recordingTransport tells keys whether each fetch of the issuer's keys
// got a 200. The discovery documents (/.well-known/) are not counted: a
// failed discovery is remembered by verifierFor.
type recordingTransport struct {
	rt   http.RoundTripper
	keys *keyState
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt := t.rt
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if !strings.Contains(req.URL.Path, "/.well-known/") {
		t.keys.record(err == nil && resp.StatusCode == http.StatusOK)
	}
	return resp, err
}

// newResourceServer checks cfg and fills in its defaults.
func newResourceServer(cfg OAuth, now func() time.Time) (*resourceServer, error) {
	if !absoluteHTTP(cfg.Issuer) {
		return nil, errors.New("api: OAuth.Issuer must be an absolute http(s) URL")
	}
	if !absoluteHTTP(cfg.Resource) {
		return nil, errors.New("api: OAuth.Resource must be an absolute http(s) URL")
	}
	if cfg.JWKSURL != "" && !absoluteHTTP(cfg.JWKSURL) {
		return nil, errors.New("api: OAuth.JWKSURL must be an absolute http(s) URL")
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.Resource
	}
	if cfg.ScopeClaim == "" {
		cfg.ScopeClaim = "scope"
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = 30 * time.Second
	}
	if len(cfg.TokenTypes) == 0 {
		cfg.TokenTypes = DefaultTokenTypes
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultKeysTimeout}
	}
	rs := &resourceServer{cfg: cfg, now: now, jwksURL: cfg.JWKSURL,
		metadata: strings.TrimRight(cfg.Resource, "/") + resourceMetadataPath}
	// A copy of the client, whose fetches are recorded: a call whose token
	// could not be checked because the keys could not be had is
	// AUTH_UNAVAILABLE, not a refused token, and /readyz says so.
	hc := *cfg.HTTPClient
	hc.Transport = recordingTransport{rt: hc.Transport, keys: &rs.keys}
	rs.cfg.HTTPClient = &hc
	return rs, nil
}

func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// looksLikeJWT reports whether s has the form of a signed JWT: three
// base64url parts, the first a JSON header naming an algorithm. An API key
// never has it.
func looksLikeJWT(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return false
	}
	var header struct {
		Alg string `json:"alg"`
	}
	return json.Unmarshal(raw, &header) == nil && header.Alg != ""
}

// DefaultTokenTypes are the typ values an access token may have when
// OAuth.TokenTypes is empty.
var DefaultTokenTypes = []string{"at+jwt"}

// typeAllowed reports whether a JWT header's typ is one of types: compared
// without case and without an "application/" prefix (RFC 7515 4.1.9);
// "*" allows any.
func typeAllowed(typ string, types []string) bool {
	norm := func(s string) string {
		s = strings.ToLower(strings.TrimSpace(s))
		return strings.TrimPrefix(s, "application/")
	}
	for _, t := range types {
		if t == "*" || (typ != "" && norm(t) == norm(typ)) {
			return true
		}
	}
	return false
}

// jwtType is the typ of a JWT's header; "" when it has none or the header
// does not decode.
func jwtType(raw string) string {
	head, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var header struct {
		Typ string `json:"typ"`
	}
	_ = json.Unmarshal(b, &header)
	return header.Typ
}

// tokenClaims are the claims read beside those go-oidc checks.
type tokenClaims struct {
	Exp      *json.Number    `json:"exp"`
	Nbf      *json.Number    `json:"nbf"`
	Iat      *json.Number    `json:"iat"`
	ClientID string          `json:"client_id"`
	Azp      string          `json:"azp"`
	Scp      json.RawMessage `json:"scp"`
}

// authenticate checks the access token raw and returns its client: its
// typ (OAuth.TokenTypes), the signature against the issuer's keys, the
// issuer, exp, nbf and iat (with the leeway), and the audience. A token
// refused is refusal.Unauthenticated.
func (rs *resourceServer) authenticate(ctx context.Context, raw string) (*Credential, error) {
	refuse := func(reason string) error {
		return refusal.Unauthenticated{OAuth: true, Bearer: true, Token: reason}
	}
	if !typeAllowed(jwtType(raw), rs.cfg.TokenTypes) {
		return nil, refuse(refusal.TokenType)
	}
	unverifiable := func(wait time.Duration) error {
		return refusal.Unauthenticated{OAuth: true, Bearer: true, Token: refusal.TokenUnverifiable,
			RetryAfter: max(1, int((wait+time.Second-1)/time.Second))}
	}
	// No keys were ever had and the last fetch failed a moment ago: the
	// call is refused at once rather than wait for another fetch.
	if failedAt, down, never := rs.keys.down(); down && never && time.Since(failedAt) < keysRetry {
		return nil, unverifiable(keysRetry - time.Since(failedAt))
	}
	v, err := rs.verifierFor(ctx)
	if err != nil {
		return nil, unverifiable(discoveryRetry)
	}
	started := time.Now()
	tok, err := v.Verify(ctx, raw)
	if err != nil {
		// A fetch of the keys that failed during the check means the token
		// could not be checked, not that it is bad.
		if failedAt, down, _ := rs.keys.down(); down && !failedAt.Before(started) {
			return nil, unverifiable(keysRetry)
		}
		return nil, refuse(refusal.TokenInvalid)
	}
	var claims tokenClaims
	var all map[string]json.RawMessage
	if tok.Claims(&claims) != nil || tok.Claims(&all) != nil {
		return nil, refuse(refusal.TokenInvalid)
	}
	now := rs.now()
	exp, ok := unixTime(claims.Exp)
	if !ok {
		return nil, refuse(refusal.TokenInvalid)
	}
	if now.After(exp.Add(rs.cfg.Leeway)) {
		return nil, refuse(refusal.TokenExpired)
	}
	if claims.Nbf != nil {
		nbf, ok := unixTime(claims.Nbf)
		if !ok {
			return nil, refuse(refusal.TokenInvalid)
		}
		if now.Add(rs.cfg.Leeway).Before(nbf) {
			return nil, refuse(refusal.TokenNotYetValid)
		}
	}
	if claims.Iat != nil {
		iat, ok := unixTime(claims.Iat)
		if !ok {
			return nil, refuse(refusal.TokenInvalid)
		}
		if now.Add(rs.cfg.Leeway).Before(iat) {
			return nil, refuse(refusal.TokenIssuedInFuture)
		}
	}
	if !slices.Contains(tok.Audience, rs.cfg.Audience) {
		return nil, refuse(refusal.TokenAudience)
	}
	name := cmp.Or(claims.ClientID, claims.Azp, tok.Subject)
	if name == "" {
		return nil, refuse(refusal.TokenInvalid)
	}
	granted := tokenScopes(all[rs.cfg.ScopeClaim])
	if rs.cfg.ScopeClaim != "scp" {
		granted = append(granted, tokenScopes(claims.Scp)...)
	}
	return &Credential{Name: oauthPrefix + name, Scopes: gatewayScopes(granted),
		Client: cmp.Or(claims.ClientID, claims.Azp), Subject: tok.Subject}, nil
}

// unixTime reads a NumericDate claim.
func unixTime(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// tokenScopes reads a scope claim: a space-separated string or an array of
// strings.
func tokenScopes(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.Fields(s)
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		var out []string
		for _, e := range list {
			out = append(out, strings.Fields(e)...)
		}
		return out
	}
	return nil
}

// gatewayScopes maps a token's scopes to the gateway's: a scope named as
// the gateway names it, or ending in "/<scope>" or ":<scope>", as
// authorization servers that qualify scopes with their resource write them
// (the token's audience already names the gateway). Others are ignored.
func gatewayScopes(granted []string) []string {
	var out []string
	for _, g := range granted {
		if i := strings.LastIndexAny(g, "/:"); i >= 0 {
			g = g[i+1:]
		}
		if slices.Contains(Scopes, g) && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// verifierFor returns the token verifier, finding the issuer's keys on
// first use.
func (rs *resourceServer) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.verifier != nil {
		return rs.verifier, nil
	}
	if rs.failure != nil && rs.now().Sub(rs.failedAt) < discoveryRetry {
		return nil, rs.failure
	}
	jwks := rs.jwksURL
	if jwks == "" {
		var err error
		if jwks, err = rs.discover(ctx); err != nil {
			rs.failure, rs.failedAt = err, rs.now()
			return nil, err
		}
		rs.jwksURL = jwks
	}
	keys := oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), rs.cfg.HTTPClient), jwks)
	rs.verifier = oidc.NewVerifier(rs.cfg.Issuer, keys, &oidc.Config{
		SkipClientIDCheck: true, // the audience is checked against OAuth.Audience
		// exp and nbf are checked with the leeway of OAuth.Leeway.
		SkipExpiryCheck:      true,
		SupportedSigningAlgs: signingAlgs,
		Now:                  rs.now,
	})
	rs.failure = nil
	return rs.verifier, nil
}

// discover reads the issuer's jwks_uri from its OpenID Connect discovery
// document or its RFC 8414 authorization server metadata, whichever it
// serves; the document's issuer must be the configured one.
func (rs *resourceServer) discover(ctx context.Context) (string, error) {
	issuer := strings.TrimRight(rs.cfg.Issuer, "/")
	candidates := []string{issuer + "/.well-known/openid-configuration"}
	if u, err := url.Parse(issuer); err == nil && u.Path != "" {
		// RFC 8414: the well-known path goes between the host and the
		// issuer's path.
		candidates = append(candidates, u.Scheme+"://"+u.Host+"/.well-known/oauth-authorization-server"+u.Path)
	}
	candidates = append(candidates, issuer+"/.well-known/oauth-authorization-server")
	var errs []error
	for _, c := range candidates {
		jwks, err := rs.fetchJWKSURI(ctx, c)
		if err == nil {
			return jwks, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("oauth discovery of %s: %w", rs.cfg.Issuer, errors.Join(errs...))
}

func (rs *resourceServer) fetchJWKSURI(ctx context.Context, doc string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, doc, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := rs.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: status %d", doc, resp.StatusCode)
	}
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&meta); err != nil {
		return "", fmt.Errorf("%s: %w", doc, err)
	}
	if strings.TrimRight(meta.Issuer, "/") != strings.TrimRight(rs.cfg.Issuer, "/") {
		return "", fmt.Errorf("%s: issuer %q is not %q", doc, meta.Issuer, rs.cfg.Issuer)
	}
	if !absoluteHTTP(meta.JWKSURI) {
		return "", fmt.Errorf("%s: no jwks_uri", doc)
	}
	return meta.JWKSURI, nil
}

// resourceMetadata is the RFC 9728 protected resource metadata.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// handleResourceMetadata serves the protected resource metadata, or the
// 404 of an unknown route without OAuth.
func (s *Server) handleResourceMetadata(w http.ResponseWriter, r *http.Request) {
	if s.oauth == nil {
		s.notFound(w, r)
		return
	}
	body, _ := json.Marshal(resourceMetadata{
		Resource:               s.oauth.cfg.Resource,
		AuthorizationServers:   []string{s.oauth.cfg.Issuer},
		ScopesSupported:        Scopes,
		BearerMethodsSupported: []string{"header"},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(append(body, '\n'))
}

// challenge is the WWW-Authenticate of a 401, as RFC 6750 and RFC 9728
// write it: where the protected resource metadata is, and invalid_token
// when a bearer credential was sent and refused. Empty without OAuth.
func (s *Server) challenge(err error) string {
	var u refusal.Unauthenticated
	if s.oauth == nil || !errors.As(err, &u) || u.Token == refusal.TokenUnverifiable {
		// A token that could not be checked is AUTH_UNAVAILABLE, a 503:
		// no challenge, the credentials may well be good.
		return ""
	}
	if u.Bearer {
		return fmt.Sprintf(`Bearer error="invalid_token", resource_metadata=%q`, s.oauth.metadata)
	}
	return fmt.Sprintf(`Bearer resource_metadata=%q`, s.oauth.metadata)
}

// RequireCredentials guards h, the MCP endpoint, when the gateway takes
// OAuth access tokens: a request without a valid access token or API key
// is refused at the HTTP level, 401 UNAUTHENTICATED with the
// WWW-Authenticate that tells an MCP client where to sign in. A tools/call
// with an access token that lacks the tool's scope is refused there too,
// 403 with the insufficient_scope challenge of the MCP authorization spec,
// so that the client can ask for the scope (step-up authorization); the
// body is the five-field SCOPE_MISSING. An API key cannot be stepped up:
// its calls reach the tools, where a missing scope is the SCOPE_MISSING
// tool result, as without OAuth. Without OAuth, h is returned as it is.
func (s *Server) RequireCredentials(h http.Handler) http.Handler {
	if s.oauth == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.identify(r)
		if err != nil {
			s.refuseUnauthenticated(w, r, err)
			return
		}
		if strings.HasPrefix(c.Name, oauthPrefix) {
			if missing, ok := s.toolScopeMissing(r, c); ok {
				s.refuseInsufficientScope(w, r, c, missing)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// toolScopeMissing peeks at an MCP request: when it is a tools/call of an
// operation whose scope the client lacks, it returns the refusal. The body
// is put back as it came, read or not; a body over the size limit is not
// read past it, and goes on for the MCP endpoint to refuse.
func (s *Server) toolScopeMissing(r *http.Request, c *Credential) (refusal.ScopeMissing, bool) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return refusal.ScopeMissing{}, false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
	r.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(head), r.Body), Closer: r.Body}
	if err != nil || int64(len(head)) > s.maxBody {
		return refusal.ScopeMissing{}, false
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(head, &msg) != nil || msg.Method != "tools/call" {
		return refusal.ScopeMissing{}, false
	}
	for _, o := range operations {
		if o.name != msg.Params.Name {
			continue
		}
		if err := authorize(c, o, s.scopeOf(o)); err != nil {
			var missing refusal.ScopeMissing
			if errors.As(err, &missing) {
				return missing, true
			}
		}
		break
	}
	return refusal.ScopeMissing{}, false
}

// refuseInsufficientScope writes the 403 of a tools/call whose scope the
// access token lacks. The challenge's scope is what the client holds plus
// what the call needs, so that asking for it keeps the scopes it has.
func (s *Server) refuseInsufficientScope(w http.ResponseWriter, r *http.Request, c *Credential, missing refusal.ScopeMissing) {
	e := errmap.InsufficientScope(missing)
	if rec := recordFrom(r.Context()); rec != nil {
		rec.code = string(e.Code)
	}
	want := append(slices.Clone(c.Scopes), missing.Scope)
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
		strings.Join(want, " "), s.oauth.metadata, "the "+missing.Scope+" scope is needed for "+missing.Operation))
	errmap.Write(w, e)
}

// readCloser is a body read from Reader and closed by Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// ready checks that the issuer's keys can be had: at once when the last
// fetch of them succeeded, else by fetching them now (a readiness probe
// tries again while they cannot be had). An error is the
// AUTH_UNAVAILABLE refusal.
func (rs *resourceServer) ready(ctx context.Context) error {
	if _, down, never := rs.keys.down(); !down && !never {
		return nil
	}
	unavailable := refusal.Unauthenticated{OAuth: true, Token: refusal.TokenUnverifiable, RetryAfter: int(keysRetry / time.Second)}
	if _, err := rs.verifierFor(ctx); err != nil {
		return fmt.Errorf("%w: %v", unavailable, err)
	}
	rs.mu.Lock()
	jwks := rs.jwksURL
	rs.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwks, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", unavailable, err)
	}
	resp, err := rs.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: the issuer's keys: %v", unavailable, err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set) != nil || len(set.Keys) == 0 {
		rs.keys.record(false)
		return fmt.Errorf("%w: the issuer's keys: status %d, or no keys", unavailable, resp.StatusCode)
	}
	return nil
}
