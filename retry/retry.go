// Package retry makes one ERP call safe. Every call from an ERP adapter goes
// through a Runner, which
//   - bounds each attempt with a timeout, and the whole call with a
//     deadline, under the request's context;
//   - retries transient failures with exponential backoff and full jitter
//     (github.com/cenkalti/backoff/v4), honouring Retry-After when it fits
//     the deadline;
//   - keeps one circuit breaker per ERP service (github.com/sony/gobreaker/v2)
//     and fails fast while it is open;
//   - spends retries from a token bucket per service, so that a brown-out
//     never multiplies the ERP's load;
//   - retries a write only when the ERP deduplicates it or a read shows it
//     was not applied, so no write is applied twice.
//
// The agent never becomes the retry engine: what leaves Do is either a
// result or a failure the gateway has already retried as far as is safe.
package retry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/erpgate/erpgate/erp"
)

// Policy configures a Runner. The zero value is usable: every zero field
// takes the default documented beside it.
type Policy struct {
	// MaxAttempts is the most attempts one call makes. Default 3; 1 turns
	// retries off.
	MaxAttempts int
	// InitialInterval is the first backoff before jitter. Default 200ms.
	InitialInterval time.Duration
	// MaxInterval caps one backoff before jitter. Default 2s.
	MaxInterval time.Duration
	// Multiplier grows the backoff after each retry. Default 2.
	Multiplier float64
	// AttemptTimeout bounds one attempt. Default 3s.
	AttemptTimeout time.Duration
	// CallTimeout bounds the whole call, retries and waits included, under
	// the caller's own deadline. Default 10s.
	CallTimeout time.Duration
	// Classify sorts a failed attempt into permanent, transient or
	// outcome-unknown. Default DefaultClassify.
	Classify func(err error, write bool) Class
	// Breaker configures the circuit breakers.
	Breaker BreakerSettings
	// Budget configures the retry budget.
	Budget BudgetSettings
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends. Default a timer; tests replace it so
	// that they never sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1) that scales each backoff (full
	// jitter). Default math/rand/v2.
	Jitter func() float64
}

// Defaults of Policy.
const (
	DefaultMaxAttempts     = 3
	DefaultInitialInterval = 200 * time.Millisecond
	DefaultMaxInterval     = 2 * time.Second
	DefaultMultiplier      = 2.0
	DefaultAttemptTimeout  = 3 * time.Second
	DefaultCallTimeout     = 10 * time.Second
)

