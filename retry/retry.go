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
//   - gives a write an attempt timeout of its own, as long as a posting
//     may take, and never sends it again while an earlier attempt may
//     still be running: a write whose answer was lost is settled by
//     reading, and repeated only when the ERP had answered and a read
//     shows the write was not applied, so no write is applied twice.
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
	"go.opentelemetry.io/otel/trace"
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
	// AttemptTimeout bounds one attempt of a read. Default 3s.
	AttemptTimeout time.Duration
	// WriteTimeout bounds one attempt of a write (Call.Write). The ERP
	// goes on with a posting after the caller gives up on it, and a write
	// is never sent again while an attempt may still be running, so an
	// attempt gets the time a posting under load takes, not a read's.
	// Default 45s.
	WriteTimeout time.Duration
	// CallTimeout bounds the whole call, retries and waits included, under
	// the caller's own deadline; a write's call has WriteTimeout on top,
	// for its attempt. Default 10s.
	CallTimeout time.Duration
	// Classify sorts a failed attempt into permanent, transient or
	// outcome-unknown for calls that bring no Classify of their own.
	// Default DefaultClassify.
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
	// Tracer, when set, makes each attempt of a call made in a trace a
	// client span of it (see trace.go), in the context the attempt runs
	// in, for the adapter to add its details to and to send on to the
	// ERP. Default: no spans, and nothing spent on them.
	Tracer trace.Tracer
	// Quota, when set, is the ERP's quota: every attempt, retries
	// included, takes a slot of its service's before it is sent (see
	// quota.go). Default: no ceiling.
	Quota Quota
	// QuotaWait is the longest an attempt waits for a slot of the Quota,
	// never past its call's deadline; beyond it the call is refused with
	// ErrQuota. Default DefaultQuotaWait.
	QuotaWait time.Duration
}

