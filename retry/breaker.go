package retry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// BreakerSettings configures the circuit breaker of each ERP service. The
// zero value enables them with the defaults beside each field.
type BreakerSettings struct {
	// Disabled turns the breakers off.
	Disabled bool
	// OpenFor is how long a breaker stays open before it lets a probe
	// through (half-open). Default 5s.
	OpenFor time.Duration
	// Window is the rolling window the failure counts cover. Default 10s.
	Window time.Duration
	// MinRequests is how many attempts the window needs before the failure
	// ratio can open the breaker. Default 20.
	MinRequests uint32
	// FailureRatio opens the breaker when this share of the window's
	// attempts failed. Default 0.8: the breaker is for an ERP that is down;
	// a brown-out is the retry budget's to absorb, and a breaker that
	// opened at 50 % would refuse calls the ERP could still serve.
	FailureRatio float64
	// ConsecutiveFailures opens the breaker after this many failures in a
	// row, however few attempts the window holds. Default 10: under
	// concurrent load a brown-out of 30 % gives runs of 5 now and then,
	// and those must not shut the service off.
	ConsecutiveFailures uint32
}

func (s BreakerSettings) withDefaults() BreakerSettings {
	if s.OpenFor <= 0 {
		s.OpenFor = 5 * time.Second
	}
	if s.Window <= 0 {
		s.Window = 10 * time.Second
	}
	if s.MinRequests == 0 {
		s.MinRequests = 20
	}
	if s.FailureRatio <= 0 || s.FailureRatio > 1 {
		s.FailureRatio = 0.8
	}
	if s.ConsecutiveFailures == 0 {
		s.ConsecutiveFailures = 10
	}
	return s
}

// excluded marks an attempt the breaker must not count: the caller went
// away, which says nothing about the ERP.
type excluded struct{ err error }

func (e excluded) Error() string { return e.err.Error() }
func (e excluded) Unwrap() error { return e.err }

// answered marks a failed attempt the breaker counts as a success: the
// service gave an answer (a permanent failure), so it is working.
type answered struct{ err error }

func (e answered) Error() string { return e.err.Error() }
func (e answered) Unwrap() error { return e.err }

// breaker is one service's gobreaker with the time it opened, so a refused
// call can say when the next probe goes through.
type breaker struct {
	cb       *gobreaker.CircuitBreaker[struct{}]
	openFor  time.Duration
	openedAt atomic.Int64 // unix nanoseconds
	disabled bool
}

type breakers struct {
	settings BreakerSettings
	now      func() time.Time
	obs      Observer
	mu       sync.Mutex
	m        map[Service]*breaker
}

func newBreakers(s BreakerSettings, now func() time.Time, obs Observer) *breakers {
	return &breakers{settings: s, now: now, obs: obs, m: map[Service]*breaker{}}
}

func (bs *breakers) get(svc Service) *breaker {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m[svc]; ok {
		return b
	}
	s := bs.settings
	b := &breaker{openFor: s.OpenFor, disabled: s.Disabled}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         string(svc),
		MaxRequests:  1,
		Interval:     s.Window,
		BucketPeriod: s.Window / 10,
		Timeout:      s.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= s.ConsecutiveFailures ||
				(c.Requests >= s.MinRequests && float64(c.TotalFailures) >= s.FailureRatio*float64(c.Requests))
		},
		// Runs under the breaker's lock: record the time and tell metrics,
		// nothing more.
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openedAt.Store(bs.now().UnixNano())
			}
			bs.obs.BreakerState(svc, from.String(), to.String())
		},
		// A business error is an answer: the service is working.
		IsSuccessful: func(err error) bool {
			var a answered
			return err == nil || errors.As(err, &a)
		},
		IsExcluded: func(err error) bool {
			var ex excluded
			return errors.As(err, &ex) || errors.Is(err, context.Canceled)
		},
	})
	bs.m[svc] = b
	return b
}

// states returns every breaker's state by service.
func (bs *breakers) states() map[Service]string {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	out := make(map[Service]string, len(bs.m))
	for svc, b := range bs.m {
		out[svc] = b.cb.State().String()
	}
	return out
}

// run runs fn through the breaker; classify (as for a read) tells an
// answer from a failure. A refused call returns ErrBreakerOpen.
func (b *breaker) run(ctx context.Context, classify func(error, bool) Class, fn func() error) error {
	if b.disabled {
		return fn()
	}
	_, err := b.cb.Execute(func() (struct{}, error) {
		err := fn()
		switch {
		case err != nil && ctx.Err() != nil:
			return struct{}{}, excluded{err}
		case err != nil && classify(err, false) == Permanent:
			return struct{}{}, answered{err}
		}
		return struct{}{}, err
	})
	var (
		ex excluded
		an answered
	)
	switch {
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return ErrBreakerOpen
	case errors.As(err, &ex):
		return ex.err
	case errors.As(err, &an):
		return an.err
	}
	return err
}

// open reports whether the breaker refuses calls now.
func (b *breaker) open() bool {
	return !b.disabled && b.cb.State() == gobreaker.StateOpen
}

// untilProbe is how long until the breaker lets the next probe through; at
// least a second, the unit the agent is told.
func (b *breaker) untilProbe(now time.Time) time.Duration {
	d := time.Unix(0, b.openedAt.Load()).Add(b.openFor).Sub(now)
	if d < time.Second {
		return time.Second
	}
	return d
}

// BreakerStates returns the state of each service's breaker: closed,
// half-open or open. Services not called yet are absent.
func (r *Runner) BreakerStates() map[Service]string {
	return r.breakers.states()
}
