package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/console"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// auditorKey is the key of the test's auditor, whose key carries the
// audit scope only.
const auditorKey = "auditor-key-0001"

// newReplica is a gateway with its console over store, a new SQLite
// database when nil: sites over one store are replicas of one gateway.
// apiOpts, when set, changes the API's options.
func newReplica(t testing.TB, store records.Store, apiOpts func(*api.Options), opts ...func(*console.Options)) *site {
	t.Helper()
	simSrv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(simSrv.Close)
	metrics := api.NewMetrics()
	runner := retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond}, metrics)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	if store == nil {
		store, _ = recordstest.SQLite(t)
	}
	ao := api.Options{ERP: client, Records: store, Metrics: metrics, BreakerStates: runner.BreakerStates,
		Credentials: []api.Credential{
			cred("agent", agentKey, api.ScopeRead, api.ScopeWrite),
			cred("m.keller", kellerKey, api.ScopeApprove, api.ScopeReview),
			cred("j.doe", doeKey, api.ScopeApprove),
			cred("ap.team", reviewerKey, api.ScopeReview),
			cred("r.audit", auditorKey, api.ScopeAudit),
		}}
	if apiOpts != nil {
		apiOpts(&ao)
	}
	srv, err := api.NewServer(ao)
	if err != nil {
		t.Fatal(err)
	}
	o := console.Options{Gateway: srv, Records: store, Metrics: metrics.Registry()}
	for _, f := range opts {
		f(&o)
	}
	ui, err := console.New(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	ui.Mount(mux)
	gw := httptest.NewServer(mux)
	t.Cleanup(gw.Close)
	return &site{t: t, url: gw.URL, records: store, handler: mux}
}

// visit asks site for path with cookies, as a browser holding a copy of
// them would, and returns the status and where it leads.
func visit(s *site, path string, cookies []*http.Cookie) (int, string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Location")
}

// TestSignOutEndsTheSessionOnEveryReplica checks that a session made on
// one replica opens the console on another over the same store, and that
// after sign-out a copy of its cookie taken before opens it on neither.
func TestSignOutEndsTheSessionOnEveryReplica(t *testing.T) {
	store, _ := recordstest.SQLite(t)
	secret := func(s string) func(*console.Options) { return func(o *console.Options) { o.Secret = []byte(s) } }
	a := newReplica(t, store, nil, secret("the secret every replica is given, 32+"))
	b := newReplica(t, store, nil, secret("the secret every replica is given, 32+"))
	other := newReplica(t, store, nil, secret("another secret, of another deployment"))

	br := a.browser()
	if p := br.signIn(kellerKey); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", p.status)
	}
	copied := br.c.Jar.Cookies(mustParse(a.url + "/console/"))
	for name, s := range map[string]*site{"this replica": a, "another replica": b} {
		if got, _ := visit(s, "/console/approvals", copied); got != http.StatusOK {
			t.Errorf("the session on %s: %d, want 200", name, got)
		}
	}
	if got, _ := visit(other, "/console/approvals", copied); got != http.StatusSeeOther {
		t.Errorf("the session on a gateway with another secret: %d, want 303 to the sign-in", got)
	}

	// Signing out on replica b ends the session for every copy of the
	// cookie, on every replica.
	bb := b.browser()
	bb.c.Jar.SetCookies(mustParse(b.url+"/console/"), copied)
	tok := bb.token("/console/approvals")
	if p := bb.post("/console/sign-out", url.Values{"csrf_token": {tok}}); p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
		t.Fatalf("sign-out: got %d to %q, want 303 to the sign-in", p.status, p.location)
	}
	for name, s := range map[string]*site{"this replica": a, "another replica": b} {
		if got, loc := visit(s, "/console/approvals", copied); got != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/sign-in") {
			t.Errorf("a cookie copied before sign-out, on %s: got %d to %q, want 303 to the sign-in", name, got, loc)
		}
	}
	// A form sent with the copy is refused too.
	if p := br.post("/console/sign-out", url.Values{"csrf_token": {tok}}); p.status != http.StatusForbidden {
		t.Errorf("a form with the copied cookie: got %d, want 403", p.status)
	}
	if _, err := console.New(console.Options{Gateway: &hiding{}, Records: store, Secret: []byte("short")}); err == nil {
		t.Error("New took a secret of 5 bytes")
	}
}