// Defaults of Policy.
const (
	DefaultMaxAttempts     = 3
	DefaultInitialInterval = 200 * time.Millisecond
	DefaultMaxInterval     = 2 * time.Second
	DefaultMultiplier      = 2.0
	DefaultAttemptTimeout  = 3 * time.Second
	DefaultWriteTimeout    = 45 * time.Second
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
	if p.WriteTimeout <= 0 {
		p.WriteTimeout = DefaultWriteTimeout
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
	if p.QuotaWait <= 0 {
		p.QuotaWait = DefaultQuotaWait
	}
	p.Breaker = p.Breaker.withDefaults()
	p.Budget = p.Budget.withDefaults()
	return p
}

// attemptTimeout bounds one attempt of a write or a read.
func (p Policy) attemptTimeout(write bool) time.Duration {
	if write {
		return p.WriteTimeout
	}
	return p.AttemptTimeout
}

// callTimeout bounds a whole call that writes or reads.
func (p Policy) callTimeout(write bool) time.Duration {
	if write {
		return p.CallTimeout + p.WriteTimeout
	}
	return p.CallTimeout
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

// Service names the service a call goes to: each has its own circuit
// breaker and retry budget, and the Observer is told about it by name.
type Service string

// Call describes the call being made. The Runner knows nothing of the
// caller's errors: Classify, Result and RetryAfter tell it what they mean.
type Call struct {
	Service   Service
	Operation string // e.g. "read invoice", for logs
	Write     bool   // the call changes ERP state
	// Reconcile, for a write, reads the ERP to learn whether an attempt
	// whose answer was lost was applied; applied true ends the call as a
	// success. Without it, or while its reads cannot settle the attempt,
	// the write is never sent again and the call fails unconfirmed.
	Reconcile func(ctx context.Context) (applied bool, err error)
	// Answered, for a write, reports whether an attempt that failed with
	// err got the ERP's own answer, one that could not be read: the ERP
	// was done with it, so one read settles it, and a write that read
	// shows not applied may be sent again. nil, or false: the attempt may
	// still be running in the ERP until its timeout is over, and Reconcile
	// reads again until then.
	Answered func(err error) bool
	// Classify sorts a failed attempt of this call; nil takes the
	// Policy's.
	Classify func(err error, write bool) Class
	// Result names a failed attempt for the Observer: business, transient,
	// timeout or error. nil names a deadline timeout and anything else
	// error.
	Result func(err error) string
	// RetryAfter returns how long a failed attempt asked to be waited for
	// before the next; 0 for no hint. nil gives no hints.
	RetryAfter func(err error) time.Duration
}

func (c Call) classify(p Policy) func(error, bool) Class {
	if c.Classify != nil {
		return c.Classify
	}
	return p.Classify
}

// Observer is told what the Runner does; metrics implement it. Its methods
// must be safe for concurrent use and quick: BreakerState runs under the
// breaker's lock.
type Observer interface {
	// Attempt reports one attempt: result is ok, business, transient,
	// timeout, error or unknown (a write whose outcome was lost).
	Attempt(service Service, result string, d time.Duration)
	// Retry reports a retry about to happen and why: transient, timeout,
	// retry_after or unknown_outcome.
	Retry(service Service, reason string)
	// BudgetExhausted reports a retry refused by the retry budget.
	BudgetExhausted(service Service)
	// FastFail reports a call refused at once by an open breaker.
	FastFail(service Service)
	// Reconciled reports what reading the ERP found of a write whose answer
	// was lost: applied, or not applied as far as the last read could see.
	Reconciled(service Service, applied bool)
	// BreakerState reports a breaker's state change.
	BreakerState(service Service, from, to string)
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
		breakers: newBreakers(p.Breaker, p.Now, obs),
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
// timeout. A failed call returns an *Error: fn's last error with the
// attempts made and whether a write is unconfirmed, or ErrBreakerOpen for a
// call the breaker refused, with the time until its next probe.
func (r *Runner) Do(ctx context.Context, call Call, fn func(ctx context.Context) error) error {
	p := r.policy
	callTimeout := p.callTimeout(call.Write)
	// The context ends on the wall clock; waits are planned on the policy's
	// clock, which tests replace.
	budget := callTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < budget {
		budget = time.Until(d)
	}
	deadline := p.Now().Add(budget)
	// The first attempt runs in a view of the call's context that ends at
	// the call timeout without a timer of its own (callView); the call's
	// own context is made only when an attempt fails, which most calls
	// never do.
	parent := ctx
	callEnds := time.Now().Add(callTimeout)
	ctx = callView{Context: parent, deadline: callEnds}
	cancel := context.CancelFunc(nil)
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()

	var bo backoff.BackOff // made for the first retry
	classify := call.classify(p)
	br := r.breakers.get(call.Service)
	r.budget.get(call.Service).deposit()
	// unconfirmed is set while an earlier attempt of a write may have been
	// applied: a later attempt's clear failure says nothing about it.
	unconfirmed := false
	fail := func(err error, attempts int) error {
		return &Error{Service: call.Service, Operation: call.Operation, Write: call.Write, Attempts: attempts,
			Unconfirmed: call.Write && unconfirmed, Err: err}
	}
	var last error
	// refused answers a call the open breaker will not let through: at
	// once, and without the retry budget or a backoff spent on it.
	refused := func(attempts int) error {
		r.observer.FastFail(call.Service)
		if last != nil && unconfirmed {
			return fail(last, attempts)
		}
		return &Error{Service: call.Service, Operation: call.Operation, Write: call.Write, Attempts: attempts,
			BreakerOpen: true, RetryAfter: br.untilProbe(p.Now()), Err: ErrBreakerOpen}
	}
	for attempt := 1; ; attempt++ {
		// The quota's slot is taken before the attempt, unless the open
		// breaker refuses it anyway.
		release := func() {}
		var wrote func() // nil without a ceiling of the rate
		if p.Quota != nil && !br.open() {
			var qerr error
			if wrote, release, qerr = r.takeQuota(ctx, call); qerr != nil {
				if last != nil && unconfirmed {
					return fail(last, attempt-1)
				}
				if q, ok := errors.AsType[*QuotaRefusal](qerr); ok {
					return r.quotaRefused(call, q, attempt-1)
				}
				if last != nil {
					return fail(last, attempt-1)
				}
				return fail(qerr, attempt-1)
			}
		}
		sent := p.Now()
		err := br.run(ctx, classify, func() error { return r.attempt(ctx, call, classify, fn, attempt, br, wrote) })
		release()
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrBreakerOpen) {
			r.traceRefused(ctx, call, attempt)
			return refused(attempt - 1)
		}
		if cancel == nil {
			ctx, cancel = callContext(parent, callEnds)
		}
		last = err
		class := classify(err, call.Write)
		reason := class.String()
		if class == OutcomeUnknown {
			unconfirmed = true
			if call.Reconcile != nil && ctx.Err() == nil {
				answered := call.Answered != nil && call.Answered(err)
				switch r.reconcile(ctx, call, classify, sent, deadline, answered) {
				case applied:
					return nil
				case notApplied:
					// Not applied by this or any earlier attempt, and none
					// is running: repeating it cannot apply it twice.
					unconfirmed, class = false, Transient
				}
			}
		}
		if class != Transient || attempt >= p.MaxAttempts || ctx.Err() != nil || r.draining.Load() {
			return fail(err, attempt)
		}
		if bo == nil {
			bo = newBackOff(p)
		}
		wait := bo.NextBackOff()
		if hint := call.retryAfter(err); hint > 0 {
			wait, reason = hint, "retry_after"
		}
		if wait == backoff.Stop || p.Now().Add(wait).After(deadline) {
			return fail(err, attempt)
		}
		if br.open() {
			r.traceRefused(ctx, call, attempt+1)
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

// settlement is what reading the ERP learnt of a write whose answer was
// lost.
type settlement int

const (
	unsettled  settlement = iota // the reads could not tell
	applied                      // the write was applied
	notApplied                   // the write was not applied, and no attempt of it runs
)

// reconcile reads whether the write call, whose attempt sent at sent
// lost its answer, was applied. An attempt the ERP answered is settled by
// one read. Any other may still be running in the ERP (a posting goes on
// after the client gives up), so a read that does not find the write
// applied is made again after a backoff until the attempt's timeout is
// over, within the call's deadline and a call's time from now: the write
// turns out applied, or stays unsettled and is not sent again.
func (r *Runner) reconcile(ctx context.Context, call Call, classify func(error, bool) Class, sent, deadline time.Time, answered bool) settlement {
	p := r.policy
	until := p.Now()
	if !answered {
		until = sent.Add(p.attemptTimeout(call.Write))
		if end := p.Now().Add(p.CallTimeout); end.Before(until) {
			until = end
		}
		if deadline.Before(until) {
			until = deadline
		}
	}
	var bo backoff.BackOff
	for {
		ok, err := call.Reconcile(ctx)
		switch {
		case err == nil && ok:
			r.observer.Reconciled(call.Service, true)
			return applied
		case err == nil && answered:
			r.observer.Reconciled(call.Service, false)
			return notApplied
		case err != nil && classify(err, false) != Transient:
			return unsettled
		}
		if bo == nil {
			bo = newBackOff(p)
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop || p.Now().Add(wait).After(until) || ctx.Err() != nil || r.draining.Load() ||
			p.Sleep(ctx, wait) != nil {
			if err == nil {
				r.observer.Reconciled(call.Service, false)
			}
			return unsettled
		}
	}
}

// attempt runs fn once under the attempt timeout: the call's n-th
// attempt, through br. wrote, when the quota gave one, is told when the
// attempt's request is written (withSent).
func (r *Runner) attempt(ctx context.Context, call Call, classify func(error, bool) Class, fn func(ctx context.Context) error, n int, br *breaker, wrote func()) error {
	actx, cancel := attemptContext(ctx, r.policy.attemptTimeout(call.Write))
	defer cancel()
	if wrote != nil {
		actx = withSent(actx, wrote)
	}
	var span trace.Span
	if r.policy.Tracer != nil && trace.SpanContextFromContext(ctx).IsValid() {
		actx, span = r.startAttempt(actx, call, n, br)
	}
	start := r.policy.Now()
	err := fn(actx)
	result := call.result(err)
	if err != nil && classify(err, call.Write) == OutcomeUnknown {
		result = "unknown"
	}
	d := r.policy.Now().Sub(start)
	if span == nil {
		r.observer.Attempt(call.Service, result, d)
		return err
	}
	endAttempt(span, result, err)
	if to, ok := r.observer.(TraceObserver); ok && span.SpanContext().IsSampled() {
		to.AttemptTraced(call.Service, result, d, span.SpanContext().TraceID())
	} else {
		r.observer.Attempt(call.Service, result, d)
	}
	return err
}

// callView is the context of a call's first attempt: its parent, ending
// at the call's deadline as context.WithDeadline(parent, deadline) would,
// without the timer. Its Done is the parent's, so nothing may wait on it
// alone: attemptContext bounds the attempt by the deadline itself.
type callView struct {
	context.Context
	deadline time.Time
}

func (c callView) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c callView) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// callContext is the context of a call's attempts after the first: its
// parent, ended at the call's deadline.
func callContext(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, deadline)
}

// attemptContext is the context of one attempt: ctx, ended after timeout
// at the latest, or at the call's deadline when that comes first.
func attemptContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	d := time.Now().Add(timeout)
	if v, ok := ctx.(callView); ok {
		ctx = v.Context
		if v.deadline.Before(d) {
			d = v.deadline
		}
	}
	return context.WithDeadline(ctx, d)
}

func (c Call) retryAfter(err error) time.Duration {
	if c.RetryAfter == nil {
		return 0
	}
	return c.RetryAfter(err)
}

// result names an attempt's outcome for the Observer.
func (c Call) result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case c.Result != nil:
		return c.Result(err)
	}
	return defaultResult(err)
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

type nopObserver struct{}

func (nopObserver) Attempt(Service, string, time.Duration) {}
func (nopObserver) Retry(Service, string)                  {}
func (nopObserver) BudgetExhausted(Service)                {}
func (nopObserver) FastFail(Service)                       {}
func (nopObserver) Reconciled(Service, bool)               {}
func (nopObserver) BreakerState(Service, string, string)   {}
