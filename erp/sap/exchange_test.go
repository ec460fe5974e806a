package sap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// exchangeIdP is the customer's identity provider: its token endpoint
// exchanges a caller's token (RFC 8693) for one of the ERP named after the
// caller and the scope, and gives the gateway's own client a token by the
// client credentials grant.
type exchangeIdP struct {
	srv *httptest.Server

	mu    sync.Mutex
	forms []url.Values
	// refused are subject tokens answered invalid_grant, echoing the token
	// in the description as some servers do.
	refused map[string]bool
	// status, when set, is the answer to every request (with answer).
	status int
	answer string
	// delay holds each answer back, so that concurrent calls overlap.
	delay time.Duration
}

const (
	exchangeClient   = "erpgate-exchange"
	exchangeSecret   = "exchange-s3cret"
	exchangeAudience = "https://s4.example.com/sap"
)

func newExchangeIdP(t testing.TB) *exchangeIdP {
	idp := &exchangeIdP{refused: map[string]bool{}}
	idp.srv = httptest.NewServer(http.HandlerFunc(idp.serve))
	t.Cleanup(idp.srv.Close)
	return idp
}

func (idp *exchangeIdP) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	idp.mu.Lock()
	idp.forms = append(idp.forms, r.PostForm)
	n := len(idp.forms)
	status, answer, delay, refused := idp.status, idp.answer, idp.delay, idp.refused[r.PostForm.Get("subject_token")]
	idp.mu.Unlock()
	time.Sleep(delay)
	if id, secret, ok := r.BasicAuth(); !ok || id != exchangeClient || secret != exchangeSecret {
		writeJSON(w, http.StatusUnauthorized, `{"error":"invalid_client"}`)
		return
	}
	if status != 0 {
		writeJSON(w, status, answer)
		return
	}
	f := r.PostForm
	switch f.Get("grant_type") {
	case "client_credentials":
		writeJSON(w, http.StatusOK, fmt.Sprintf(`{"access_token":"own-%d","token_type":"Bearer","expires_in":3600}`, n))
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		if refused {
			writeJSON(w, http.StatusBadRequest, `{"error":"invalid_grant","error_description":"subject token `+
				f.Get("subject_token")+` is expired"}`)
			return
		}
		writeJSON(w, http.StatusOK, fmt.Sprintf(`{"access_token":"x-%d-%s","issued_token_type":"%s","token_type":"Bearer","expires_in":3600}`,
			n, f.Get("scope"), TokenTypeAccessToken))
	default:
		writeJSON(w, http.StatusBadRequest, `{"error":"unsupported_grant_type"}`)
	}
}

func (idp *exchangeIdP) requests() []url.Values {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return append([]url.Values(nil), idp.forms...)
}

func (idp *exchangeIdP) config() *TokenExchange {
	return &TokenExchange{TokenURL: idp.srv.URL + "/oauth2/token", ClientID: exchangeClient, ClientSecret: exchangeSecret,
		Audience: exchangeAudience, Scope: "sap:{operation}", OwnScopes: []string{"sap:gateway"}}
}

// callerJWT is an agent's access token in JWT form, expiring at exp; sig
// tells two apart.
func callerJWT(sig string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"sub": "alice", "client_id": "ap-agent", "exp": exp.Unix()})
	return enc([]byte(`{"alg":"ES256","typ":"at+jwt"}`)) + "." + enc(claims) + "." + enc([]byte(sig))
}

// agentCall is the context of an agent's call of operation with token.
func agentCall(token, operation string) context.Context {
	ctx := erp.WithCaller(context.Background(), erp.Caller{Name: "ap-agent", Client: "ap-agent", Subject: "alice"})
	return erp.WithSubjectToken(ctx, erp.SubjectToken{Token: token, Operation: operation})
}

// checkNoSubjectToken fails when any request the ERP got carries token.
func checkNoSubjectToken(t *testing.T, f *fakeSAP, tokens ...string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range f.requests {
		all := fmt.Sprint(s.path, s.query, s.header, s.body)
		for _, tok := range tokens {
			if strings.Contains(all, tok) {
				t.Errorf("ERP request %d carries the caller's token: %s", i+1, all)
			}
		}
	}
}

