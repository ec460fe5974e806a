package sap

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/erpgate/erpgate/erp"
)

// TokenExchange configures the OAuth 2.0 token exchange (RFC 8693) at the
// customer's identity provider: before a request to the ERP, the caller's
// own access token (erp.SubjectTokenFrom, never sent to the ERP) is
// exchanged for a token of the ERP's audience, narrowed to the scope of
// the operation the call serves, and that token authenticates the
// request. The SAP user is the one the identity provider maps the
// caller's identity to.
//
// A call without a subject token is one of two kinds. A caller known by an
// API key has no token to exchange: its calls to the ERP are refused
// (erp.CallerCredentialError, reason erp.CredentialTokenRequired) before
// any request, never sent as a technical user, unless KeyCallersAsGateway
// says the operator lets them through with the gateway's own token. A call of the gateway's
// own (the start-up read of the services' $metadata, the scheduled
// re-check of held invoices) names no caller at all: it is made with a
// token of the gateway's own client, the client credentials grant at the
// same endpoint with OwnScopes.
type TokenExchange struct {
	// TokenURL is the identity provider's token endpoint.
	TokenURL string
	// ClientID and ClientSecret authenticate the gateway to the token
	// endpoint, as HTTP basic authentication (RFC 6749, section 2.3.1).
	ClientID, ClientSecret string
	// Audience is sent as the audience parameter: the ERP as the identity
	// provider names it (a client id or an audience URI).
	Audience string
	// Scope is the template of the scope asked for, scope tokens separated
	// by spaces, in which {operation} is replaced by the operation the
	// call serves ("get_invoice") and {service} by the SAP OData service
	// the request goes to ("API_SUPPLIERINVOICE_PROCESS_SRV"). It must
	// name {operation}, so that each tool gets a token of its own scope.
	// Default: DefaultExchangeScope.
	Scope string
	// SubjectTokenType is the subject_token_type sent: TokenTypeAccessToken
	// (the default) or TokenTypeJWT.
	SubjectTokenType string
	// OwnScopes are asked for with the gateway's own token; empty, the
	// client's default scopes.
	OwnScopes []string
	// KeyCallersAsGateway lets a caller known by an API key (a person in
	// the console, an agent with a key) reach the ERP with the gateway's
	// own token, its name only in the X-Erpgate-Caller header: an
	// operator's choice, off by default.
	KeyCallersAsGateway bool
}

// Token type identifiers of RFC 8693, section 3.
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// DefaultExchangeScope is the scope of an exchange when
// TokenExchange.Scope is empty: the operation's name.
const DefaultExchangeScope = "{operation}"

// exchangeGrantType is RFC 8693's grant type.
const exchangeGrantType = "urn:ietf:params:oauth:grant-type:token-exchange"

// exchangeTokensKept bounds the exchanged tokens kept, one per subject
// token, scope and audience.
const exchangeTokensKept = 4096

// exchangeLifetime is how long an exchanged token is kept when the
// identity provider does not say when it expires (expires_in is only
// RECOMMENDED) and the subject token's expiry is not known either.
const exchangeLifetime = 5 * time.Minute

// exchangeTokens exchanges callers' tokens and keeps the results.
type exchangeTokens struct {
	cfg   TokenExchange
	http  *http.Client
	own   oauth2.TokenSource
	now   func() time.Time
	cache *lru.Cache[string, exchanged]
	group singleflight.Group
}

// exchanged is a kept token and the time it is used until.
type exchanged struct {
	tok   *oauth2.Token
	until time.Time
}

func (c *Client) exchangeTokens(cfg *TokenExchange) (*exchangeTokens, error) {
	if cfg.TokenURL == "" || cfg.ClientID == "" || cfg.Audience == "" {
		return nil, errors.New("sap: Options.TokenExchange needs TokenURL, ClientID and Audience")
	}
	x := *cfg
	if x.Scope == "" {
		x.Scope = DefaultExchangeScope
	}
	if err := CheckExchangeScope(x.Scope); err != nil {
		return nil, err
	}
	switch x.SubjectTokenType {
	case "":
		x.SubjectTokenType = TokenTypeAccessToken
	case TokenTypeAccessToken, TokenTypeJWT:
	default:
		return nil, fmt.Errorf("sap: Options.TokenExchange.SubjectTokenType must be %s or %s", TokenTypeAccessToken, TokenTypeJWT)
	}
	cache, _ := lru.New[string, exchanged](exchangeTokensKept) // fails only for a size below 1
	return &exchangeTokens{
		cfg: x,
		// As the client credentials tokens are fetched (tokenSource).
		http: &http.Client{
			Transport:     userAgentTransport{rt: c.http.Transport, ua: c.userAgent},
			CheckRedirect: noRedirect,
			Timeout:       c.runner.Policy().AttemptTimeout,
		},
		own: c.tokenSource(&clientcredentials.Config{ClientID: x.ClientID, ClientSecret: x.ClientSecret,
			TokenURL: x.TokenURL, Scopes: x.OwnScopes}),
		now:   time.Now,
		cache: cache,
	}, nil
}

