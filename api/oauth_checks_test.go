package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/erpgate/erpgate/api"
)

// signTyped signs claims with the issuer's key and typ as the JWT
// header's typ (none when empty).
func (iss *testIssuer) signTyped(t *testing.T, claims map[string]any, typ string) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: iss.key, KeyID: "k1"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestOAuthTokenTypeAndIssuedAt: a token's typ must be at+jwt (in any
// case, with or without application/) unless OAuth.TokenTypes says
// otherwise, so that an ID token is never taken for an access token; a
// token issued later than now beyond the leeway is refused, one within it
// is taken.
func TestOAuthTokenTypeAndIssuedAt(t *testing.T) {
	iss := newTestIssuer(t)
	serve := func(types []string) string {
		srv, err := api.NewServer(api.Options{ERP: fixedERP{inv: benchInvoice()}, Records: testRecords(t),
			OAuth: &api.OAuth{Issuer: iss.srv.URL, Resource: oauthResource, TokenTypes: types}})
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(srv)
		t.Cleanup(gw.Close)
		return gw.URL
	}
	call := func(base, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/invoices/5105600101", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode == http.StatusOK {
			return resp.StatusCode, ""
		}
		return resp.StatusCode, body.Code + "/" + strings.TrimSpace(toString(body.Details["reason"]))
	}
	future := iss.claims("agent-app", "read")
	future["iat"] = time.Now().Add(10 * time.Minute).Unix()
	skewed := iss.claims("agent-app", "read")
	skewed["iat"] = time.Now().Add(10 * time.Second).Unix()
	good := iss.claims("agent-app", "read")

	strict := serve(nil)
	for _, c := range []struct {
		name, token, want string
	}{
		{"at+jwt", iss.signTyped(t, good, "at+jwt"), ""},
		{"application/AT+JWT", iss.signTyped(t, good, "application/AT+JWT"), ""},
		{"an ID token's JWT", iss.signTyped(t, good, "JWT"), "UNAUTHENTICATED/type"},
		{"no typ", iss.signTyped(t, good, ""), "UNAUTHENTICATED/type"},
		{"issued in the future", iss.signTyped(t, future, "at+jwt"), "UNAUTHENTICATED/issued_in_future"},
		{"issued within the leeway", iss.signTyped(t, skewed, "at+jwt"), ""},
	} {
		if status, got := call(strict, c.token); got != c.want || (c.want == "" && status != http.StatusOK) ||
			(c.want != "" && status != http.StatusUnauthorized) {
			t.Errorf("%s: %d %q, want %q", c.name, status, got, c.want)
		}
	}
	lax := serve([]string{"*"})
	for _, typ := range []string{"JWT", ""} {
		if status, got := call(lax, iss.signTyped(t, good, typ)); status != http.StatusOK {
			t.Errorf("TokenTypes *: typ %q refused: %d %s", typ, status, got)
		}
	}
	jwt := serve([]string{"JWT"})
	if status, _ := call(jwt, iss.signTyped(t, good, "JWT")); status != http.StatusOK {
		t.Errorf("TokenTypes JWT: a JWT refused: %d", status)
	}
	if _, got := call(jwt, iss.signTyped(t, good, "at+jwt")); got != "UNAUTHENTICATED/type" {
		t.Errorf("TokenTypes JWT: an at+jwt taken: %q", got)
	}
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// TestOAuthKeysUnavailable: while the issuer's keys cannot be fetched (an
// error, or no answer within the keys' timeout), a call with an access
// token is AUTH_UNAVAILABLE (503, retryable, Retry-After), at once after
// the first that waited, and /readyz says the same; API keys still work;
// once the keys are back, /readyz is ready and the token is taken.
func TestOAuthKeysUnavailable(t *testing.T) {
	iss := newTestIssuer(t)
	hang := make(chan struct{})
	iss.keysHang.Store(&hang)
	srv, err := api.NewServer(api.Options{ERP: fixedERP{inv: benchInvoice()}, Records: testRecords(t),
		Credentials: []api.Credential{credential(t, "key-agent", oauthAPIKey, "read")},
		OAuth: &api.OAuth{Issuer: iss.srv.URL, Resource: oauthResource,
			HTTPClient: &http.Client{Timeout: 300 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(srv)
	t.Cleanup(gw.Close)
	token := iss.sign(t, iss.claims("agent-app", "read"), nil)
	get := func(path, header, value string) (int, http.Header, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, gw.URL+path, nil)
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, resp.Header, body
	}
	unavailable := func(what string, status int, h http.Header, body map[string]any) {
		t.Helper()
		if status != http.StatusServiceUnavailable || body["code"] != "AUTH_UNAVAILABLE" || body["retryable"] != true ||
			body["next_action"] != "hold_and_recheck" || h.Get("Retry-After") == "" || h.Get("WWW-Authenticate") != "" {
			t.Errorf("%s: %d %v, Retry-After %q, WWW-Authenticate %q", what, status, body, h.Get("Retry-After"), h.Get("WWW-Authenticate"))
		}
	}

	start := time.Now()
	status, h, body := get("/invoices/5105600101", "Authorization", "Bearer "+token)
	unavailable("the call that waited for the keys", status, h, body)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the call waited %s for the keys", d)
	}
	start = time.Now()
	status, h, body = get("/invoices/5105600101", "Authorization", "Bearer "+token)
	unavailable("the next call", status, h, body)
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("the next call waited %s, want an answer at once", d)
	}
	if status, _, _ := get("/invoices/5105600101", "X-API-Key", oauthAPIKey); status != http.StatusOK {
		t.Errorf("an API key while the keys are away: %d", status)
	}
	status, h, body = get("/readyz", "", "")
	unavailable("/readyz", status, h, body)

	// The keys answer again, first with an error, then with the keys.
	iss.keysHang.Store(nil)
	close(hang)
	iss.keysDown.Store(true)
	status, h, body = get("/readyz", "", "")
	unavailable("/readyz while the keys answer 503", status, h, body)
	iss.keysDown.Store(false)
	if status, _, body := get("/readyz", "", ""); status != http.StatusOK {
		t.Errorf("/readyz with the keys back: %d %v", status, body)
	}
	if status, _, body := get("/invoices/5105600101", "Authorization", "Bearer "+token); status != http.StatusOK {
		t.Errorf("a token with the keys back: %d %v", status, body)
	}
}
