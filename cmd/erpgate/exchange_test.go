package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/erpgate/erpgate/erp/sim"
)

// exchangeWorld is an identity provider that issues the agents' access
// tokens and exchanges them (RFC 8693) for tokens of the ERP, and an ERP
// that takes only the tokens it exchanged or gave the gateway itself.
type exchangeWorld struct {
	t      *testing.T
	key    *ecdsa.PrivateKey
	idp    *httptest.Server
	erp    *httptest.Server
	public string

	mu       sync.Mutex
	forms    []url.Values // token requests
	revoked  map[string]bool
	erpSeen  []string // every ERP request: method, URL, headers and body
	erpAuths []string
}

func newExchangeWorld(t *testing.T) *exchangeWorld {
	w := &exchangeWorld{t: t, revoked: map[string]bool{}, public: "https://erpgate.example.com"}
	var err error
	if w.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	w.idp = httptest.NewServer(http.HandlerFunc(w.serveIdP))
	t.Cleanup(w.idp.Close)
	simulator := sim.New(sim.Options{})
	w.erp = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.erpSeen = append(w.erpSeen, fmt.Sprint(r.Method, " ", r.URL, " ", r.Header, " ", string(body)))
		auth := r.Header.Get("Authorization")
		w.erpAuths = append(w.erpAuths, auth)
		w.mu.Unlock()
		if !strings.HasPrefix(auth, "Bearer sap-") && !strings.HasPrefix(auth, "Bearer own-") {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		simulator.ServeHTTP(rw, r)
	}))
	t.Cleanup(w.erp.Close)
	return w
}

func (w *exchangeWorld) serveIdP(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		_ = json.NewEncoder(rw).Encode(map[string]any{"issuer": w.idp.URL, "jwks_uri": w.idp.URL + "/keys"})
		return
	case "/keys":
		_ = json.NewEncoder(rw).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &w.key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
		return
	case "/token":
	default:
		http.NotFound(rw, r)
		return
	}
	_ = r.ParseForm()
	w.mu.Lock()
	w.forms = append(w.forms, r.PostForm)
	n := len(w.forms)
	revoked := w.revoked[r.PostForm.Get("subject_token")]
	w.mu.Unlock()
	if id, secret, _ := r.BasicAuth(); id != "erpgate" || secret != "idp-s3cret" {
		rw.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(rw, `{"error":"invalid_client"}`)
		return
	}
	f := r.PostForm
	switch f.Get("grant_type") {
	case "client_credentials":
		fmt.Fprintf(rw, `{"access_token":"own-%d","token_type":"Bearer","expires_in":3600}`, n)
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		if revoked {
			rw.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(rw, `{"error":"invalid_grant","error_description":"subject token revoked"}`)
			return
		}
		fmt.Fprintf(rw, `{"access_token":"sap-%d","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":600}`, n)
	default:
		rw.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(rw, `{"error":"unsupported_grant_type"}`)
	}
}

// token is an access token of the identity provider for the gateway, of
// the agent sub.
func (w *exchangeWorld) token(sub string) string {
	w.t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: w.key, KeyID: "k"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		w.t.Fatal(err)
	}
	now := time.Now()
	payload, _ := json.Marshal(map[string]any{"iss": w.idp.URL, "sub": sub, "client_id": "ap-agent", "aud": w.public,
		"scp": []string{"read", "write"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	jws, err := signer.Sign(payload)
	if err != nil {
		w.t.Fatal(err)
	}
	tok, _ := jws.CompactSerialize()
	return tok
}

func (w *exchangeWorld) exchanges() []url.Values {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []url.Values
	for _, f := range w.forms {
		if f.Get("grant_type") != "client_credentials" {
			out = append(out, f)
		}
	}
	return out
}

func (w *exchangeWorld) erpRequests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.erpSeen)
}

