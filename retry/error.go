package retry

import (
	"errors"
	"fmt"
	"time"
)

// ErrBreakerOpen is the Err of an *Error for a call the open circuit
// breaker refused before any attempt was let through.
var ErrBreakerOpen = errors.New("circuit breaker open")

// Error is how a call failed: the last attempt's error (or ErrBreakerOpen)
// with what the Runner knows of the call. Error and Unwrap are those of
// the last attempt's error, so errors.As finds the caller's own types
// through it.
type Error struct {
	Service   Service
	Operation string
	Write     bool
	// Attempts is how many attempts were made; 0 for a call the breaker
	// refused at once.
	Attempts int
	// Unconfirmed says an attempt of the write may have been applied: its
	// answer was lost and no read settled it.
	Unconfirmed bool
	// BreakerOpen says the service's circuit breaker refused the call (or
	// its retry) because it is open.
	BreakerOpen bool
	// QuotaLimit, for a call the ERP's quota refused (Err is ErrQuota),
	// names the limit reached: QuotaRate, QuotaInFlight or
	// QuotaUnavailable.
	QuotaLimit string
	// RetryAfter, for a refusal of the breaker, is the time until it lets a
	// probe through; for a refusal of the quota, the time until a slot is
	// likely to be free.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err == ErrBreakerOpen || e.Err == ErrQuota {
		return fmt.Sprintf("%s: %s: %v", e.Service, e.Operation, e.Err)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }
