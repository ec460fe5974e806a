package retry

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/erpgate/erpgate/erp"
)

// Class sorts a failed attempt for the retry decision.
type Class int

// The classes of failure.
const (
	// Permanent failures are answers: a business error, a bad request, a
	// cancelled call. Retrying cannot change them.
	Permanent Class = iota
	// Transient failures may pass: 429, 502, 503, 504, a non-JSON 5xx, a
	// refused connection, a read that timed out.
	Transient
	// OutcomeUnknown is a write whose answer was lost: it may or may not
	// have been applied.
	OutcomeUnknown
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case OutcomeUnknown:
		return "unknown_outcome"
	}
	return "permanent"
}

// DefaultClassify classifies by the typed errors of the ERP layer, never by
// text. For a write, anything after the request may have reached the ERP
// (a timeout, a broken connection, a proxy's 502 or 504, an unreadable
// success) is OutcomeUnknown; only a refused connection, 429 and 503 say
// the ERP did not take it.
func DefaultClassify(err error, write bool) Class {
	var up *erp.UpstreamError
	if !errors.As(err, &up) || errors.Is(err, context.Canceled) {
		return Permanent
	}
	switch {
	case up.BreakerOpen, up.Config:
		// A configuration fault (credentials, authorisations, a service
		// not activated) does not heal by trying again.
		return Permanent
	case write && up.Status == 0 && isDial(up.Err):
		return Transient
	case write && (up.Timeout || up.Status == 0 || (up.Status >= 200 && up.Status < 300)):
		return OutcomeUnknown
	case write && (up.Status == http.StatusTooManyRequests || up.Status == http.StatusServiceUnavailable):
		return Transient
	case write && up.Transient:
		return OutcomeUnknown
	case up.Transient || up.Timeout || up.Status == 0 || (up.Status >= 200 && up.Status < 300):
		return Transient
	}
	return Permanent
}

func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