// TestSessionStoresNoToken checks what the store keeps of a session: its
// person and key, never the token the cookie carries.
func TestSessionStoresNoToken(t *testing.T) {
	s := newSite(t)
	b := s.browser()
	b.signIn(doeKey)
	var value string
	for _, c := range b.c.Jar.Cookies(mustParse(s.url + "/console/")) {
		if c.Name == "erpgate_console" {
			value = c.Value
		}
	}
	token, _, ok := strings.Cut(value, ".")
	if !ok || len(token) < 40 {
		t.Fatalf("session cookie %q: want a random token and its signature", value)
	}
	se, err := s.records.Session(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	if se.Client != "j.doe" || !se.Live(time.Now()) || se.ExpiresAt.Sub(se.CreatedAt) != console.DefaultSessionTTL {
		t.Errorf("stored session %+v: want j.doe's, live, for %v", se, console.DefaultSessionTTL)
	}
	// The cookie is the token and a signature: a token with another
	// signature opens nothing, though the store has it.
	b.c.Jar.SetCookies(mustParse(s.url+"/console/"), []*http.Cookie{{Name: "erpgate_console", Value: token + ".AAAA", Path: "/console"}})
	if p := b.get("/console/approvals"); p.status != http.StatusSeeOther {
		t.Errorf("the token with a forged signature: got %d, want 303", p.status)
	}
}

// problemCode is the code an error page shows.
var problemCode = regexp.MustCompile(`id="problem-code">([A-Z_]+)<`)

// TestSignInThrottledPerSource checks that wrong keys at the sign-in count
// against the source address in the API's own count of failed
// authentications: past the limit the sign-in answers 429 RATE_LIMITED
// with Retry-After, an address the API has refused is refused here too,
// and a right key still signs in.
func TestSignInThrottledPerSource(t *testing.T) {
	// A window of an hour, so that the count does not move on while the
	// test runs.
	limit := func(o *api.Options) { o.AuthFailLimit, o.RateWindow = 20, time.Hour }

	t.Run("30 wrong keys", func(t *testing.T) {
		s := newReplica(t, nil, limit)
		b := s.browser()
		for i := 1; i <= 30; i++ {
			p := b.signIn("wrong-key")
			code := problemCode.FindStringSubmatch(p.body)
			switch {
			case i <= 20 && (p.status != http.StatusUnauthorized || code == nil || code[1] != "UNAUTHENTICATED"):
				t.Fatalf("wrong key %d: got %d %v, want 401 UNAUTHENTICATED", i, p.status, code)
			case i > 20 && (p.status != http.StatusTooManyRequests || code == nil || code[1] != "RATE_LIMITED" ||
				!strings.Contains(p.body, "<code>reason</code>: auth_failures") || p.header.Get("Retry-After") == ""):
				t.Fatalf("wrong key %d: got %d %v, Retry-After %q, want 429 RATE_LIMITED auth_failures with Retry-After",
					i, p.status, code, p.header.Get("Retry-After"))
			}
			if i == 30 {
				wait := p.header.Get("Retry-After")
				if !strings.Contains(p.body, "Too many attempts: try again in "+wait+" seconds") {
					t.Errorf("the 429 page does not say to try again in %s seconds", wait)
				}
			}
		}
		// The API counts the same failures: a wrong key there is refused
		// at once.
		if p := s.agentWithKey("wrong-key"); p.status != http.StatusTooManyRequests || !strings.Contains(p.body, `"reason":"auth_failures"`) {
			t.Errorf("the API after 30 wrong keys at the sign-in: %d %s, want 429 auth_failures", p.status, p.body)
		}
		// As at the API, a right key is never refused by the limit.
		if p := b.signIn(kellerKey); p.status != http.StatusSeeOther {
			t.Errorf("the right key from the limited address: %d, want 303", p.status)
		}
	})

	t.Run("an address over the API's limit", func(t *testing.T) {
		s := newReplica(t, nil, limit)
		for i := range 21 {
			if p := s.agentWithKey("wrong-key"); i == 20 && p.status != http.StatusTooManyRequests {
				t.Fatalf("the API's 21st wrong key: %d, want 429", p.status)
			}
		}
		p := s.browser().signIn("another-wrong-key")
		if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
			t.Fatalf("the first wrong key at the sign-in from that address: got %d, want 429 with Retry-After", p.status)
		}
	})
}