func (p Policy) withDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.InitialInterval <= 0 {
		p.InitialInterval = DefaultInitialInterval
	}
	if p.MaxInterval <= 0 {
		p.MaxInterval = DefaultMaxInterval
	}
	if p.Multiplier < 1 {
		p.Multiplier = DefaultMultiplier
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = DefaultAttemptTimeout
	}
	if p.CallTimeout <= 0 {
		p.CallTimeout = DefaultCallTimeout
	}
	if p.Classify == nil {
		p.Classify = DefaultClassify
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	if p.Jitter == nil {
		p.Jitter = rand.Float64
	}
	p.Breaker = p.Breaker.withDefaults()
	p.Budget = p.Budget.withDefaults()
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Call describes the ERP call being made.
type Call struct {
	Service   erp.Service
	Operation string // e.g. "read invoice", for logs
	Write     bool   // the call changes ERP state
	// Idempotent says the ERP deduplicates the write (it carries a
	// repeatability id), so repeating it after an unknown outcome is safe.
	Idempotent bool
	// Reconcile, for a write, reads the ERP to learn whether an attempt
	// whose answer was lost was applied. It is called before any retry of
	// such an attempt; applied true ends the call as a success.
	Reconcile func(ctx context.Context) (applied bool, err error)
}

// Observer is told what the Runner does; metrics implement it. Its methods
// must be safe for concurrent use and quick: BreakerState runs under the
// breaker's lock.
type Observer interface {
	// Attempt reports one attempt: result is ok, business, transient,
	// timeout, error or unknown (a write whose outcome was lost).
	Attempt(service erp.Service, result string, d time.Duration)
	// Retry reports a retry about to happen and why: transient, timeout,
	// retry_after or unknown_outcome.
	Retry(service erp.Service, reason string)
	// BudgetExhausted reports a retry refused by the retry budget.
	BudgetExhausted(service erp.Service)
	// FastFail reports a call refused at once by an open breaker.
	FastFail(service erp.Service)
	// Reconciled reports a lost write answer settled by reading: applied or
	// not.
	Reconciled(service erp.Service, applied bool)
	// BreakerState reports a breaker's state change.
	BreakerState(service erp.Service, from, to string)
}

// Runner runs ERP calls under a Policy. It is safe for concurrent use.
type Runner struct {
	draining atomic.Bool
	policy   Policy
	observer Observer
	breakers *breakers
	budget   *budgets
}

// New returns a Runner with the policy; obs may be nil.
func New(p Policy, obs Observer) *Runner {
	p = p.withDefaults()
	if obs == nil {
		obs = nopObserver{}
	}
	return &Runner{
		policy:   p,
		observer: obs,
		breakers: newBreakers(p.Breaker, p.Now, obs, p.Classify),
		budget:   newBudgets(p.Budget),
	}
}

// Drain makes the runner stop retrying: attempts already running finish,
// and every call answers with its last failure instead of waiting for
// another try. A gateway that shuts down drains its calls this way.
func (r *Runner) Drain() { r.draining.Store(true) }

// Policy returns the runner's effective policy.
func (r *Runner) Policy() Policy { return r.policy }

// Do runs fn until it succeeds, fails permanently, or the policy allows no
// more attempts. Each attempt gets a context that ends at the attempt
// timeout. The error returned is fn's last error, or an
// *erp.UpstreamError for a call the breaker refused; an
// *erp.UpstreamError gets Attempts filled in, and RetryAfter when the
// gateway knows how long the agent should wait.
func (r *Runner) Do(ctx context.Context, call Call, fn func(ctx context.Context) error) error {
	p := r.policy
	// The context ends on the wall clock; waits are planned on the policy's
	// clock, which tests replace.
	budget := p.CallTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < budget {
		budget = time.Until(d)
	}
	deadline := p.Now().Add(budget)
	ctx, cancel := context.WithTimeout(ctx, p.CallTimeout)
	defer cancel()

	bo := newBackOff(p)
	br := r.breakers.get(call.Service)
	r.budget.get(call.Service).deposit()
	// unconfirmed is set while an earlier attempt of a write may have been
	// applied: a later attempt's clear failure says nothing about it.
	unconfirmed := false
	fail := func(err error, attempts int) error {
		markUnconfirmed(err, call.Write && unconfirmed)
		return withAttempts(err, attempts)
	}
	var last error
	// refused answers a call the open breaker will not let through: at
	// once, and without the retry budget or a backoff spent on it.
	refused := func(attempts int) error {
		r.observer.FastFail(call.Service)
		if last != nil && unconfirmed {
			return fail(last, attempts)
		}
		return fail(&erp.UpstreamError{Service: call.Service, Operation: call.Operation, Write: call.Write,
			Transient: true, BreakerOpen: true, RetryAfter: br.untilProbe(p.Now()), Err: errBreakerOpen}, attempts)
	}
	for attempt := 1; ; attempt++ {
		err := br.run(ctx, func() error { return r.attempt(ctx, call, fn) })
		if err == nil {
			return nil
		}
		if errors.Is(err, errBreakerOpen) {
			return refused(attempt - 1)
		}
		last = err
		class := p.Classify(err, call.Write)
		reason := class.String()
		if class == OutcomeUnknown {
			unconfirmed = true
			if call.Reconcile != nil && ctx.Err() == nil {
				applied, rerr := call.Reconcile(ctx)
				if rerr == nil {
					r.observer.Reconciled(call.Service, applied)
					if applied {
						return nil
					}
					// Not applied, by this or any earlier attempt: repeating
					// it cannot apply it twice.
					unconfirmed, class = false, Transient
				}
			}
			if call.Idempotent {
				class = Transient
			}
		}
		if class != Transient || attempt >= p.MaxAttempts || ctx.Err() != nil || r.draining.Load() {
			return fail(err, attempt)
		}
		wait := bo.NextBackOff()
		if hint := retryAfter(err); hint > 0 {
			wait, reason = hint, "retry_after"
		}
		if wait == backoff.Stop || p.Now().Add(wait).After(deadline) {
			return fail(err, attempt)
		}
		if br.open() {
			return refused(attempt)
		}
		if !r.budget.get(call.Service).withdraw() {
			r.observer.BudgetExhausted(call.Service)
			return fail(err, attempt)
		}
		r.observer.Retry(call.Service, reason)
		if p.Sleep(ctx, wait) != nil {
			return fail(err, attempt)
		}
	}
}

// attempt runs fn once under the attempt timeout.
func (r *Runner) attempt(ctx context.Context, call Call, fn func(ctx context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, r.policy.AttemptTimeout)
	defer cancel()
	start := r.policy.Now()
	err := fn(actx)
	result := Result(err)
	if err != nil && r.policy.Classify(err, call.Write) == OutcomeUnknown {
		result = "unknown"
	}
	r.observer.Attempt(call.Service, result, r.policy.Now().Sub(start))
	return err
}

// markUnconfirmed records on a write's error whether its outcome is still
// unknown, which errmap reports as ERP_OUTCOME_UNKNOWN.
func markUnconfirmed(err error, unconfirmed bool) {
	var up *erp.UpstreamError
	if errors.As(err, &up) {
		up.Unconfirmed = unconfirmed
	}
}

func withAttempts(err error, n int) error {
	var up *erp.UpstreamError
	if errors.As(err, &up) {
		up.Attempts = n
	}
	return err
}

func retryAfter(err error) time.Duration {
	var up *erp.UpstreamError
	if errors.As(err, &up) {
		return up.RetryAfter
	}
	return 0
}

// newBackOff returns a fresh exponential backoff with full jitter:
// ExponentialBackOff is not safe to share, so every call gets its own.
func newBackOff(p Policy) backoff.BackOff {
	eb := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(p.InitialInterval),
		backoff.WithMaxInterval(p.MaxInterval),
		backoff.WithMultiplier(p.Multiplier),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
	return &fullJitter{next: eb, jitter: p.Jitter}
}

// fullJitter draws each wait uniformly from [0, the exponential backoff),
// which spreads the retries of many callers best.
type fullJitter struct {
	next   backoff.BackOff
	jitter func() float64
}

func (f *fullJitter) NextBackOff() time.Duration {
	d := f.next.NextBackOff()
	if d == backoff.Stop {
		return d
	}
	return time.Duration(math.Floor(f.jitter() * float64(d)))
}

func (f *fullJitter) Reset() { f.next.Reset() }

// Result names the outcome of an attempt for metrics: "ok", "business"
// (the ERP answered with a business error), "transient", "timeout" or
// "error".
func Result(err error) string {
	var up *erp.UpstreamError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &up) && up.Timeout:
		return "timeout"
	case errors.As(err, &up) && up.Transient:
		return "transient"
	case errors.As(err, &up) && up.Status == 0:
		return "error"
	default:
		return "business"
	}
}

type nopObserver struct{}

func (nopObserver) Attempt(erp.Service, string, time.Duration) {}
func (nopObserver) Retry(erp.Service, string)                  {}
func (nopObserver) BudgetExhausted(erp.Service)                {}
func (nopObserver) FastFail(erp.Service)                       {}
func (nopObserver) Reconciled(erp.Service, bool)               {}
func (nopObserver) BreakerState(erp.Service, string, string)   {}