// errorBody reads a five-field error body.
func errorBody(t *testing.T, body []byte) (code string, details map[string]any) {
	t.Helper()
	var e struct {
		Code       string         `json:"code"`
		Message    string         `json:"message"`
		Retryable  *bool          `json:"retryable"`
		NextAction string         `json:"next_action"`
		Details    map[string]any `json:"details"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Message == "" || e.Retryable == nil || e.NextAction == "" {
		t.Fatalf("not a five-field error: %s", body)
	}
	return e.Code, e.Details
}

// TestRunExchangesTheCallersTokenPerTool runs the gateway with -erp-auth
// token-exchange between an identity provider and an ERP: each agent's
// call reaches the ERP with a token exchanged for the tool it calls, never
// with the agent's own; a token the identity provider refuses, and a
// caller known by an API key, are the agent's five-field UNAUTHENTICATED
// with no ERP request.
func TestRunExchangesTheCallersTokenPerTool(t *testing.T) {
	w := newExchangeWorld(t)
	const botKey = "sk-bot-0001"
	sum := sha256.Sum256([]byte(botKey))
	base, logs := startGatewayLogged(t, map[string]string{"ERPGATE_ERP_CLIENT_SECRET": "idp-s3cret"},
		"-public-url", w.public, "-oauth-issuer", w.idp.URL, "-oauth-scope-claim", "scp",
		"-api-keys", "bot:"+hex.EncodeToString(sum[:])+":read",
		"-erp-url", w.erp.URL, "-erp-auth", "token-exchange", "-erp-token-url", w.idp.URL+"/token", "-erp-client-id", "erpgate",
		"-erp-exchange-audience", "s4-prod", "-erp-exchange-scope", "s4:{operation}", "-erp-scopes", "s4:gateway")
	startup := w.erpRequests()
	alice, revoked := w.token("alice"), w.token("mallory")
	w.mu.Lock()
	w.revoked[revoked] = true
	w.mu.Unlock()

	for i, path := range []string{"/invoices/5105600101", "/invoices/5105600101", "/purchase-orders/4500018822"} {
		if code, body := call(t, "GET", base+path, "Authorization: Bearer "+alice); code != 200 {
			t.Fatalf("call %d %s: %d %s", i+1, path, code, body)
		}
	}
	ex := w.exchanges()
	if len(ex) != 2 {
		t.Fatalf("%d exchanges, want 2 (get_invoice's token kept for its second call, get_purchase_order's own): %v", len(ex), ex)
	}
	for i, scope := range []string{"s4:get_invoice", "s4:get_purchase_order"} {
		f := ex[i]
		if f.Get("subject_token") != alice || f.Get("audience") != "s4-prod" || f.Get("scope") != scope ||
			f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token" ||
			f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token" {
			t.Errorf("exchange %d: %v, want alice's token for %s", i+1, f, scope)
		}
	}
	// A tool call on /mcp takes the same pipeline: its own tool's scope.
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_supplier","arguments":{"supplier_id":"100042"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mcpBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(mcpBody), `"isError":true`) || !strings.Contains(string(mcpBody), "100042") {
		t.Fatalf("tools/call get_supplier: %d %s", resp.StatusCode, mcpBody)
	}
	if ex = w.exchanges(); len(ex) != 3 || ex[2].Get("scope") != "s4:get_supplier" || ex[2].Get("subject_token") != alice {
		t.Errorf("the MCP tool call's exchange: %v, want alice's token for s4:get_supplier", ex[len(ex)-1])
	}
	served := w.erpRequests()
	if served == startup {
		t.Fatal("the ERP got no request for the calls")
	}
	w.mu.Lock()
	for i, auth := range w.erpAuths[startup:] {
		if !strings.HasPrefix(auth, "Bearer sap-") {
			t.Errorf("ERP request %d carried %q, want an exchanged token", startup+i+1, auth)
		}
	}
	for i, auth := range w.erpAuths[:startup] {
		if !strings.HasPrefix(auth, "Bearer own-") {
			t.Errorf("start-up ERP request %d carried %q, want the gateway's own token", i+1, auth)
		}
	}
	w.mu.Unlock()

	// A token the identity provider refuses: the agent's to replace.
	code, body := call(t, "GET", base+"/invoices/5105600101", "Authorization: Bearer "+revoked)
	if got, d := errorBody(t, body); code != 401 || got != "UNAUTHENTICATED" || d["reason"] != "exchange_refused" {
		t.Errorf("a refused token: %d %s", code, body)
	}
	// An API key reaches no ERP: nothing is sent as a technical user.
	code, body = call(t, "GET", base+"/invoices/5105600101", "X-API-Key: "+botKey)
	if got, d := errorBody(t, body); code != 401 || got != "UNAUTHENTICATED" || d["reason"] != "access_token_required" {
		t.Errorf("an API key: %d %s", code, body)
	}
	if n := w.erpRequests(); n != served {
		t.Errorf("the refused calls made %d ERP requests", n-served)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	for i, seen := range w.erpSeen {
		for _, secret := range []string{alice, revoked, botKey, "idp-s3cret"} {
			if strings.Contains(seen, secret) {
				t.Errorf("ERP request %d carries a caller's credential or the gateway's secret: %s", i+1, seen)
			}
		}
	}
	for _, secret := range []string{alice, revoked, "idp-s3cret", "sap-"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log shows a token or a secret (%.12s…)", secret)
		}
	}
}

// TestConfigTokenExchange: -erp-auth token-exchange needs the callers'
// tokens (-oauth-issuer), its endpoint, client and audience, and a scope
// naming {operation}.
func TestConfigTokenExchange(t *testing.T) {
	env := map[string]string{"ERPGATE_ERP_CLIENT_SECRET": "s3cret"}
	good := []string{"-erp-auth", "token-exchange", "-oauth-issuer", "https://idp.example.com", "-erp-token-url", "https://idp.example.com/token",
		"-erp-client-id", "erpgate", "-erp-exchange-audience", "s4", "-erp-scopes", "s4:gateway"}
	c, err := parseEnv(env, good...)
	if err != nil || c.erpExchange == nil || c.erpExchange.Scope != "{operation}" || c.erpExchange.Audience != "s4" ||
		c.erpExchange.SubjectTokenType != "urn:ietf:params:oauth:token-type:access_token" || fmt.Sprint(c.erpExchange.OwnScopes) != "[s4:gateway]" {
		t.Fatalf("token-exchange: %+v, %v", c.erpExchange, err)
	}
	c, err = parseEnv(env, append(good, "-erp-exchange-subject-type", "jwt", "-erp-exchange-scope", "api://s4/{operation} {service}")...)
	if err != nil || c.erpExchange.SubjectTokenType != "urn:ietf:params:oauth:token-type:jwt" || c.erpExchange.Scope != "api://s4/{operation} {service}" {
		t.Fatalf("token-exchange with jwt: %+v, %v", c.erpExchange, err)
	}
	if c.erpExchange.KeyCallersAsGateway {
		t.Fatal("API key callers go through as the gateway without being told to")
	}
	c, err = parseEnv(env, append(good, "-erp-exchange-key-callers", "gateway")...)
	if err != nil || !c.erpExchange.KeyCallersAsGateway {
		t.Fatalf("token-exchange with -erp-exchange-key-callers gateway: %+v, %v", c.erpExchange, err)
	}
	without := func(name string) []string {
		var out []string
		for i := 0; i < len(good); i += 2 {
			if good[i] != name {
				out = append(out, good[i], good[i+1])
			}
		}
		return out
	}
	bad := []refusedSettings{
		{"no -oauth-issuer", env, without("-oauth-issuer"), []string{"-erp-auth", "-oauth-issuer"}},
		{"no audience", env, without("-erp-exchange-audience"), []string{"-erp-exchange-audience"}},
		{"no endpoint or client", env, []string{"-erp-auth", "token-exchange", "-oauth-issuer", "https://idp.example.com",
			"-erp-exchange-audience", "s4"}, []string{"-erp-token-url", "-erp-client-id"}},
		{"no secret", nil, good, []string{"-erp-client-secret"}},
		{"a scope without {operation}", env, append(good, "-erp-exchange-scope", "s4.read"), []string{"-erp-exchange-scope", "{operation}"}},
		{"an unknown placeholder", env, append(good, "-erp-exchange-scope", "{operation} {tenant}"), []string{"-erp-exchange-scope"}},
		{"an unknown subject type", env, append(good, "-erp-exchange-subject-type", "id_token"), []string{"-erp-exchange-subject-type"}},
		{"an audience with oauth2", env, []string{"-erp-auth", "oauth2", "-erp-token-url", "https://idp.example.com/token",
			"-erp-client-id", "c", "-erp-exchange-audience", "s4"}, []string{"-erp-exchange-audience"}},
		{"a user with token-exchange", env, append(good, "-erp-user", "u"), []string{"-erp-user"}},
		{"key callers as the gateway with oauth2", env, []string{"-erp-auth", "oauth2", "-erp-token-url", "https://idp.example.com/token",
			"-erp-client-id", "c", "-erp-exchange-key-callers", "gateway"}, []string{"-erp-exchange-key-callers"}},
	}
	checkRefused(t, bad)
}
