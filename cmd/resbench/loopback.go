package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/erpgate/erpgate/retry/quotatest"
)

// odataPrefix is where the ERP's OData services live.
const odataPrefix = "/sap/opu/odata/"

// loopback is an HTTP server on a 127.0.0.1 port of its own.
type loopback struct {
	url  string
	srv  *http.Server
	done chan struct{}
}

// serveLoopback serves h on a fresh loopback port until closed.
func serveLoopback(h http.Handler) (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &loopback{
		url:  "http://" + ln.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(l.done)
		_ = l.srv.Serve(ln) // always ErrServerClosed once shut down
	}()
	return l, nil
}

// shutdown stops accepting, lets the requests in progress finish for up to
// grace, then closes every connection.
func (l *loopback) shutdown(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := l.srv.Shutdown(ctx); errors.Is(err, context.DeadlineExceeded) {
		_ = l.srv.Close()
	}
	<-l.done
}

// callCounter counts the ERP calls that reach the handler it wraps: OData
// requests, not CSRF token fetches. It notes when every request to the
// OData services arrived, CSRF token fetches too, for the ERP's quota.
type callCounter struct {
	next  http.Handler
	calls atomic.Int64

	mu       sync.Mutex
	arrivals []time.Time
}

// ServeHTTP counts the request when it is an ERP call and serves it.
func (c *callCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, odataPrefix) {
		now := time.Now()
		c.mu.Lock()
		c.arrivals = append(c.arrivals, now)
		c.mu.Unlock()
	}
	if isERPCall(r) {
		c.calls.Add(1)
	}
	c.next.ServeHTTP(w, r)
}

// busiest returns the most requests that arrived in any 1 s window from
// since on, wherever it starts (the busiest starts at an arrival).
func (c *callCounter) busiest(since time.Time) int {
	c.mu.Lock()
	at := slices.Clone(c.arrivals)
	c.mu.Unlock()
	at = slices.DeleteFunc(at, func(t time.Time) bool { return t.Before(since) })
	return quotatest.Busiest(at, time.Second)
}

// isERPCall tells an OData request from a CSRF token fetch and from
// everything else the simulator serves.
func isERPCall(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, odataPrefix) &&
		!strings.EqualFold(r.Header.Get("X-CSRF-Token"), "Fetch")
}
