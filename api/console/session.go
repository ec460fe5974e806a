package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// A session is a row of the records store (records.Session) and a cookie
// that carries the session's random token, signed with the console's
// secret (HMAC-SHA256) so that a made-up cookie costs no database read.
// The store keeps only the token's SHA-256. A page reads the one row: the
// session must be live (not signed out, not expired), and its person is
// checked against the configuration as it is now, so that a key removed
// or changed ends its sessions and the scopes are the configured ones.
// Signing out ends the row, and with it every copy of the cookie on every
// replica sharing the store. Expired rows are swept at each sign-in.

const (
	sessionCookie = "erpgate_console"
	csrfCookie    = "erpgate_console_csrf"
	csrfField     = "csrf_token"
	cookiePath    = "/console"
	maxFormBytes  = 16 << 10
)

// person is who is signed in, with the scopes the configuration gives them.
type person struct {
	Name   string
	Scopes []string
	// token is the session's token, which the forms' CSRF tokens are
	// bound to; "" for nobody.
	token string
}

// Has reports whether the person holds scope; the navigation shows only
// what their scopes open.
func (p person) Has(scope string) bool { return slices.Contains(p.Scopes, scope) }

// consoleScopes are the scopes that let a person sign in: an approver's,
// the AP team's and an auditor's, never an agent's alone.
var consoleScopes = []string{api.ScopeApprove, api.ScopeReview, api.ScopeAudit}

// mayUseConsole reports whether scopes let a person sign in.
func mayUseConsole(scopes []string) bool {
	return slices.ContainsFunc(scopes, func(s string) bool { return slices.Contains(consoleScopes, s) })
}

func keyFingerprint(c api.Credential) string { return hex.EncodeToString(c.KeySHA256[:8]) }

func (c *Console) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, c.secret)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// newToken returns a random token of 256 bits.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b64.EncodeToString(b)
}

// sealToken returns the cookie value that carries token.
func (c *Console) sealToken(token string) string {
	return token + "." + b64.EncodeToString(c.mac("session", token))
}

// cookieToken returns the session token of r's cookie, if its signature
// holds.
func (c *Console) cookieToken(r *http.Request) (string, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	token, sig, ok := strings.Cut(ck.Value, ".")
	if !ok || token == "" {
		return "", false
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac("session", token)) {
		return "", false
	}
	return token, true
}

type memoKey struct{}

// sessionMemo keeps the session a request found, so that one request
// reads its row once however many steps ask.
type sessionMemo struct {
	done bool
	p    person
	ok   bool
}

// withMemo gives r a place to keep its session, unless it has one.
func withMemo(r *http.Request) *http.Request {
	if _, ok := r.Context().Value(memoKey{}).(*sessionMemo); ok {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), memoKey{}, &sessionMemo{}))
}

// session returns the signed-in person of r, if the session is live and
// its key still configured with a console scope.
func (c *Console) session(r *http.Request) (person, bool) {
	m, _ := r.Context().Value(memoKey{}).(*sessionMemo)
	if m != nil && m.done {
		return m.p, m.ok
	}
	p, ok := c.lookUpSession(r)
	if m != nil {
		*m = sessionMemo{done: true, p: p, ok: ok}
	}
	return p, ok
}

func (c *Console) lookUpSession(r *http.Request) (person, bool) {
	token, ok := c.cookieToken(r)
	if !ok {
		return person{}, false
	}
	se, err := c.records.Session(r.Context(), token)
	if err != nil {
		if !errors.Is(err, records.ErrNotFound) {
			c.log.ErrorContext(r.Context(), "console: session not read", "error", err)
		}
		return person{}, false
	}
	if !se.Live(c.now()) {
		return person{}, false
	}
	cred, ok := c.gw.ClientNamed(se.Client)
	if !ok || !hmac.Equal([]byte(keyFingerprint(cred)), []byte(se.KeyFP)) || !mayUseConsole(cred.Scopes) {
		return person{}, false
	}
	return person{Name: cred.Name, Scopes: cred.Scopes, token: token}, true
}

// secure reports whether the cookies of r's answer are Secure: always when
// the console is reached at an https public URL (Options.PublicURL), else
// when r came over TLS, or through one of Options.TrustedProxies that says
// X-Forwarded-Proto: https. The header of any other peer is ignored.
func (c *Console) secure(r *http.Request) bool {
	if c.secureAlways || r.TLS != nil {
		return true
	}
	if len(c.trustedProxies) == 0 {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	if !strings.EqualFold(strings.TrimSpace(proto), "https") {
		return false
	}
	addr, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	peer := addr.Addr().Unmap()
	return slices.ContainsFunc(c.trustedProxies, func(p netip.Prefix) bool { return p.Contains(peer) })
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: cookiePath, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r)})
}

