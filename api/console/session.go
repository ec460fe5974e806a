package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/errmap"
)

// A session is a cookie the console signs with its secret (HMAC-SHA256):
// who signed in, a fingerprint of the key they signed in with, when the
// session ends, and a random nonce the forms' CSRF tokens are bound to.
// Nothing is stored server-side, so every replica with the same secret
// serves every session and a page costs no write. Each request checks the
// person against the configuration as it is now: a key removed or changed
// ends its sessions, and the scopes are the configured ones, never the
// cookie's. Signing out clears the cookie in the browser; a copy taken
// before lasts until it expires (Options.SessionTTL), which is what a
// short lifetime bounds.

const (
	sessionCookie = "erpgate_console"
	csrfCookie    = "erpgate_console_csrf"
	csrfField     = "csrf_token"
	cookiePath    = "/console"
	maxFormBytes  = 16 << 10
)

// sessionData is the signed content of the session cookie.
type sessionData struct {
	Name    string `json:"n"`
	KeyFP   string `json:"k"` // hex of the first 8 bytes of the key's SHA-256
	Expires int64  `json:"e"` // Unix seconds
	Nonce   string `json:"s"`
}

// person is who is signed in, with the scopes the configuration gives them.
type person struct {
	Name   string
	Scopes []string
	nonce  string
}

// Has reports whether the person holds scope; the navigation shows only
// what their scopes open.
func (p person) Has(scope string) bool { return slices.Contains(p.Scopes, scope) }

// mayUseConsole reports whether scopes let a person sign in: an approver's
// or the AP team's, never an agent's.
func mayUseConsole(scopes []string) bool {
	return slices.Contains(scopes, api.ScopeApprove) || slices.Contains(scopes, api.ScopeReview)
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

// sealSession returns the cookie value of d.
func (c *Console) sealSession(d sessionData) string {
	payload, _ := json.Marshal(d)
	p := b64.EncodeToString(payload)
	return p + "." + b64.EncodeToString(c.mac("session", p))
}

// openSession checks a cookie value's signature and returns its content.
func (c *Console) openSession(v string) (sessionData, bool) {
	p, sig, ok := strings.Cut(v, ".")
	if !ok {
		return sessionData{}, false
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac("session", p)) {
		return sessionData{}, false
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return sessionData{}, false
	}
	var d sessionData
	if json.Unmarshal(payload, &d) != nil {
		return sessionData{}, false
	}
	return d, true
}

// session returns the signed-in person of r, if the session is sound, not
// expired, and its key still configured with a console scope.
func (c *Console) session(r *http.Request) (person, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return person{}, false
	}
	d, ok := c.openSession(ck.Value)
	if !ok || c.now().Unix() >= d.Expires {
		return person{}, false
	}
	cred, ok := c.gw.ClientNamed(d.Name)
	if !ok || !hmac.Equal([]byte(keyFingerprint(cred)), []byte(d.KeyFP)) || !mayUseConsole(cred.Scopes) {
		return person{}, false
	}
	return person{Name: cred.Name, Scopes: cred.Scopes, nonce: d.Nonce}, true
}

func newNonce() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return b64.EncodeToString(b)
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: cookiePath, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// csrfToken is the token every form of a page carries: bound to the
// browser's CSRF cookie and to the session, if any. It gives the browser
// its CSRF cookie when it has none.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request, p person) string {
	nonce := ""
	if ck, err := r.Cookie(csrfCookie); err == nil && ck.Value != "" {
		nonce = ck.Value
	} else {
		nonce = newNonce()
		c.setCookie(w, r, csrfCookie, nonce, 0)
		// A page rendered in this response reads the cookie from the
		// request it answers.
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: nonce})
	}
	return b64.EncodeToString(c.mac("csrf", nonce, p.nonce))
}

// checkCSRF reports whether the form's token matches the browser's CSRF
// cookie and session.
func (c *Console) checkCSRF(r *http.Request, p person) bool {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || ck.Value == "" {
		return false
	}
	got, err := b64.DecodeString(r.PostFormValue(csrfField))
	return err == nil && hmac.Equal(got, c.mac("csrf", ck.Value, p.nonce))
}

// form guards a POST: a bounded form body whose CSRF token matches, or
// INVALID_REQUEST naming csrf_token, before next sees it.
func (c *Console) form(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
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

type personKey struct{}

// person guards a page: a signed-in person holding scope (any console
// scope when empty), else the sign-in page or SCOPE_MISSING.
func (c *Console) person(scope string, next func(http.ResponseWriter, *http.Request, person)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
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
// the approve or review scope. An agent's key is refused SCOPE_MISSING.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	cred, err := c.gw.SignIn(strings.TrimSpace(r.PostFormValue("key")))
	if err != nil {
		if err == api.ErrNoKeys {
			c.fail(w, r, problemOf(errmap.InvalidPage(http.StatusConflict, "key", "cannot sign in: the gateway has no API keys configured (-api-keys); give each person a key with the approve or review scope")))
			return
		}
		c.fail(w, r, problemOf(errmap.Map(err)))
		return
	}
	if !mayUseConsole(cred.Scopes) {
		c.fail(w, r, problemOf(errmap.Map(refusal.ScopeMissing{Scope: api.ScopeApprove + " or " + api.ScopeReview, Operation: "console sign-in"})))
		return
	}
	d := sessionData{Name: cred.Name, KeyFP: keyFingerprint(cred), Expires: c.now().Add(c.ttl).Unix(), Nonce: newNonce()}
	c.setCookie(w, r, sessionCookie, c.sealSession(d), int(c.ttl/time.Second))
	c.log.InfoContext(r.Context(), "console sign-in", "client", cred.Name)
	next := safeNext(r.PostFormValue("next"))
	if next == "" {
		next = "/console"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	c.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
}