func TestTokenExchangeNarrowsTheCallersTokenPerTool(t *testing.T) {
	idp := newExchangeIdP(t)
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{TokenExchange: idp.config()})
	alice := callerJWT("alice", time.Now().Add(time.Hour))
	bob := callerJWT("bob", time.Now().Add(time.Hour))

	calls := []context.Context{
		agentCall(alice, "get_invoice"), agentCall(alice, "get_invoice"), // one exchange, kept
		agentCall(alice, "post_invoice"), // another tool: another exchange
		agentCall(bob, "get_invoice"),    // another caller: another exchange
	}
	for i, ctx := range calls {
		if err := pingFor(ctx, c); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	forms := idp.requests()
	if len(forms) != 3 {
		t.Fatalf("%d exchanges, want 3 (alice's get_invoice token kept): %v", len(forms), forms)
	}
	wantScopes := []string{"sap:get_invoice", "sap:post_invoice", "sap:get_invoice"}
	wantSubjects := []string{alice, alice, bob}
	for i, f := range forms {
		want := map[string]string{
			"grant_type":           "urn:ietf:params:oauth:grant-type:token-exchange",
			"subject_token":        wantSubjects[i],
			"subject_token_type":   "urn:ietf:params:oauth:token-type:access_token",
			"requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
			"audience":             exchangeAudience,
			"scope":                wantScopes[i],
		}
		for k, v := range want {
			if got := f.Get(k); got != v {
				t.Errorf("exchange %d: %s = %q, want %q", i+1, k, got, v)
			}
		}
	}
	var auths []string
	for _, s := range f.odata() {
		auths = append(auths, s.header.Get("Authorization"))
	}
	want := []string{"Bearer x-1-sap:get_invoice", "Bearer x-1-sap:get_invoice", "Bearer x-2-sap:post_invoice", "Bearer x-3-sap:get_invoice"}
	if fmt.Sprint(auths) != fmt.Sprint(want) {
		t.Errorf("the ERP saw %q, want %q", auths, want)
	}
	checkNoSubjectToken(t, f, alice, bob)
}

// TestTokenExchangeScopeTemplate: {service} is the SAP OData service the
// request goes to.
func TestTokenExchangeScopeTemplate(t *testing.T) {
	idp := newExchangeIdP(t)
	cfg := idp.config()
	cfg.Scope = "api://s4/{operation} {service}.read"
	cfg.SubjectTokenType = TokenTypeJWT
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{TokenExchange: cfg})
	if err := pingFor(agentCall(callerJWT("a", time.Now().Add(time.Hour)), "get_supplier"), c); err != nil {
		t.Fatal(err)
	}
	forms := idp.requests()
	if len(forms) != 1 || forms[0].Get("scope") != "api://s4/get_supplier API_BUSINESS_PARTNER.read" ||
		forms[0].Get("subject_token_type") != TokenTypeJWT {
		t.Errorf("exchange %v", forms)
	}
}

func TestTokenExchangeOneRequestForConcurrentCalls(t *testing.T) {
	idp := newExchangeIdP(t)
	idp.delay = 50 * time.Millisecond
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{TokenExchange: idp.config()})
	tok := callerJWT("alice", time.Now().Add(time.Hour))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- pingFor(agentCall(tok, "run_three_way_match"), c) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(idp.requests()); n != 1 {
		t.Errorf("%d exchanges for 16 concurrent calls of one caller and tool, want 1", n)
	}
	if n := len(f.odata()); n != 16 {
		t.Errorf("the ERP got %d requests, want 16", n)
	}
}

// TestTokenExchangeKeptNoLongerThanTheCallersToken: the exchanged token
// is fetched anew shortly before the caller's own token expires, even when
// the identity provider gives it a longer life.
func TestTokenExchangeKeptNoLongerThanTheCallersToken(t *testing.T) {
	idp := newExchangeIdP(t)
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{TokenExchange: idp.config()})
	now := time.Now()
	var mu sync.Mutex
	c.exchange.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	tok := callerJWT("alice", now.Add(10*time.Minute))
	for i, step := range []time.Duration{0, 8 * time.Minute, 90 * time.Second} {
		advance(step)
		if err := pingFor(agentCall(tok, "get_invoice"), c); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	// The third call, 30 s before the caller's token expires, is within
	// the margin: a new exchange.
	if n := len(idp.requests()); n != 2 {
		t.Errorf("%d exchanges, want 2 (kept at 8 min, renewed at 9.5 min of a 10 min token)", n)
	}
}

