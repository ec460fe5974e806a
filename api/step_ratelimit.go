package api

import (
	"errors"
	"hash/maphash"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/httprate"

	"github.com/erpgate/erpgate/api/refusal"
)

// limitRate counts the call against its client's rate limit
// (Options.RateLimit) and refuses it, RATE_LIMITED, once the window's calls
// are spent. Without a limit the step is left out.
func (s *Server) limitRate(o operation, next callHandler) callHandler {
	if s.limiter == nil {
		return next
	}
	return func(c *operationCall) *response {
		if err := s.rateLimit(c.r, c.client); err != nil {
			return s.failure(c.r, err, c.record)
		}
		return next(c)
	}
}

// rateLimit refuses the call, retryable, when its client's calls in the
// window are spent. Clients are told apart by their API key, or by source
// address when the gateway has no keys.
func (s *Server) rateLimit(r *http.Request, c *Credential) error {
	key := "client:" + c.Name
	if c == &anonymous {
		key = "addr:" + s.sourceOf(r)
	}
	if wait, limited := onLimit(s.limiter, r, key); limited {
		return refusal.RateLimited{Reason: refusal.RateCalls, RetryAfter: wait}
	}
	return nil
}

// onLimit counts a call against key and reports whether the limiter
// refuses it, with the seconds to wait.
func onLimit(l *httprate.RateLimiter, r *http.Request, key string) (wait int, limited bool) {
	hdr := &bufferedWriter{header: http.Header{}}
	if !l.OnLimit(hdr, r, key) {
		return 0, false
	}
	wait, err := strconv.Atoi(hdr.header.Get("Retry-After"))
	if err != nil || wait < 1 {
		wait = 1
	}
	return wait, true
}

// DefaultAuthFailSources is how many source addresses the count of failed
// authentications keeps per window (Options.AuthFailLimit), so that a
// flood from many addresses holds a bounded table (a few MiB); a failure
// from an address beyond it is refused as over its limit.
const DefaultAuthFailSources = 100_000

// newAuthFailLimiter returns the limiter of failed authentications: limit
// per window and source address, in a table of at most sources addresses.
func newAuthFailLimiter(limit int, window time.Duration, sources int) *httprate.RateLimiter {
	return httprate.NewRateLimiter(limit, window,
		httprate.WithLimitCounter(&boundedCounter{max: sources, seed: maphash.MakeSeed()}))
}

// authFailed counts a failed authentication of r's source and returns the
// RATE_LIMITED refusal that replaces UNAUTHENTICATED once the source has
// failed more often than Options.AuthFailLimit allows in the window.
// Valid credentials are never refused by it: behind a NAT or a proxy one
// address carries many clients, and one of them with a wrong key must not
// lock the others out.
func (s *Server) authFailed(r *http.Request) error {
	if s.authFails == nil {
		return nil
	}
	if wait, limited := onLimit(s.authFails, r, s.sourceOf(r)); limited {
		return refusal.RateLimited{Reason: refusal.RateAuthFailures, RetryAfter: wait}
	}
	return nil
}

// sourceOf is the address a request comes from, as the limits by address
// count it: the peer's address, or, when the peer is one of
// Options.TrustedProxies, the last address of X-Forwarded-For that is not
// one of them. An IPv6 address counts as its /64, which one host usually
// holds whole.
func (s *Server) sourceOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if s.trusted(addr) {
		hops := r.Header.Values("X-Forwarded-For")
	walk:
		for i := len(hops) - 1; i >= 0; i-- {
			parts := strings.Split(hops[i], ",")
			for j := len(parts) - 1; j >= 0; j-- {
				hop, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
				if err != nil {
					break walk // a hop that is no address: the last good one stands
				}
				addr = hop.Unmap()
				if !s.trusted(addr) {
					break walk
				}
			}
		}
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// trusted reports whether addr is one of Options.TrustedProxies.
func (s *Server) trusted(addr netip.Addr) bool {
	for _, p := range s.trustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// errSourcesFull is the boundedCounter's refusal of a new key once its
// table is full.
var errSourcesFull = errors.New("rate limit table full")

// boundedCounter is an httprate.LimitCounter in memory, like httprate's
// own, that keeps the counts of the current and the previous window only
// and at most max keys per window: a new key beyond them is an error,
// which httprate takes as over the limit.
type boundedCounter struct {
	mu               sync.Mutex
	max              int
	seed             maphash.Seed
	window           time.Duration
	latestWindow     time.Time
	latest, previous map[uint64]int
}

var _ httprate.LimitCounter = (*boundedCounter)(nil)

// Config implements httprate.LimitCounter.
func (c *boundedCounter) Config(_ int, window time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.window = window
	c.latestWindow = time.Now().UTC().Truncate(window)
	c.latest, c.previous = map[uint64]int{}, map[uint64]int{}
}

// Increment implements httprate.LimitCounter.
func (c *boundedCounter) Increment(key string, currentWindow time.Time) error {
	return c.IncrementBy(key, currentWindow, 1)
}

// IncrementBy implements httprate.LimitCounter.
func (c *boundedCounter) IncrementBy(key string, currentWindow time.Time, amount int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shift(currentWindow)
	h := maphash.String(c.seed, key)
	n, ok := c.latest[h]
	if !ok && len(c.latest) >= c.max {
		return errSourcesFull
	}
	c.latest[h] = n + amount
	return nil
}

// Get implements httprate.LimitCounter.
func (c *boundedCounter) Get(key string, currentWindow, previousWindow time.Time) (int, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := maphash.String(c.seed, key)
	switch {
	case c.latestWindow.Equal(currentWindow):
		return c.latest[h], c.previous[h], nil
	case c.latestWindow.Equal(previousWindow):
		return 0, c.latest[h], nil
	}
	return 0, 0, nil
}

// shift moves the windows on to currentWindow, dropping the counts of
// every window before the previous one.
func (c *boundedCounter) shift(currentWindow time.Time) {
	if c.latestWindow.Equal(currentWindow) {
		return
	}
	if c.latestWindow.Equal(currentWindow.Add(-c.window)) {
		clear(c.previous)
		c.latest, c.previous = c.previous, c.latest
	} else {
		clear(c.previous)
		clear(c.latest)
	}
	c.latestWindow = currentWindow
}

// size is the number of keys the counter holds.
func (c *boundedCounter) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.latest) + len(c.previous)
}