// CheckExchangeScope checks a template of TokenExchange.Scope: scope
// tokens (RFC 6749, section 3.3) with no placeholder but {operation} and
// {service}, and {operation} among them.
func CheckExchangeScope(tmpl string) error {
	if !strings.Contains(tmpl, "{operation}") {
		return errors.New("sap: the exchange scope must name {operation}, so that each tool's token is narrowed to it")
	}
	rest := strings.NewReplacer("{operation}", "op", "{service}", "svc").Replace(tmpl)
	if len(strings.Fields(rest)) == 0 {
		return errors.New("sap: the exchange scope is empty")
	}
	for _, r := range rest {
		switch {
		case r == '{' || r == '}':
			return errors.New("sap: the exchange scope knows only the placeholders {operation} and {service}")
		case r == ' ':
		case r < 0x21 || r > 0x7e || r == '"' || r == '\\':
			return fmt.Errorf("sap: the exchange scope holds %q, which a scope cannot", r)
		}
	}
	return nil
}

// scope is the scope asked for operation's request to svc.
func (x *exchangeTokens) scope(operation string, svc erp.Service) string {
	s := strings.ReplaceAll(x.cfg.Scope, "{operation}", operation)
	s = strings.ReplaceAll(s, "{service}", servicePaths[svc])
	return strings.Join(strings.Fields(s), " ")
}

// identity names the SAP session of a call of ctx, for its CSRF token and
// cookies: a hash of the caller's token, whose exchanges all name one SAP
// user; "" for the gateway's own calls.
func (x *exchangeTokens) identity(ctx context.Context) string {
	st, ok := erp.SubjectTokenFrom(ctx)
	if !ok {
		return ""
	}
	sum := sha256.Sum256([]byte(st.Token))
	return hex.EncodeToString(sum[:16])
}