func TestTokenExchangeRefusedSubjectTokenIsTheCallers(t *testing.T) {
	idp := newExchangeIdP(t)
	tok := callerJWT("revoked", time.Now().Add(time.Hour))
	idp.refused[tok] = true
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{TokenExchange: idp.config(), Runner: retry.New(retry.Policy{AttemptTimeout: 2 * time.Second,
		MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }}, nil)})
	err := pingFor(agentCall(tok, "get_invoice"), c)
	var cred *erp.CallerCredentialError
	if !errors.As(err, &cred) || cred.Reason != erp.CredentialExchangeRefused {
		t.Fatalf("got %v, want the caller's credentials refused", err)
	}
	e := errmap.Map(err)
	if e.Code != errmap.Unauthenticated || e.Status != http.StatusUnauthorized || e.Retryable || e.Details["reason"] != "exchange_refused" ||
		e.HeadEnd() > errmap.HeadLimit {
		t.Errorf("named %s %d retryable=%v %v", e.Code, e.Status, e.Retryable, e.Details)
	}
	if strings.Contains(err.Error(), tok) || strings.Contains(e.Message, tok) {
		t.Errorf("the error shows the caller's token: %v", err)
	}
	if n := len(f.requests); n != 0 {
		t.Errorf("the ERP got %d requests", n)
	}
	if n := len(idp.requests()); n != 1 {
		t.Errorf("%d exchanges, want 1 (no retry of a refused token)", n)
	}
}

func TestTokenExchangeFailures(t *testing.T) {
	tok := callerJWT("alice", time.Now().Add(time.Hour))
	tests := []struct {
		name      string
		status    int
		answer    string
		secret    string
		down      bool
		code      errmap.Code
		retryable bool
	}{
		{name: "endpoint answers 503", status: 503, answer: `{"error":"temporarily_unavailable"}`, code: errmap.ERPUnavailable, retryable: true},
		{name: "endpoint down", down: true, code: errmap.ERPUnavailable, retryable: true},
		{name: "gateway's client refused", secret: "wrong", code: errmap.ERPConfiguration},
		{name: "audience refused", status: 400, answer: `{"error":"invalid_target"}`, code: errmap.ERPConfiguration},
		{name: "scope refused", status: 400, answer: `{"error":"invalid_scope"}`, code: errmap.ScopeMissing},
		{name: "client may not exchange", status: 400, answer: `{"error":"unauthorized_client"}`, code: errmap.ERPConfiguration},
		{name: "no access token", status: 200, answer: `{"issued_token_type":"` + TokenTypeAccessToken + `","token_type":"Bearer"}`,
			code: errmap.ERPConfiguration},
		{name: "no issued_token_type", status: 200, answer: `{"access_token":"x","token_type":"Bearer","expires_in":60}`,
			code: errmap.ERPConfiguration},
		{name: "a SAML assertion issued", status: 200, answer: `{"access_token":"x","issued_token_type":"urn:ietf:params:oauth:token-type:saml2","token_type":"N_A"}`,
			code: errmap.ERPConfiguration},
		{name: "token_type not Bearer", status: 200, answer: `{"access_token":"x","issued_token_type":"` + TokenTypeAccessToken + `","token_type":"DPoP"}`,
			code: errmap.ERPConfiguration},
		{name: "expires_in not positive", status: 200, answer: `{"access_token":"x","issued_token_type":"` + TokenTypeAccessToken + `","token_type":"Bearer","expires_in":0}`,
			code: errmap.ERPConfiguration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idp := newExchangeIdP(t)
			idp.status, idp.answer = tt.status, tt.answer
			cfg := idp.config()
			if tt.secret != "" {
				cfg.ClientSecret = tt.secret
			}
			if tt.down {
				idp.srv.Close()
			}
			f := newFake(t, respond(http.StatusOK, okJSON))
			c := f.client(Options{TokenExchange: cfg, Runner: retry.New(retry.Policy{AttemptTimeout: 2 * time.Second,
				MaxAttempts: 2, Sleep: func(context.Context, time.Duration) error { return nil }}, nil)})
			err := pingFor(agentCall(tok, "get_invoice"), c)
			e := errmap.Map(err)
			if e.Code != tt.code || e.Retryable != tt.retryable {
				t.Errorf("named %s retryable=%v, want %s retryable=%v (%v)", e.Code, e.Retryable, tt.code, tt.retryable, err)
			}
			if err != nil && strings.Contains(err.Error(), tok) {
				t.Errorf("the error shows the caller's token: %v", err)
			}
			if n := len(f.requests); n != 0 {
				t.Errorf("the ERP got %d requests", n)
			}
			if tt.code == errmap.ScopeMissing && (e.NextAction != errmap.RouteToPerson || e.Details["operation"] != "get_invoice" ||
				e.Details["scope"] != "sap:get_invoice" || e.Details["reason"] != erp.CredentialScopeRefused ||
				e.HeadEnd() > errmap.HeadLimit || !strings.HasSuffix(e.Message, "A person must grant it.")) {
				t.Errorf("the refused scope: %s %v", e.NextAction, e.Details)
			}
		})
	}
}