// agentWithKey reads an invoice through the API with key.
func (s *site) agentWithKey(key string) page {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/invoices/5105600101", nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return read(s.t, resp)
}

// sessionCookieOf returns the session cookie an answer sets, if any.
func sessionCookieOf(rec *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == "erpgate_console" {
			return c
		}
	}
	return nil
}

// signInVia signs in with kellerKey through s's handler as a request from
// peer with the header given as name, value pairs, and returns the
// cookies set along the way.
func signInVia(t *testing.T, s *site, peer string, header ...string) (csrf, session *http.Cookie) {
	t.Helper()
	req := func(method, body string) *http.Request {
		r := httptest.NewRequest(method, "/console/sign-in", strings.NewReader(body))
		r.RemoteAddr = peer
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req(http.MethodGet, ""))
	cs := rec.Result().Cookies()
	if len(cs) != 1 {
		t.Fatalf("sign-in page: cookies %v, want the CSRF cookie", cs)
	}
	csrf = cs[0]
	tok := csrfInput.FindStringSubmatch(rec.Body.String())[1]
	r := req(http.MethodPost, url.Values{"csrf_token": {tok}, "key": {kellerKey}}.Encode())
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(csrf)
	rec = httptest.NewRecorder()
	s.handler.ServeHTTP(rec, r)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", rec.Code, rec.Body)
	}
	session = sessionCookieOf(rec)
	if session == nil {
		t.Fatal("no session cookie after sign-in")
	}
	return csrf, session
}

// TestSecureCookiesBehindAProxy checks the Secure flag of the console's
// cookies on plain HTTP behind a proxy that terminates TLS: set for an
// https public URL, and for X-Forwarded-Proto: https from a trusted proxy
// only.
func TestSecureCookiesBehindAProxy(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tc := range []struct {
		name   string
		opts   func(*console.Options)
		peer   string
		header []string
		secure bool
	}{
		{"https public URL", func(o *console.Options) { o.PublicURL = "https://gateway.example.com" }, "192.0.2.7:50000", nil, true},
		{"http public URL", func(o *console.Options) { o.PublicURL = "http://localhost:8080" }, "192.0.2.7:50000", nil, false},
		{"a trusted proxy says https", func(o *console.Options) { o.TrustedProxies = proxies }, "10.1.2.3:50000",
			[]string{"X-Forwarded-Proto", "https"}, true},
		{"a trusted proxy says http", func(o *console.Options) { o.TrustedProxies = proxies }, "10.1.2.3:50000",
			[]string{"X-Forwarded-Proto", "http"}, false},
		{"another peer says https", func(o *console.Options) { o.TrustedProxies = proxies }, "192.0.2.7:50000",
			[]string{"X-Forwarded-Proto", "https"}, false},
		{"no trusted proxies", func(*console.Options) {}, "10.1.2.3:50000", []string{"X-Forwarded-Proto", "https"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, tc.opts)
			csrf, session := signInVia(t, s, tc.peer, tc.header...)
			if csrf.Secure != tc.secure || session.Secure != tc.secure {
				t.Errorf("Secure: CSRF cookie %v, session cookie %v; want %v", csrf.Secure, session.Secure, tc.secure)
			}
			if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
				t.Errorf("session cookie %+v: want HttpOnly and SameSite=Strict", session)
			}
		})
	}
	if _, err := console.New(console.Options{Gateway: &hiding{}, Records: newSite(t).records, PublicURL: "https://[::1"}); err == nil {
		t.Error("New took a public URL that is no URL")
	}
}

