package sim

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// FaultKind is what an injected fault does to a request.
type FaultKind string

// The fault kinds.
const (
	// FaultStatus answers with Status and an error envelope; 429 and 503
	// carry Retry-After.
	FaultStatus FaultKind = "status"
	// FaultHTML500 answers 500 with an HTML page, as a proxy in front of
	// the gateway does.
	FaultHTML500 FaultKind = "html500"
	// FaultMalformed answers 200 with a truncated JSON body.
	FaultMalformed FaultKind = "malformed"
	// FaultReset closes the connection without an answer.
	FaultReset FaultKind = "reset"
	// FaultHang waits DelayMS, or until the client goes away, and then
	// serves the request normally.
	FaultHang FaultKind = "hang"
	// FaultLost serves the request, applying any write, and then closes the
	// connection so the client never sees the answer.
	FaultLost FaultKind = "lost"
)

// AnyService makes a fault rule match requests to every service.
const AnyService erp.Service = "*"

// DefaultHangDelay is how long a hang fault waits when DelayMS is zero.
const DefaultHangDelay = 30 * time.Second

// FaultRule injects a fault into the next Count OData requests to Service.
// Admin requests are never affected, nor are CSRF fetches (GET of a
// service root) unless IncludeFetch is set.
type FaultRule struct {
	// Service is the erp.Service to affect, or AnyService ("*"); empty
	// means AnyService.
	Service erp.Service `json:"service"`
	Kind    FaultKind   `json:"kind"`
	// Status is the HTTP status (400-599) for FaultStatus; zero means 503.
	Status int `json:"status,omitempty"`
	// RetryAfterS is the Retry-After value in seconds for 429 and 503;
	// zero sends 1 with a 429 and nothing with a 503.
	RetryAfterS int `json:"retry_after_s,omitempty"`
	// Count is how many matching requests the rule affects: zero means one,
	// a negative count means every request until the faults are cleared.
	Count int `json:"count,omitempty"`
	// DelayMS is how long FaultHang waits; zero means DefaultHangDelay.
	DelayMS int `json:"delay_ms,omitempty"`
	// IncludeFetch lets the rule affect CSRF token fetches too.
	IncludeFetch bool `json:"include_fetch,omitempty"`
}

func (f FaultRule) validate() error {
	switch f.Service {
	case "", AnyService, erp.ServiceSupplierInvoice, erp.ServicePurchaseOrder,
		erp.ServiceMaterialDocument, erp.ServiceBusinessPartner, erp.ServiceProcess:
	default:
		return fmt.Errorf("sim: unknown service %q in fault rule", f.Service)
	}
	switch f.Kind {
	case FaultStatus:
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return fmt.Errorf("sim: invalid status %d in fault rule", f.Status)
		}
	case FaultHTML500, FaultMalformed, FaultReset, FaultHang, FaultLost:
	default:
		return fmt.Errorf("sim: unknown fault kind %q", f.Kind)
	}
	if f.DelayMS < 0 || f.RetryAfterS < 0 {
		return fmt.Errorf("sim: negative delay_ms or retry_after_s in fault rule")
	}
	return nil
}

// activeFault is a rule with the number of requests it still affects;
// left < 0 means no limit.
type activeFault struct {
	rule FaultRule
	left int
}

func newActiveFault(rule FaultRule) *activeFault {
	if rule.Service == "" {
		rule.Service = AnyService
	}
	if rule.Kind == FaultStatus && rule.Status == 0 {
		rule.Status = http.StatusServiceUnavailable
	}
	left := rule.Count
	if left == 0 {
		left = 1
	}
	return &activeFault{rule: rule, left: left}
}

// InjectFault adds a fault rule after the ones already in force.
func (s *Server) InjectFault(rule FaultRule) error {
	if err := rule.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, newActiveFault(rule))
	return nil
}

// ClearFaults removes every fault rule.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Faults returns the rules in force, with Count set to the number of
// requests each still affects.
func (s *Server) Faults() []FaultRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FaultRule, 0, len(s.faults))
	for _, f := range s.faults {
		r := f.rule
		r.Count = f.left
		out = append(out, r)
	}
	return out
}

// takeFault consumes one use of the first rule matching the request.
func (s *Server) takeFault(svc erp.Service, fetch bool) (FaultRule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.rule.Service != AnyService && f.rule.Service != svc {
			continue
		}
		if fetch && !f.rule.IncludeFetch {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return f.rule, true
	}
	return FaultRule{}, false
}

// injectFault applies rule to the request and reports whether it answered
// (or dropped) it; false means the request is to be served normally.
func (s *Server) injectFault(w http.ResponseWriter, r *http.Request, svc *service, sub string, rule FaultRule) bool {
	switch rule.Kind {
	case FaultStatus:
		resp := s.errorResponse(svc, statusFault(rule.Status))
		if rule.Status == http.StatusTooManyRequests || (rule.Status == http.StatusServiceUnavailable && rule.RetryAfterS > 0) {
			resp.header.Set("Retry-After", strconv.Itoa(max(rule.RetryAfterS, 1)))
		} else if rule.RetryAfterS > 0 {
			resp.header.Set("Retry-After", strconv.Itoa(rule.RetryAfterS))
		}
		resp.write(w)
	case FaultHTML500:
		textResponse(http.StatusInternalServerError, "text/html; charset=utf-8",
			"<html><body><h1>500</h1>Connection timed out</body></html>").write(w)
	case FaultMalformed:
		textResponse(http.StatusOK, "application/json; charset=utf-8",
			`{"d":{"results":[{"__metadata":{"id":"`+servicePrefix+svc.name+`/`).write(w)
	case FaultReset:
		dropConnection(w, true)
	case FaultHang:
		// Read the body first: only then does the server notice a client
		// that gives up, so a write that timed out is not applied later.
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			dropConnection(w, false)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		delay := DefaultHangDelay
		if rule.DelayMS > 0 {
			delay = time.Duration(rule.DelayMS) * time.Millisecond
		}
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
			return false
		case <-r.Context().Done():
			// The client left or the server is shutting down: an empty 200
			// would look like an answer, so drop the connection instead.
			dropConnection(w, false)
			return true
		}
	case FaultLost:
		s.odata(r, svc, sub)
		dropConnection(w, false)
	default:
		return false
	}
	return true
}

// statusFault is the envelope an injected status comes with.
func statusFault(status int) *apiError {
	switch {
	case status == http.StatusTooManyRequests:
		return newError(status, "/IWFND/CM_CONSUMER/429", "Too many requests; the request limit of the service has been reached")
	case status >= 500:
		return newError(status, "/IWFND/CM_BEC/026",
			fmt.Sprintf("SAP backend system is not available (%d %s)", status, http.StatusText(status)))
	default:
		return newError(status, fmt.Sprintf("/IWFND/CM_CONSUMER/%03d", status), http.StatusText(status))
	}
}

// dropConnection closes the client's connection without an answer; reset
// makes the close abortive so the client sees "connection reset by peer".
func dropConnection(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Connections that cannot be hijacked (HTTP/2) are aborted by the
		// server when the handler panics with this sentinel.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