// TestTokenExchangeWithoutACallersToken: a caller known by an API key is
// refused before anything is sent anywhere; a call of the gateway's own
// goes with the gateway's client credentials token.
func TestTokenExchangeWithoutACallersToken(t *testing.T) {
	idp := newExchangeIdP(t)
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{TokenExchange: idp.config()})

	keyCaller := erp.WithCaller(context.Background(), erp.Caller{Name: "ap-bot"})
	err := pingFor(keyCaller, c)
	var cred *erp.CallerCredentialError
	if !errors.As(err, &cred) || cred.Reason != erp.CredentialTokenRequired {
		t.Fatalf("API key caller: %v, want refused", err)
	}
	if e := errmap.Map(err); e.Code != errmap.Unauthenticated || e.Details["reason"] != "access_token_required" || e.HeadEnd() > errmap.HeadLimit {
		t.Errorf("API key caller named %s %v", e.Code, e.Details)
	}
	if len(f.requests) != 0 || len(idp.requests()) != 0 {
		t.Fatalf("API key caller: %d ERP and %d token requests, want none", len(f.requests), len(idp.requests()))
	}

	if err := pingFor(context.Background(), c); err != nil {
		t.Fatalf("the gateway's own call: %v", err)
	}
	forms := idp.requests()
	if len(forms) != 1 || forms[0].Get("grant_type") != "client_credentials" || forms[0].Get("scope") != "sap:gateway" ||
		forms[0].Get("subject_token") != "" {
		t.Errorf("the gateway's own token request: %v", forms)
	}
	if got := f.odata()[0].header.Get("Authorization"); got != "Bearer own-1" {
		t.Errorf("the gateway's own call carried %q", got)
	}
}

// TestTokenExchangeKeyCallersAsGateway: with the operator's consent, a
// caller known by an API key reaches the ERP with the gateway's own token,
// named only in X-Erpgate-Caller; nothing is exchanged for it.
func TestTokenExchangeKeyCallersAsGateway(t *testing.T) {
	idp := newExchangeIdP(t)
	f := newFake(t, respond(http.StatusOK, okJSON))
	cfg := idp.config()
	cfg.KeyCallersAsGateway = true
	c := f.client(Options{TokenExchange: cfg})

	keyCaller := erp.WithCaller(context.Background(), erp.Caller{Name: "m.keller"})
	if err := pingFor(keyCaller, c); err != nil {
		t.Fatalf("API key caller: %v", err)
	}
	forms := idp.requests()
	if len(forms) != 1 || forms[0].Get("grant_type") != "client_credentials" || forms[0].Get("subject_token") != "" {
		t.Fatalf("token requests for an API key caller: %v, want the gateway's own client credentials only", forms)
	}
	calls := f.odata()
	if len(calls) != 1 || calls[0].header.Get("Authorization") != "Bearer own-1" {
		t.Fatalf("the ERP got %d requests, the first with %q, want one with the gateway's own token", len(calls), calls[0].header.Get("Authorization"))
	}
	if got := calls[0].header.Get("X-Erpgate-Caller"); !strings.Contains(got, "m.keller") {
		t.Errorf("X-Erpgate-Caller %q does not name the caller", got)
	}
}

