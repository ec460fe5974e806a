package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// TestRunTakesOAuthTokens runs the gateway with -oauth-issuer against an
// issuer the test serves: the metadata is published, a token of the issuer
// reads, /mcp without credentials is told where to sign in.
func TestRunTakesOAuthTokens(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var issuer *httptest.Server
	issuer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuer.URL, "jwks_uri": issuer.URL + "/keys"})
		case "/keys":
			_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(issuer.Close)
	const public = "https://erpgate.example.com"
	base := startGateway(t, nil, "-public-url", public, "-oauth-issuer", issuer.URL, "-oauth-scope-claim", "scp",
		"-api-keys", "bot:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef:read")

	code, body := call(t, "GET", base+"/.well-known/oauth-protected-resource")
	if code != 200 || !strings.Contains(string(body), `"authorization_servers":["`+issuer.URL+`"]`) ||
		!strings.Contains(string(body), `"resource":"`+public+`"`) {
		t.Fatalf("metadata: %d %s", code, body)
	}

	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	payload, _ := json.Marshal(map[string]any{"iss": issuer.URL, "sub": "agent", "aud": public, "scp": []string{"read"},
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := jws.CompactSerialize()
	if code, body := call(t, "GET", base+"/invoices/5105600101", "Authorization: Bearer "+tok); code != 200 {
		t.Fatalf("get_invoice with a token: %d %s", code, body)
	}

	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 ||
		ch != `Bearer resource_metadata="`+public+`/.well-known/oauth-protected-resource"` {
		t.Errorf("/mcp without credentials: %d %q", resp.StatusCode, ch)
	}
}