// csrfToken is the token every form of a page carries: bound to the
// browser's CSRF cookie and to the session, if any. It gives the browser
// its CSRF cookie when it has none.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request, p person) string {
	nonce := ""
	if ck, err := r.Cookie(csrfCookie); err == nil && ck.Value != "" {
		nonce = ck.Value
	} else {
		nonce = newToken()
		c.setCookie(w, r, csrfCookie, nonce, 0)
		// A page rendered in this response reads the cookie from the
		// request it answers.
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: nonce})
	}
	return b64.EncodeToString(c.mac("csrf", nonce, p.token))
}

// checkCSRF reports whether the form's token matches the browser's CSRF
// cookie and session.
func (c *Console) checkCSRF(r *http.Request, p person) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	got, err := b64.DecodeString(r.PostFormValue(csrfField))
	return err == nil && hmac.Equal(got, c.mac("csrf", ck.Value, p.token))
}

// form guards a POST: a bounded form body whose CSRF token matches, or
// INVALID_REQUEST naming csrf_token, before next sees it.
func (c *Console) form(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r = withMemo(r)
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, problemOf(errmap.Invalid("form", "could not be read: send the page's form as it is")))
			return
		}
		p, _ := c.session(r)
		if !c.checkCSRF(r, p) {
			c.fail(w, r, problemOf(errmap.InvalidPage(http.StatusForbidden, csrfField,
				"is missing or does not match this browser's session: reload the page and send the form again")))
			return
		}
		next(w, r)
	}
}

// person guards a page: a signed-in person holding scope (any console
// scope when empty), else the sign-in page or SCOPE_MISSING.
func (c *Console) person(scope string, next func(http.ResponseWriter, *http.Request, person)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r = withMemo(r)
		p, ok := c.session(r)
		if !ok {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/console/sign-in?next="+r.URL.EscapedPath(), http.StatusSeeOther)
				return
			}
			c.fail(w, r, problemOf(errmap.Map(refusal.Unauthenticated{})))
			return
		}
		if scope != "" && !p.Has(scope) {
			c.failAs(w, r, p, problemOf(errmap.Map(refusal.ScopeMissing{Scope: scope, Operation: "console page " + r.URL.Path})))
			return
		}
		next(w, r, p)
	}
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	r = withMemo(r)
	if _, ok := c.session(r); ok {
		http.Redirect(w, r, "/console", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", Data: signInData{Next: safeNext(r.URL.Query().Get("next"))}})
}

type signInData struct {
	Next string
}

// safeNext keeps a page of the console to go to after sign-in, and nothing
// that leads elsewhere.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/console/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return ""
}

// signIn checks the key and starts a session for a person whose key carries
// a console scope. An agent's key is refused SCOPE_MISSING; a wrong key
// counts against the source address as at the API, and is RATE_LIMITED
// once the address has failed too often.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	cred, err := c.gw.SignIn(r, strings.TrimSpace(r.PostFormValue("key")))
	if err != nil {
		if errors.Is(err, api.ErrNoKeys) {
			c.fail(w, r, problemOf(errmap.InvalidPage(http.StatusConflict, "key", "cannot sign in: the gateway has no API keys configured (-api-keys); give each person a key with the approve, review or audit scope")))
			return
		}
		c.fail(w, r, problemOf(errmap.Map(err)))
		return
	}
	if !mayUseConsole(cred.Scopes) {
		c.fail(w, r, problemOf(errmap.Map(refusal.ScopeMissing{Scope: strings.Join(consoleScopes, " or "), Operation: "console sign-in"})))
		return
	}
	now := c.now()
	// The browser's session before, if any, ends: one browser, one session.
	if old, ok := c.cookieToken(r); ok {
		if err := c.records.EndSession(r.Context(), old, now); err != nil {
			c.log.ErrorContext(r.Context(), "console: the session before not ended", "error", err)
		}
	}
	token := newToken()
	if err := c.records.CreateSession(r.Context(), token, records.Session{Client: cred.Name, KeyFP: keyFingerprint(cred),
		CreatedAt: now, ExpiresAt: now.Add(c.ttl)}); err != nil {
		c.internal(w, r, person{}, err)
		return
	}
	if n, err := c.records.DeleteExpiredSessions(r.Context(), now); err != nil {
		c.log.ErrorContext(r.Context(), "console: expired sessions not swept", "error", err)
	} else if n > 0 {
		c.log.InfoContext(r.Context(), "console: expired sessions swept", "count", n)
	}
	c.setCookie(w, r, sessionCookie, c.sealToken(token), int(c.ttl/time.Second))
	c.log.InfoContext(r.Context(), "console sign-in", "client", cred.Name)
	next := safeNext(r.PostFormValue("next"))
	if next == "" {
		next = "/console"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut ends the session in the store, so that no copy of the cookie
// opens the console again on any replica, and clears it in the browser.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	c.setCookie(w, r, sessionCookie, "", -1)
	if token, ok := c.cookieToken(r); ok {
		p, _ := c.session(r)
		if err := c.records.EndSession(r.Context(), token, c.now()); err != nil {
			c.internal(w, r, p, err)
			return
		}
		c.log.InfoContext(r.Context(), "console sign-out", "client", p.Name)
	}
	http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
}
