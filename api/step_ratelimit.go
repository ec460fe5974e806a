package api

import (
	"net"
	"net/http"
	"strconv"

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
// window are spent. Clients are told apart by their API key, or by address
// when the gateway has no keys.
func (s *Server) rateLimit(r *http.Request, c *Credential) error {
	key := "client:" + c.Name
	if c == &anonymous {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		key = "addr:" + host
	}
	hdr := &bufferedWriter{header: http.Header{}}
	if !s.limiter.OnLimit(hdr, r, key) {
		return nil
	}
	wait, err := strconv.Atoi(hdr.header.Get("Retry-After"))
	if err != nil || wait < 1 {
		wait = 1
	}
	return refusal.RateLimited{Reason: refusal.RateCalls, RetryAfter: wait}
}
