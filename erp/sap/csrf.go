package sap

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// csrfState is a CSRF token and the session cookies it is bound to, or
// what a fetch that brought no token left: a service that protects its
// writes with no token (SAP CAP, or an SAP system with the check switched
// off) takes them without one.
type csrfState struct {
	token   string
	cookies []*http.Cookie
	// none says the fetch answered without a token: writes go without.
	none bool
}

// known reports whether the state is a fetch's outcome, a token or none.
func (st csrfState) known() bool { return st.token != "" || st.none }

// same reports whether st and o are the outcome of the same fetch as far
// as a write can tell.
func (st csrfState) same(o csrfState) bool { return st.token == o.token && st.none == o.none }

// csrfEntry is the cached token of one service.
type csrfEntry struct {
	// fetching is held while a token is fetched, so that concurrent writers
	// share one fetch instead of replacing each other's session.
	fetching chan struct{}
	mu       sync.Mutex
	state    csrfState
	// warned is set once the service's first fetch without a token has
	// been logged.
	warned atomic.Bool
}

func (e *csrfEntry) get() csrfState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

func (e *csrfEntry) set(st csrfState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state = st
}

// invalidate drops the state if it is still the one cached.
func (e *csrfEntry) invalidate(st csrfState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.same(st) {
		e.state = csrfState{}
	}
}

// csrfKey names a cached token: its service, and the identity its session
// belongs to when calls sign in as their caller ("" otherwise).
type csrfKey struct {
	service  erp.Service
	identity string
}

// csrfIdentities bounds the identities whose tokens are kept per service;
// beyond it the cache starts afresh and tokens are fetched again.
const csrfIdentities = 1000

// csrfCache holds a token per service (and identity); the zero value is
// ready.
type csrfCache struct {
	mu      sync.Mutex
	entries map[csrfKey]*csrfEntry
}

func (cc *csrfCache) entry(k csrfKey) *csrfEntry {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.entries == nil || len(cc.entries) >= csrfIdentities*len(erp.Services) {
		cc.entries = map[csrfKey]*csrfEntry{}
	}
	e := cc.entries[k]
	if e == nil {
		e = &csrfEntry{fetching: make(chan struct{}, 1)}
		cc.entries[k] = e
	}
	return e
}

// csrfEntry is the cache entry of the service's token for a call of ctx:
// one per service, or per service and identity when calls sign in as
// their caller.
func (c *Client) csrfEntry(ctx context.Context, svc erp.Service) *csrfEntry {
	k := csrfKey{service: svc}
	switch {
	case c.csrfPerIdentity && c.exchange != nil:
		k.identity = c.exchange.identity(ctx)
	case c.csrfPerIdentity:
		k.identity = c.saml.identity(ctx)
	}
	return c.csrf.entry(k)
}

// csrfToken returns the cached token of the service of the write w,
// fetching one when there is none or the cached state is stale (the server
// just refused a write made with it). A fetch answered without a token
// gives the state none, logged once per service: the write goes without a
// token, as SAP's Cloud SDK sends it. A failed fetch names the ids w is
// about.
func (c *Client) csrfToken(ctx context.Context, w request, stale *csrfState) (csrfState, error) {
	svc := w.call.Service
	e := c.csrfEntry(ctx, svc)
	usable := func(st csrfState) bool { return st.known() && (stale == nil || !st.same(*stale)) }
	if st := e.get(); usable(st) {
		return st, nil
	}
	r := request{
		call:   retry.Call{Service: svc, Operation: "fetch csrf token"},
		method: http.MethodGet,
		url:    c.url(svc, ""),
		header: http.Header{"X-Csrf-Token": {"Fetch"}},
		keys:   w.keys,
		key:    w.key,
		// The service root answers for any service that is published: a
		// 404 here means the service is missing, never the entity the
		// write is about.
		root: true,
	}
	select {
	case e.fetching <- struct{}{}:
	case <-ctx.Done():
		return csrfState{}, r.transportError(ctx, ctx, ctx.Err())
	}
	defer func() { <-e.fetching }()
	if st := e.get(); usable(st) {
		return st, nil
	}

	var st csrfState
	_, err := c.do(ctx, r, func(h http.Header, _ []byte) error {
		var ok bool
		if st, ok = tokenState(h); !ok {
			st = csrfState{none: true, cookies: (&http.Response{Header: h}).Cookies()}
		}
		return nil
	})
	if err != nil {
		return csrfState{}, err
	}
	if st.none && !e.warned.Swap(true) {
		c.log.WarnContext(ctx, "sap: the ERP sent no CSRF token; writes to the service go without one",
			"service", string(svc))
	}
	e.set(st)
	return st, nil
}

// tokenState is the CSRF token an answer to X-CSRF-Token: Fetch carries,
// with the session cookies it set; false when it carries none.
func tokenState(h http.Header) (csrfState, bool) {
	tok := strings.TrimSpace(h.Get("X-CSRF-Token"))
	if tok == "" || strings.EqualFold(tok, "Required") || strings.EqualFold(tok, "Fetch") {
		return csrfState{}, false
	}
	return csrfState{token: tok, cookies: (&http.Response{Header: h}).Cookies()}, true
}

// write sends a state-changing request with the service's CSRF token, or
// without one to a service whose fetch brought none. When the server
// answers 403 with X-CSRF-Token: Required, the token is fetched again and
// the request repeated exactly once; refused again, the request fails as
// a fault of configuration (UpstreamError.Config), never to be retried:
// the ERP asks for a token it does not take or does not hand out.
func (c *Client) write(ctx context.Context, r request, decode decoder) (reply, error) {
	e := c.csrfEntry(ctx, r.call.Service)
	var stale *csrfState
	for try := 0; ; try++ {
		st, err := c.csrfToken(ctx, r, stale)
		if err != nil {
			return reply{}, err
		}
		rr := r
		if st.token != "" {
			rr.header = r.header.Clone()
			if rr.header == nil {
				rr.header = http.Header{}
			}
			rr.header.Set("X-CSRF-Token", st.token)
		}
		rr.cookies = st.cookies
		required := false
		rr.csrfRequired = &required
		rep, err := c.do(ctx, rr, decode)
		if err != nil && required {
			e.invalidate(st)
			if try == 0 {
				stale = &st
				continue
			}
			csrfRefused(err, st)
		}
		return rep, err
	}
}

// csrfRefused marks err, a write's second 403 asking for a CSRF token, as
// the fault of configuration it is, and says why for the log.
func csrfRefused(err error, st csrfState) {
	up, ok := errors.AsType[*erp.UpstreamError](err)
	if !ok {
		return
	}
	up.Config = true
	why := "the ERP refuses the CSRF token it just handed out"
	if st.none {
		why = "the ERP asks for a CSRF token but sends none on a fetch"
	}
	up.Text = strings.TrimSuffix(why+": "+up.Text, ": ")
}
