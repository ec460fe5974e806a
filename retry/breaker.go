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
//
// The breaker is for an ERP that is down, not for one that fails some of
// its calls: it opens on the share of failed attempts in a short rolling
// window, never on a run of failures. Under concurrent load the failures
// of a brown-out finish close together, and a run of ten of them comes
// often enough at 20 % to shut a working service off.
type BreakerSettings struct {
	// Disabled turns the breakers off.
	Disabled bool
	// OpenFor is how long a breaker stays open before it lets a probe
	// through (half-open). Default 5s.
	OpenFor time.Duration
	// Window is the rolling window the failure counts cover, in ten
	// buckets. Default 1s: an ERP that went down fails FailureRatio of a
	// window's attempts after 0.9 of it, so the breaker opens within a
	// second of the outage, however busy the service was before.
	Window time.Duration
	// MinRequests is how many attempts the window needs before the failure
	// ratio can open the breaker. Default 20.
	MinRequests uint32
	// FailureRatio opens the breaker when at least this share of the
	// window's attempts failed. Default 0.9: a brown-out of 30 % is the
	// retry budget's to absorb, and a breaker that opened under it would
	// refuse calls the ERP could still serve.
	FailureRatio float64
}

func (s BreakerSettings) withDefaults() BreakerSettings {
	if s.OpenFor <= 0 {
		s.OpenFor = 5 * time.Second
	}
	if s.Window <= 0 {
		s.Window = time.Second
	}
	if s.MinRequests == 0 {
		s.MinRequests = 20
	}
	if s.FailureRatio <= 0 || s.FailureRatio > 1 {
		s.FailureRatio = 0.9
	}
	return s
}

// windowBuckets is how many buckets a breaker's window has.
const windowBuckets = 10

// window counts a breaker's attempts and failures over the last Window on
// the runner's clock, in buckets: gobreaker's own rolling counts read the
// wall clock, which tests cannot move.
type window struct {
	mu     sync.Mutex
	bucket time.Duration
	slots  [windowBuckets]struct {
		at           int64 // the bucket's number since the epoch
		calls, fails uint32
	}
}

// record counts an attempt that ended at now.
func (w *window) record(now time.Time, failed bool) {
	at := now.UnixNano() / int64(w.bucket)
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.slots[at%windowBuckets]
	if s.at != at {
		s.at, s.calls, s.fails = at, 0, 0
	}
	s.calls++
	if failed {
		s.fails++
	}
}

// counts returns the attempts and failures of the window ending at now.
func (w *window) counts(now time.Time) (calls, fails uint32) {
	at := now.UnixNano() / int64(w.bucket)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.slots {
		if s.at > at-windowBuckets && s.at <= at {
			calls += s.calls
			fails += s.fails
		}
	}
	return calls, fails
}

func (w *window) clear() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.slots {
		w.slots[i].calls, w.slots[i].fails = 0, 0
	}
}

// errPanicked is what the breaker counts for an attempt that panicked.
var errPanicked = errors.New("attempt panicked")

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
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	window   *window
	now      func() time.Time
	openFor  time.Duration
	openedAt atomic.Int64 // unix nanoseconds
	disabled bool
}

type breakers struct {
	settings BreakerSettings
	now      func() time.Time
	obs      Observer
	// made holds the breakers made, for get to find without the lock.
	made sync.Map // Service -> *breaker
	mu   sync.Mutex
	m    map[Service]*breaker
}

func newBreakers(s BreakerSettings, now func() time.Time, obs Observer) *breakers {
	return &breakers{settings: s, now: now, obs: obs, m: map[Service]*breaker{}}
}

func (bs *breakers) get(svc Service) *breaker {
	if b, ok := bs.made.Load(svc); ok {
		return b.(*breaker)
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.m[svc]; ok {
		return b
	}
	s := bs.settings
	b := &breaker{openFor: s.OpenFor, disabled: s.Disabled, now: bs.now,
		window: &window{bucket: max(s.Window/windowBuckets, time.Microsecond)}}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        string(svc),
		MaxRequests: 1,
		Timeout:     s.OpenFor,
		// Called under the breaker's lock after a failed attempt in the
		// closed state; the window has counted it already.
		ReadyToTrip: func(gobreaker.Counts) bool {
			calls, fails := b.window.counts(bs.now())
			return calls >= s.MinRequests && float64(fails) >= s.FailureRatio*float64(calls)
		},
		// Runs under the breaker's lock: record the time, start a fresh
		// window and tell metrics, nothing more.
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openedAt.Store(bs.now().UnixNano())
			}
			b.window.clear()
			bs.obs.BreakerState(svc, from.String(), to.String())
		},
		// A business error is an answer: the service is working.
		// Each returns before its errors.As target exists for a success:
		// the target escapes, and made first it would be allocated for
		// every attempt.
		IsSuccessful: func(err error) bool {
			if err == nil {
				return true
			}
			var a answered
			return errors.As(err, &a)
		},
		IsExcluded: func(err error) bool {
			if err == nil {
				return false
			}
			var ex excluded
			return errors.As(err, &ex) || errors.Is(err, context.Canceled)
		},
	})
	bs.m[svc] = b
	bs.made.Store(svc, b)
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
	done, err := b.cb.Allow()
	if err == nil {
		// A panic still ends the attempt, as a failure: a half-open
		// breaker would wait for its probe forever.
		finished := false
		defer func() {
			if !finished {
				done(errPanicked)
			}
		}()
		err = fn()
		finished = true
		switch {
		case err != nil && ctx.Err() != nil:
			err = excluded{err}
		case err != nil && classify(err, false) == Permanent:
			err = answered{err}
			b.window.record(b.now(), false)
		case err != nil:
			b.window.record(b.now(), true)
		default:
			b.window.record(b.now(), false)
		}
		done(err)
	}
	if err == nil {
		return nil
	}
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
