package sap

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// csrfState is a CSRF token and the session cookies it is bound to.
type csrfState struct {
	token   string
	cookies []*http.Cookie
}

// csrfEntry is the cached token of one service.
type csrfEntry struct {
	// fetching is held while a token is fetched, so that concurrent writers
	// share one fetch instead of replacing each other's session.
	fetching chan struct{}
	mu       sync.Mutex
	state    csrfState
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

// invalidate drops the token if it is still the one cached.
func (e *csrfEntry) invalidate(token string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.token == token {
		e.state = csrfState{}
	}
}

// csrfCache holds a token per service; the zero value is ready.
type csrfCache struct {
	mu      sync.Mutex
	entries map[erp.Service]*csrfEntry
}

func (cc *csrfCache) entry(svc erp.Service) *csrfEntry {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.entries == nil {
		cc.entries = map[erp.Service]*csrfEntry{}
	}
	e := cc.entries[svc]
	if e == nil {
		e = &csrfEntry{fetching: make(chan struct{}, 1)}
		cc.entries[svc] = e
	}
	return e
}

// csrfToken returns the cached token of the service of the write w,
// fetching one when there is none or the cached one is stale (the server
// just refused it). A failed fetch names the ids w is about.
func (c *Client) csrfToken(ctx context.Context, w request, stale string) (csrfState, error) {
	svc := w.call.Service
	e := c.csrf.entry(svc)
	if st := e.get(); st.token != "" && st.token != stale {
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
	if st := e.get(); st.token != "" && st.token != stale {
		return st, nil
	}

	var st csrfState
	_, err := c.do(ctx, r, func(h http.Header, _ []byte) error {
		var ok bool
		if st, ok = tokenState(h); !ok {
			return errors.New("no X-CSRF-Token in the fetch response")
		}
		return nil
	})
	if err != nil {
		return csrfState{}, err
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

// write sends a state-changing request with the service's CSRF token. When
// the server answers 403 with X-CSRF-Token: Required, the token is fetched
// again and the request repeated exactly once.
func (c *Client) write(ctx context.Context, r request, decode decoder) (reply, error) {
	e := c.csrf.entry(r.call.Service)
	stale := ""
	for try := 0; ; try++ {
		st, err := c.csrfToken(ctx, r, stale)
		if err != nil {
			return reply{}, err
		}
		rr := r
		rr.header = r.header.Clone()
		if rr.header == nil {
			rr.header = http.Header{}
		}
		rr.header.Set("X-CSRF-Token", st.token)
		rr.cookies = st.cookies
		required := false
		rr.csrfRequired = &required
		rep, err := c.do(ctx, rr, decode)
		if err != nil && required {
			e.invalidate(st.token)
			if try == 0 {
				stale = st.token
				continue
			}
		}
		return rep, err
	}
}
