package api_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// oauthResource is the public URL of the gateway under test, its tokens'
// audience.
const oauthResource = "https://erpgate.example.com"

// testIssuer is an authorization server: OpenID Connect discovery and a
// JSON Web Key Set of one ECDSA key made for the test.
type testIssuer struct {
	srv       *httptest.Server
	key       *ecdsa.PrivateKey
	discovery atomic.Int64
	// keysDown makes the key set answer 503; keysHang, when set, makes
	// it wait until the channel is closed.
	keysDown atomic.Bool
	keysHang atomic.Pointer[chan struct{}]
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss := &testIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		iss.discovery.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/keys"})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		if hang := iss.keysHang.Load(); hang != nil {
			select {
			case <-*hang:
			case <-r.Context().Done():
				return
			}
		}
		if iss.keysDown.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}})
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// claims are a good access token's claims for client, with scope; edit
// them to spoil the token.
func (iss *testIssuer) claims(client, scope string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": iss.srv.URL, "sub": "user-" + client, "client_id": client, "aud": []string{oauthResource},
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(), "scope": scope}
}

// sign signs claims with key (the issuer's when nil).
func (iss *testIssuer) sign(t *testing.T, claims map[string]any, key *ecdsa.PrivateKey) string {
	t.Helper()
	if key == nil {
		key = iss.key
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
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

// oauthStack is the gateway with OAuth and API keys, over an ERP that
// records the Authorization headers it gets.
type oauthStack struct {
	*stack
	srv *api.Server
	mu  sync.Mutex
	// erpAuth are the Authorization headers that reached the ERP, and
	// erpCaller their X-Erpgate-Caller headers.
	erpAuth, erpCaller []string
}

const (
	oauthAPIKey  = "sk-live-oauth-side-key-77"
	oauthReadKey = "sk-live-oauth-side-reader-78"
)

func newOAuthStack(t *testing.T, iss *testIssuer) *oauthStack {
	t.Helper()
	o := &oauthStack{stack: &stack{t: t, metrics: api.NewMetrics(), sim: sim.New(sim.Options{})}}
	erpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.erpAuth = append(o.erpAuth, r.Header.Get("Authorization"))
		o.erpCaller = append(o.erpCaller, r.Header.Get("X-Erpgate-Caller"))
		o.mu.Unlock()
		o.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(erpSrv.Close)
	o.simURL = erpSrv.URL
	runner := retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond,
		MaxInterval: 20 * time.Millisecond}, o.metrics)
	client, err := sap.New(erpSrv.URL, sap.Options{Runner: runner, User: secERPUser, Password: secERPPassword})
	if err != nil {
		t.Fatal(err)
	}
	o.records = testRecords(t)
	o.srv, err = api.NewServer(api.Options{ERP: client, Records: o.records, Metrics: o.metrics,
		Credentials: []api.Credential{credential(t, "key-agent", oauthAPIKey, "read", "write"), credential(t, "key-reader", oauthReadKey, "read")},
		OAuth:       &api.OAuth{Issuer: iss.srv.URL, Resource: oauthResource}})
	if err != nil {
		t.Fatal(err)
	}
	o.gw = httptest.NewServer(o.srv)
	t.Cleanup(o.gw.Close)
	o.client = &http.Client{Transport: newContractTransport(t, o.gw.URL, o.simURL)}
	return o
}

const metadataURL = oauthResource + "/.well-known/oauth-protected-resource"

func TestOAuthProtectedResourceMetadata(t *testing.T) {
	iss := newTestIssuer(t)
	s := newOAuthStack(t, iss)
	r := s.do("GET", "/.well-known/oauth-protected-resource", nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("metadata: %d %v %s", r.status, r.header, r.body)
	}
	m := r.json(t)
	want := map[string]any{"resource": oauthResource, "authorization_servers": []any{iss.srv.URL},
		"scopes_supported":         []any{"read", "write", "post", "approve", "review", "audit"},
		"bearer_methods_supported": []any{"header"}}
	got, _ := json.Marshal(m)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("metadata %s, want %s", got, exp)
	}

	// Without OAuth the path is any unknown route.
	plain := newStack(t)
	got404 := plain.do("GET", "/.well-known/oauth-protected-resource", nil)
	wantError(t, got404, 404, "INVALID_REQUEST", "fix_input_and_retry")
	if unknown := plain.do("GET", "/no-such-route", nil); string(unknown.body) != string(got404.body) {
		t.Errorf("without OAuth the metadata is %s, want the 404 of an unknown route %s", got404.body, unknown.body)
	}
}

