package sim_test

import (
	"net/http"
	"testing"

	"github.com/erpgate/erpgate/erp/sim"
)

func TestCSRF(t *testing.T) {
	e := newEnv(t, sim.Options{})
	rel := invSrv + postPath("5105600101", "2026")
	required := func(t *testing.T, r reply) {
		t.Helper()
		wantError(t, r, http.StatusForbidden, "/IWFND/CM_CSRF/001")
		if got := r.header.Get("X-CSRF-Token"); got != "Required" {
			t.Errorf("X-CSRF-Token: got %q, want Required", got)
		}
	}

	t.Run("no token", func(t *testing.T) {
		required(t, e.do(http.MethodPost, rel, nil, nil))
	})
	t.Run("fetch as token", func(t *testing.T) {
		required(t, e.do(http.MethodPost, rel, nil, map[string]string{"X-CSRF-Token": "Fetch"}))
	})
	tok := e.token(invSrv)
	t.Run("token without session cookie", func(t *testing.T) {
		other := newEnv(t, sim.Options{})
		other.url = e.url
		required(t, other.do(http.MethodPost, rel, nil, map[string]string{"X-CSRF-Token": tok}))
	})
	t.Run("token of another session", func(t *testing.T) {
		other := newEnv(t, sim.Options{})
		other.url = e.url
		other.token(invSrv)
		required(t, other.do(http.MethodPost, rel, nil, map[string]string{"X-CSRF-Token": tok}))
	})
	t.Run("same token on refetch", func(t *testing.T) {
		r := e.do(http.MethodGet, bpSrv+"/A_Supplier('100042')", nil, map[string]string{"X-CSRF-Token": "Fetch"})
		if got := r.header.Get("X-CSRF-Token"); r.status != http.StatusOK || got != tok {
			t.Errorf("fetch on entity GET: got %d %q, want 200 %q", r.status, got, tok)
		}
	})
	t.Run("nothing applied without token", func(t *testing.T) {
		if n := len(e.sim.Ledger().Postings); n != 0 {
			t.Fatalf("postings: got %d, want 0", n)
		}
	})
	t.Run("expired then refetched", func(t *testing.T) {
		e.admin(http.MethodPost, "/sim/admin/csrf/expire", nil)
		required(t, e.do(http.MethodPost, rel, nil, map[string]string{"X-CSRF-Token": tok}))
		delete(e.tokens, invSrv)
		fresh := e.token(invSrv)
		if fresh == tok {
			t.Fatalf("refetched token: got the expired one")
		}
		if r := e.postInvoice("5105600101", "2026"); r.status != http.StatusOK {
			t.Fatalf("post with fresh token: got %d: %s", r.status, r.body)
		}
	})
	t.Run("ExpireTokens", func(t *testing.T) {
		e.sim.ExpireTokens()
		required(t, e.do(http.MethodPost, rel, nil, map[string]string{"X-CSRF-Token": e.tokens[invSrv]}))
	})
}

// TestNoCSRF: a simulator without CSRF protection answers a fetch without
// a token or a session, and takes a write without a token, once.
func TestNoCSRF(t *testing.T) {
	e := newEnv(t, sim.Options{NoCSRF: true})
	r := e.do(http.MethodGet, invSrv+"/", nil, map[string]string{"X-CSRF-Token": "Fetch"})
	if r.status != http.StatusOK || r.header.Get("X-CSRF-Token") != "" || len(r.header.Values("Set-Cookie")) != 0 {
		t.Fatalf("fetch: got %d, token %q, cookies %q; want 200 without token or session", r.status,
			r.header.Get("X-CSRF-Token"), r.header.Values("Set-Cookie"))
	}
	rel := invSrv + postPath("5105600101", "2026")
	if r := e.do(http.MethodPost, rel, nil, nil); r.status != http.StatusOK {
		t.Fatalf("post without a token: got %d: %s", r.status, r.body)
	}
	if r := e.do(http.MethodPost, rel, nil, nil); r.status == http.StatusOK || r.status == http.StatusForbidden {
		t.Errorf("second post: got %d, want the ERP's refusal of a posted invoice", r.status)
	}
	if n := len(e.sim.Ledger().Postings); n != 1 {
		t.Errorf("postings: got %d, want 1", n)
	}
}
