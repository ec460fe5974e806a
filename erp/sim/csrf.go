package sim

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// sessionCookie is the gateway's session cookie for client 100.
const sessionCookie = "SAP_SESSIONID_ERP_100"

// issueToken answers a CSRF fetch: it finds or opens the session named by
// the cookie and puts the session's token in h; with Options.NoCSRF it
// leaves h as it is. s.mu must be held.
func (s *Server) issueToken(r *http.Request, h http.Header) {
	if s.opts.NoCSRF {
		return
	}
	sid := ""
	if c, err := r.Cookie(sessionCookie); err == nil {
		if _, ok := s.sessions[c.Value]; ok {
			sid = c.Value
		}
	}
	if sid == "" {
		sid = randomString(24)
		s.sessions[sid] = ""
		h.Add("Set-Cookie", (&http.Cookie{Name: sessionCookie, Value: sid, Path: "/", HttpOnly: true}).String())
		h.Add("Set-Cookie", "sap-usercontext=sap-client=100; path=/")
	}
	// SAP hands out the same token for the life of a session, so a second
	// fetch does not invalidate a token another request is using.
	if s.sessions[sid] == "" {
		s.sessions[sid] = randomString(18)
	}
	h.Set("X-CSRF-Token", s.sessions[sid])
}

// validToken reports whether the request carries the token of its
// session, or needs none (Options.NoCSRF). s.mu must be held.
func (s *Server) validToken(r *http.Request) bool {
	if s.opts.NoCSRF {
		return true
	}
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" || strings.EqualFold(tok, "Fetch") {
		return false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	want := s.sessions[c.Value]
	return want != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1
}

// ExpireTokens invalidates every CSRF token issued so far; sessions stay,
// and the next fetch in a session gets a new token.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sid := range s.sessions {
		s.sessions[sid] = ""
	}
}

// randomString returns n random bytes in URL-safe base64.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