func TestOAuthTokens(t *testing.T) {
	iss := newTestIssuer(t)
	s := newOAuthStack(t, iss)
	bearer := func(tok string) string { return "Authorization: Bearer " + tok }
	writer := iss.sign(t, iss.claims("agent-app", "read write"), nil)

	t.Run("a good token reads and writes", func(t *testing.T) {
		if r := s.do("GET", "/invoices/5105600101", nil, bearer(writer)); r.status != 200 {
			t.Fatalf("get_invoice: %d %s", r.status, r.body)
		}
		r := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "waiting for goods"},
			bearer(writer), "Idempotency-Key: oauth-hold-1")
		if r.status != 200 {
			t.Fatalf("hold_invoice: %d %s", r.status, r.body)
		}
		auditor := iss.sign(t, iss.claims("auditor-app", "audit"), nil)
		audit := s.do("GET", "/audit", nil, bearer(auditor))
		if audit.status != 200 || !strings.Contains(string(audit.body), `"client":"oauth:agent-app"`) {
			t.Errorf("the audit log does not name the token's client: %d %s", audit.status, audit.body)
		}
	})

	t.Run("scp arrays and qualified scopes", func(t *testing.T) {
		c := iss.claims("copilot", "")
		delete(c, "scope")
		c["scp"] = []string{"api://erpgate/read"}
		if r := s.do("GET", "/invoices/5105600101", nil, bearer(iss.sign(t, c, nil))); r.status != 200 {
			t.Fatalf("scp read: %d %s", r.status, r.body)
		}
	})

	t.Run("a missing scope is SCOPE_MISSING", func(t *testing.T) {
		reader := iss.sign(t, iss.claims("reader-app", "read"), nil)
		d := wantError(t, s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "waiting for goods"},
			bearer(reader), "Idempotency-Key: oauth-hold-2"), 409, "SCOPE_MISSING", "route_to_person")
		if d["scope"] != "write" {
			t.Errorf("details %v, want scope write", d)
		}
	})

	refused := func(t *testing.T, r result, reason string) {
		t.Helper()
		d := wantError(t, r, 401, "UNAUTHENTICATED", "stop_and_escalate")
		if reason != "" && d["reason"] != reason {
			t.Errorf("details %v, want reason %s", d, reason)
		}
		ch := r.header.Get("WWW-Authenticate")
		if !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, `resource_metadata="`+metadataURL+`"`) {
			t.Errorf("WWW-Authenticate %q, want the resource metadata", ch)
		}
		if reason != "" && !strings.Contains(ch, `error="invalid_token"`) {
			t.Errorf("WWW-Authenticate %q, want invalid_token", ch)
		}
	}

	t.Run("refused tokens", func(t *testing.T) {
		wrongAud := iss.claims("agent-app", "read")
		wrongAud["aud"] = "https://other.example.com"
		expired := iss.claims("agent-app", "read")
		expired["exp"] = time.Now().Add(-10 * time.Minute).Unix()
		early := iss.claims("agent-app", "read")
		early["nbf"] = time.Now().Add(10 * time.Minute).Unix()
		otherIssuer := iss.claims("agent-app", "read")
		otherIssuer["iss"] = "https://evil.example.com"
		stranger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		for _, tc := range []struct {
			name, token, reason string
		}{
			{"wrong audience", iss.sign(t, wrongAud, nil), "audience"},
			{"expired", iss.sign(t, expired, nil), "expired"},
			{"not yet valid", iss.sign(t, early, nil), "not_yet_valid"},
			{"other issuer", iss.sign(t, otherIssuer, nil), "invalid"},
			{"other key", iss.sign(t, iss.claims("agent-app", "read"), stranger), "invalid"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				refused(t, s.do("GET", "/invoices/5105600101", nil, bearer(tc.token)), tc.reason)
			})
		}
	})

	t.Run("no token is 401 with the resource metadata", func(t *testing.T) {
		r := s.do("GET", "/invoices/5105600101", nil)
		refused(t, r, "")
		if ch := r.header.Get("WWW-Authenticate"); strings.Contains(ch, "error=") {
			t.Errorf("WWW-Authenticate %q names an error for a call without credentials", ch)
		}
		refused(t, s.do("GET", "/invoices/5105600101", nil, "Authorization: Bearer not-a-key"), "")
	})

	t.Run("API keys still work", func(t *testing.T) {
		for _, h := range []string{"Authorization: Bearer " + oauthAPIKey, "X-API-Key: " + oauthAPIKey} {
			if r := s.do("GET", "/invoices/5105600101", nil, h); r.status != 200 {
				t.Errorf("%s: %d %s", h, r.status, r.body)
			}
		}
	})

	t.Run("tokens never reach the ERP", func(t *testing.T) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.erpAuth) == 0 {
			t.Fatal("the ERP got no request")
		}
		for i, auth := range s.erpAuth {
			if strings.Contains(auth, "Bearer") || strings.Contains(auth, writer) || strings.Contains(auth, oauthAPIKey) {
				t.Errorf("ERP request %d carried Authorization %q, want the gateway's own", i, auth)
			}
		}
	})

	if n := iss.discovery.Load(); n != 1 {
		t.Errorf("discovery read %d times, want once", n)
	}
}