// TestErrorPagesInPersonsWords checks that a refusal says what happened in
// a person's words, with its code beside it for support, and leads back
// to the page the person came from.
func TestErrorPagesInPersonsWords(t *testing.T) {
	s := newReplica(t, nil, func(o *api.Options) { o.AuthFailLimit, o.RateWindow = 1, time.Hour })
	// heading is the page's h1 without the code beside it.
	heading := regexp.MustCompile(`<h1>([^<]*) <small`)
	check := func(what string, p page, status int, code, head string, also ...string) {
		t.Helper()
		if p.status != status {
			t.Errorf("%s: status %d, want %d", what, p.status, status)
		}
		if m := problemCode.FindStringSubmatch(p.body); m == nil || m[1] != code {
			t.Errorf("%s: code %v, want %s", what, m, code)
		}
		h := heading.FindStringSubmatch(p.body)
		if h == nil || h[1] != head {
			t.Errorf("%s: heading %v, want %q", what, h, head)
		}
		// The agent's words are for support, after the person's.
		main, _, _ := strings.Cut(p.body, `id="support"`)
		for _, agentWord := range []string{"retryable", "next_action", "route_to_person", "fix_input_and_retry"} {
			if strings.Contains(main, agentWord) {
				t.Errorf("%s: %q before the support section", what, agentWord)
			}
		}
		for _, want := range also {
			if !strings.Contains(p.body, want) {
				t.Errorf("%s: the page lacks %q", what, want)
			}
		}
	}

	b := s.browser()
	check("a wrong key", b.signIn("wrong-key"), http.StatusUnauthorized, "UNAUTHENTICATED", "That key was not accepted",
		`<a href="/console/sign-in">Sign in</a>`)
	p := b.signIn("wrong-key")
	check("a second wrong key", p, http.StatusTooManyRequests, "RATE_LIMITED",
		"Too many attempts: try again in "+p.header.Get("Retry-After")+" seconds")
	check("an agent's key", b.signIn(agentKey), http.StatusConflict, "SCOPE_MISSING", "This key cannot sign in to the console")

	b.signIn(reviewerKey)
	check("a page the key does not open", b.get("/console/approvals"), http.StatusConflict, "SCOPE_MISSING",
		"Your key does not open this page", "needs the approve scope", `<a href="/console">Back to the console</a>`)
	check("a filter of the wrong form", b.get("/console/handovers?status=gone"), http.StatusBadRequest, "INVALID_REQUEST",
		"Check “Status”", "Status must be one of")
	check("no such page", b.get("/console/nowhere"), http.StatusNotFound, "INVALID_REQUEST", "There is no such page")
	check("no such handover", b.get("/console/handovers/HO9999999"), http.StatusNotFound, "INVALID_REQUEST", "There is no such handover")

	// A refused form leads back to the page it was sent from.
	_, _, _ = s.records.CreateHandover(context.Background(), records.Handover{InvoiceID: "5105600103", Queue: "ap_queue",
		Code: "PO_NOT_FOUND", Summary: "Seeded."}, false)
	list, err := s.records.ListHandovers(context.Background(), records.HandoverFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("handovers: %v %v", list, err)
	}
	from := s.url + "/console/handovers/" + list[0].ID
	tok := b.token("/console/handovers/" + list[0].ID)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/console/handovers/"+list[0].ID+"/resolve",
		strings.NewReader(url.Values{"csrf_token": {tok}, "note": {"x"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Referer", from)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	check("a note too short", read(t, resp), http.StatusBadRequest, "INVALID_REQUEST", "Check “Resolution note”",
		`<a href="/console/handovers/`+list[0].ID+`">Back to the page you came from</a>`)
	req, _ = http.NewRequest(http.MethodPost, s.url+"/console/sign-out", strings.NewReader("csrf_token=AAAA"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Referer", "https://elsewhere.example/console/handovers")
	resp, err = b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	check("a form without its token, sent from another site", page{status: resp.StatusCode, body: string(body)},
		http.StatusForbidden, "INVALID_REQUEST", "This form has expired", "csrf_token", `<a href="/console">Back to the console</a>`)
}