// Token returns the token of a request of ctx to svc: the exchange of the
// caller's token for the operation's scope, kept until shortly before it
// or the caller's token expires; the gateway's own token for a call of no
// caller; for a caller without a token, an *erp.CallerCredentialError.
// Concurrent calls that need the same exchange make one request.
func (x *exchangeTokens) Token(ctx context.Context, svc erp.Service) (*oauth2.Token, error) {
	st, ok := erp.SubjectTokenFrom(ctx)
	if !ok {
		if erp.CallerFrom(ctx) != (erp.Caller{}) && !x.cfg.KeyCallersAsGateway {
			return nil, &erp.CallerCredentialError{Reason: erp.CredentialTokenRequired}
		}
		return x.own.Token()
	}
	if st.Operation == "" {
		return nil, errors.New("sap: token exchange: the call names no operation to narrow the token to")
	}
	scope := x.scope(st.Operation, svc)
	sum := sha256.Sum256([]byte(st.Token))
	key := string(sum[:]) + "\x00" + x.cfg.Audience + "\x00" + scope
	if e, ok := x.cache.Get(key); ok && x.now().Before(e.until) {
		return e.tok, nil
	}
	// The exchange is not bound to one caller's context: others may wait
	// for it. It is bounded by the HTTP client's timeout.
	ch := x.group.DoChan(key, func() (any, error) {
		if e, ok := x.cache.Get(key); ok && x.now().Before(e.until) {
			return e.tok, nil
		}
		e, err := x.exchange(st.Token, st.Operation, scope)
		if err != nil {
			return nil, err
		}
		x.cache.Add(key, e)
		return e.tok, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*oauth2.Token), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// exchangeAnswerError is a success answer of the token endpoint that is
// not one RFC 8693 allows for the exchange asked for: a fault of the
// identity provider's configuration, which no retry mends.
type exchangeAnswerError struct{ why string }

func (e *exchangeAnswerError) Error() string { return "token exchange: the answer " + e.why }

// exchange asks the token endpoint for the exchange of subject for scope.
// A refusal of the subject token (invalid_grant, or invalid_token as some
// servers answer) is the caller's: an *erp.CallerCredentialError. Any
// other refusal is an *oauth2.RetrieveError, classified as the client
// credentials flow's is; an answer that is no token, an
// *exchangeAnswerError. Neither holds the subject token.
func (x *exchangeTokens) exchange(subject, operation, scope string) (exchanged, error) {
	form := url.Values{
		"grant_type":           {exchangeGrantType},
		"subject_token":        {subject},
		"subject_token_type":   {x.cfg.SubjectTokenType},
		"requested_token_type": {TokenTypeAccessToken},
		"audience":             {x.cfg.Audience},
		"scope":                {scope},
	}
	req, err := http.NewRequest(http.MethodPost, x.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return exchanged{}, fmt.Errorf("sap: token exchange request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749, section 2.3.1: form-encoded before they are joined.
	req.SetBasicAuth(url.QueryEscape(x.cfg.ClientID), url.QueryEscape(x.cfg.ClientSecret))
	started := x.now()
	resp, err := x.http.Do(req)
	if err != nil {
		return exchanged{}, fmt.Errorf("oauth2: cannot exchange token: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return exchanged{}, fmt.Errorf("oauth2: cannot exchange token: %w", err)
	}
	// A success (RFC 8693, section 2.2.1) or an error (section 2.2.2,
	// RFC 6749 section 5.2).
	var a struct {
		AccessToken      string          `json:"access_token"`
		IssuedTokenType  string          `json:"issued_token_type"`
		TokenType        string          `json:"token_type"`
		ExpiresIn        json.RawMessage `json:"expires_in"`
		Error            string          `json:"error"`
		ErrorDescription string          `json:"error_description"`
		ErrorURI         string          `json:"error_uri"`
	}
	jsonErr := json.Unmarshal(body, &a)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Whatever the endpoint echoes of the request stays out of the
		// error, which is logged.
		scrub := strings.NewReplacer(subject, erp.SubjectToken{}.String()).Replace
		re := &oauth2.RetrieveError{Response: resp, Body: []byte(scrub(string(body))),
			ErrorCode: a.Error, ErrorDescription: scrub(a.ErrorDescription), ErrorURI: scrub(a.ErrorURI)}
		if (a.Error == "invalid_grant" || a.Error == "invalid_token") &&
			(resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized) {
			return exchanged{}, &erp.CallerCredentialError{Reason: erp.CredentialExchangeRefused, Err: re}
		}
		// invalid_scope: the scope exceeds what the caller was granted, or
		// is unknown (RFC 6749, section 5.2); the identity provider cannot
		// say which, and either way a person must act on the caller's
		// grants or on -erp-exchange-scope.
		if a.Error == "invalid_scope" && resp.StatusCode == http.StatusBadRequest {
			return exchanged{}, &erp.CallerCredentialError{Reason: erp.CredentialScopeRefused, Scope: scope, Operation: operation, Err: re}
		}
		return exchanged{}, re
	}
	if jsonErr != nil {
		return exchanged{}, &exchangeAnswerError{"is not JSON"}
	}
	if err := checkIssued(a.AccessToken, a.IssuedTokenType, a.TokenType); err != nil {
		return exchanged{}, err
	}
	tok := &oauth2.Token{AccessToken: a.AccessToken, TokenType: "Bearer"}
	life := exchangeLifetime
	if len(a.ExpiresIn) > 0 {
		secs := expiresIn(a.ExpiresIn)
		if secs <= 0 {
			return exchanged{}, &exchangeAnswerError{"has an expires_in that is no positive number"}
		}
		life = time.Duration(secs) * time.Second
		tok.Expiry = started.Add(life)
	}
	// Never kept beyond the caller's own token.
	if exp, ok := jwtExpiry(subject); ok && exp.Sub(started) < life {
		life = max(exp.Sub(started), 0)
	}
	// Fetched anew shortly before it expires, so that it does not expire
	// on the way to the ERP: a minute before, or half its life for a short
	// one.
	return exchanged{tok: tok, until: started.Add(life - min(tokenMargin, life/2))}, nil
}

// checkIssued validates a success answer by RFC 8693, section 2.2.1: an
// access token, of a type sent as a bearer token.
func checkIssued(accessToken, issuedType, tokenType string) error {
	switch {
	case accessToken == "":
		return &exchangeAnswerError{"holds no access_token"}
	case issuedType != TokenTypeAccessToken && issuedType != TokenTypeJWT:
		return &exchangeAnswerError{fmt.Sprintf("has issued_token_type %q, not an access token", issuedType)}
	case !strings.EqualFold(tokenType, "bearer") && !strings.EqualFold(tokenType, "N_A"):
		return &exchangeAnswerError{fmt.Sprintf("has token_type %q, not Bearer", tokenType)}
	}
	return nil
}

// jwtExpiry reads the exp of a JWT, which the gateway checked before the
// call came this far; false for a token that is no JWT or has none.
func jwtExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	f, err := claims.Exp.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// exchangeAuthorize is authorize for the token exchange: the token of the
// request's caller and operation, toward svc.
func (c *Client) exchangeAuthorize(req *http.Request, svc erp.Service) error {
	tok, err := c.exchange.Token(req.Context(), svc)
	if err != nil {
		return err
	}
	req.Header["Authorization"] = []string{"Bearer " + tok.AccessToken}
	return nil
}