func TestOAuthGuardsMCP(t *testing.T) {
	iss := newTestIssuer(t)
	s := newOAuthStack(t, iss)
	s.srv.MountMCP(s.srv.RequireCredentials(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "mcp")
	})))
	post := func(auth string) *http.Response {
		req, _ := http.NewRequest("POST", s.gw.URL+"/mcp", strings.NewReader(`{}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post("")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+metadataURL+`"`) {
		t.Fatalf("/mcp without a token: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	checkFiveFields(t, "POST /mcp", resp, body)
	for _, auth := range []string{"Bearer " + iss.sign(t, iss.claims("agent-app", "read"), nil), "Bearer " + oauthAPIKey} {
		if resp := post(auth); resp.StatusCode != 200 {
			t.Errorf("/mcp with %.20s…: %d", auth, resp.StatusCode)
		}
	}
}

// TestOAuthInsufficientScopeOnMCP: a tools/call with an access token that
// lacks the tool's scope is refused before the call runs, HTTP 403 with
// the insufficient_scope challenge of the MCP authorization spec and the
// five-field SCOPE_MISSING; a call the token's scopes allow, tools/list,
// and every call with an API key (which cannot be stepped up, and gets
// SCOPE_MISSING as a tool result) reach the tools, the body intact.
func TestOAuthInsufficientScopeOnMCP(t *testing.T) {
	iss := newTestIssuer(t)
	s := newOAuthStack(t, iss)
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := mcp.New(s.srv, doc, mcp.Options{Allowed: s.srv.Allows})
	if err != nil {
		t.Fatal(err)
	}
	s.srv.MountMCP(s.srv.RequireCredentials(m.Handler()))
	rpc := func(auth, method, params string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.gw.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	reader := "Bearer " + iss.sign(t, iss.claims("agent-app", "read"), nil)
	approval := `{"name":"request_approval","arguments":{"invoice_id":"5105600101","proposed_action":"post_as_invoiced","justification":"Three-way match MATCHED on every line."}}`

	resp, body := rpc(reader, "tools/call", approval)
	if resp.StatusCode != 403 {
		t.Fatalf("tools/call of a write with a read token: %d %s", resp.StatusCode, body)
	}
	want := `Bearer error="insufficient_scope", scope="read write", resource_metadata="` + metadataURL + `"`
	if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, want) {
		t.Errorf("WWW-Authenticate %q, want it to start %q", got, want)
	}
	checkFiveFields(t, "POST /mcp", resp, body)
	var e struct {
		Code    string            `json:"code"`
		Details map[string]string `json:"details"`
	}
	if json.Unmarshal(body, &e) != nil || e.Code != "SCOPE_MISSING" || e.Details["scope"] != "write" || e.Details["operation"] != "request_approval" {
		t.Errorf("body %s, want SCOPE_MISSING naming write and request_approval", body)
	}

	// Allowed calls and other methods reach the tools with their body.
	for _, c := range []struct{ auth, method, params, want string }{
		{reader, "tools/call", `{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}`, `5105600101`},
		{reader, "tools/list", `{}`, `"get_invoice"`},
		{reader, "tools/call", `{"name":"no_such_tool","arguments":{}}`, `"error"`},
		{"Bearer " + oauthAPIKey, "tools/call", approval, `"approval_id`},
		{"Bearer " + oauthReadKey, "tools/call", approval, `SCOPE_MISSING`},
	} {
		resp, body := rpc(c.auth, c.method, c.params)
		if resp.StatusCode != 200 || !strings.Contains(string(body), c.want) {
			t.Errorf("%s %s with %.12s…: %d %s, want 200 with %s", c.method, c.params, c.auth, resp.StatusCode, body, c.want)
		}
	}
}