// TestTokenExchangeSessionPerCaller: SAP binds a CSRF token to the session
// of the user who fetched it; two callers posting keep one each.
func TestTokenExchangeSessionPerCaller(t *testing.T) {
	idp := newExchangeIdP(t)
	f := newFake(t, postingSAP("5", ""))
	c := f.client(Options{TokenExchange: idp.config()})
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	alice := agentCall(callerJWT("alice", time.Now().Add(time.Hour)), "post_invoice")
	bob := agentCall(callerJWT("bob", time.Now().Add(time.Hour)), "post_invoice")
	for i, ctx := range []context.Context{alice, bob, alice} {
		if _, err := c.PostInvoice(ctx, inv, ""); err != nil {
			t.Fatalf("post %d: %v", i+1, err)
		}
	}
	if n := f.fetchCount(); n != 2 {
		t.Errorf("%d CSRF token fetches, want one per caller (2)", n)
	}
}

func TestTokenExchangeOptions(t *testing.T) {
	good := TokenExchange{TokenURL: "https://idp.example.com/token", ClientID: "c", Audience: "a"}
	if _, err := New("https://s4.example.com", Options{TokenExchange: &good}); err != nil {
		t.Fatal(err)
	}
	for name, scope := range map[string]string{
		"no {operation}":        "sap.read",
		"unknown placeholder":   "{operation} {tenant}",
		"a quote":               `{operation} "x"`,
		"a non-ASCII character": "{operation} s\u00e4p",
	} {
		x := good
		x.Scope = scope
		if _, err := New("https://s4.example.com", Options{TokenExchange: &x}); err == nil {
			t.Errorf("%s: scope %q accepted", name, scope)
		}
	}
	noAudience := good
	noAudience.Audience = ""
	if _, err := New("https://s4.example.com", Options{TokenExchange: &noAudience}); err == nil {
		t.Error("no audience accepted")
	}
	badType := good
	badType.SubjectTokenType = "urn:ietf:params:oauth:token-type:id_token"
	if _, err := New("https://s4.example.com", Options{TokenExchange: &badType}); err == nil {
		t.Error("an ID token as the subject accepted")
	}
	if _, err := New("https://s4.example.com", Options{TokenExchange: &good, User: "u"}); err == nil {
		t.Error("token exchange with basic authentication accepted")
	}
}

// TestSubjectTokenNeverPrinted: the context value shows no token when
// printed or logged by mistake.
func TestSubjectTokenNeverPrinted(t *testing.T) {
	st := erp.SubjectToken{Token: "eyJ.secret.sig", Operation: "get_invoice"}
	for _, s := range []string{fmt.Sprint(st), fmt.Sprintf("%+v", st), fmt.Sprintf("%#v", st), fmt.Sprint(&st), st.LogValue().String()} {
		if strings.Contains(s, "secret") {
			t.Errorf("printed as %q", s)
		}
	}
}

// BenchmarkTokenExchangeCached is what a request pays for its token once
// the exchange is kept: a hash of the caller's token and a cache look-up.
func BenchmarkTokenExchangeCached(b *testing.B) {
	idp := newExchangeIdP(b)
	c, err := New("https://s4.example.com", Options{TokenExchange: idp.config()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := agentCall(callerJWT("alice", time.Now().Add(time.Hour)), "get_invoice")
	if _, err := c.exchange.Token(ctx, erp.ServiceSupplierInvoice); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.exchange.Token(ctx, erp.ServiceSupplierInvoice); err != nil {
			b.Fatal(err)
		}
	}
}
