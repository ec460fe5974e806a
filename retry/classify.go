package retry

import (
	"context"
	"errors"
	"net"
)

// Class sorts a failed attempt for the retry decision.
type Class int

// The classes of failure.
const (
	// Permanent failures are answers: a business error, a bad request, a
	// cancelled call. Retrying cannot change them.
	Permanent Class = iota
	// Transient failures may pass: an overloaded or unreachable service, a
	// read that timed out.
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

// DefaultClassify knows no caller's error types, only those of the
// standard library: a cancelled call is permanent; a refused connection is
// transient; a timeout or another network failure is transient for a read
// and outcome-unknown for a write, which may have reached the service.
// Everything else is permanent. Callers that know their errors set
// Call.Classify or Policy.Classify.
func DefaultClassify(err error, write bool) Class {
	if errors.Is(err, context.Canceled) {
		return Permanent
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return Transient
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		if write {
			return OutcomeUnknown
		}
		return Transient
	}
	return Permanent
}

// defaultResult names a failed attempt for the Observer when the call
// gives no Result: "timeout" for a deadline, else "error".
func defaultResult(err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return "timeout"
	}
	return "error"
}
