package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptrace"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// ErrQuota is the Err of an *Error for a call the ERP's quota refused
// (Policy.Quota): the ceiling of calls per second or in flight toward its
// service was reached, and no slot came free within the short wait the
// call may spend on one.
var ErrQuota = errors.New("erp quota reached")

// The limits a QuotaRefusal names.
const (
	// QuotaRate: the service's calls per second.
	QuotaRate = "calls_per_second"
	// QuotaInFlight: the service's calls in flight.
	QuotaInFlight = "in_flight"
	// QuotaUnavailable: the quota shared by the replicas could not be
	// checked (its Redis did not answer), so no call is let through.
	QuotaUnavailable = "unavailable"
)

// DefaultQuotaWait is how long an attempt may wait for a slot of its
// service's quota, within the call's deadline, before it is refused.
const DefaultQuotaWait = 250 * time.Millisecond

// QuotaGuard is added to the second over which the calls toward a
// service are counted: a request is let go only when fewer than the
// ceiling's worth were written to the ERP in the 1 s and QuotaGuard
// before it. A request is counted from when the quota lets it go until it
// is written (a new connection, a busy process) and from then on by the
// time it was written, so the guard only covers its way from there to the
// ERP: the network, and the ERP's own scheduling. It costs 5 % of the
// rate's throughput at most.
const QuotaGuard = 50 * time.Millisecond

// QuotaSettings is the ceiling of the calls toward each ERP service, the
// same for every service: the ERP's own quota, which the gateway never
// exceeds, whoever its callers are.
type QuotaSettings struct {
	// Rate is the most attempts per second sent toward a service; 0 for
	// no ceiling. No second, wherever it starts, holds more than Rate of
	// them, rounded down (a call is one whole request); below 1, one
	// every 1/Rate seconds. The attempts are spaced evenly over the
	// second (no bursts), and each goes only once the log of the
	// service's requests written lets it (see QuotaGuard): a burst of
	// calls waits its turn for up to Policy.QuotaWait, and is refused
	// beyond it.
	Rate float64
	// InFlight is the most attempts toward a service running at once; 0
	// for no ceiling.
	InFlight int
}

// Enabled says the settings set a ceiling.
func (s QuotaSettings) Enabled() bool { return s.Rate > 0 || s.InFlight > 0 }

// PerSecond is the most requests a second the ceiling lets through: Rate
// rounded down from 1 up (a request is whole: 2.5 lets 2 into any
// second), Rate itself below 1; 0 without a ceiling.
func (s QuotaSettings) PerSecond() float64 {
	if s.Rate >= 1 {
		return math.Floor(s.Rate)
	}
	return max(s.Rate, 0)
}

// window is the sliding window Rate is kept over: at most n sends in any
// span, the guard included; n is 0 without a ceiling. interval is span/n,
// rounded up: the spacing of the sends that fills the window evenly.
func (s QuotaSettings) window() (n int, span, interval time.Duration) {
	switch {
	case s.Rate <= 0:
		return 0, 0, 0
	case s.Rate >= 1:
		n, span = int(min(s.PerSecond(), math.MaxInt32)), time.Second
	default:
		n, span = 1, time.Duration(min(math.Ceil(float64(time.Second)/s.Rate), float64(24*time.Hour)))
	}
	span += QuotaGuard
	return n, span, (span + time.Duration(n) - 1) / time.Duration(n)
}

// Quota hands out the slots of the ERP's quota: one for every attempt,
// retries included, taken before the attempt is sent and given back when
// it is over.
type Quota interface {
	// Acquire takes a slot toward svc for an attempt that runs at most
	// hold, waiting at most wait for it. It returns the function that
	// notes the attempt's request as written to the ERP (the Runner calls
	// it from net/http's httptrace; more calls than one are ignored) and
	// the one that gives the slot back, which notes the request as
	// written then if it was not noted before; or a *QuotaRefusal, or
	// ctx's error when ctx ended while it waited.
	Acquire(ctx context.Context, svc Service, wait, hold time.Duration) (sent, release func(), err error)
}

// withSent returns ctx with the trace that calls sent when a request made
// with it was written whole to its connection: the moment the ERP's
// quota counts it from.
func withSent(ctx context.Context, sent func()) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			sent()
		}
	}})
}

// QuotaRefusal is a Quota's refusal of a slot: which limit, and how long
// until one is likely to be free.
type QuotaRefusal struct {
	Service    Service
	Limit      string // QuotaRate, QuotaInFlight or QuotaUnavailable
	RetryAfter time.Duration
	Err        error // for QuotaUnavailable, why
}

func (e *QuotaRefusal) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v (%s): %v", e.Service, ErrQuota, e.Limit, e.Err)
	}
	return fmt.Sprintf("%s: %v (%s)", e.Service, ErrQuota, e.Limit)
}

func (e *QuotaRefusal) Unwrap() error { return ErrQuota }

// QuotaObserver is an Observer that is also told of every attempt the
// quota refused.
type QuotaObserver interface {
	Observer
	QuotaRefused(service Service, limit string)
}

// LocalQuota is a Quota of one process: its ceilings hold for the calls
// of this process. It is safe for concurrent use.
type LocalQuota struct {
	s        QuotaSettings
	n        int           // most sends in any span; 0 without a rate
	span     time.Duration // 1 s (1/Rate below 1 a second) and QuotaGuard
	interval time.Duration // span/n
	m        sync.Map      // Service -> *localSlots
}

// NewLocalQuota returns the quota of s for this process.
func NewLocalQuota(s QuotaSettings) *LocalQuota {
	q := &LocalQuota{s: s}
	q.n, q.span, q.interval = s.window()
	return q
}

// Settings returns the quota's settings.
func (q *LocalQuota) Settings() QuotaSettings { return q.s }

type localSlots struct {
	inFlight *semaphore.Weighted // nil without a ceiling
	mu       sync.Mutex
	next     time.Time // when the next attempt may start, spaced
	// sent is the log of the requests written in the last span, in the
	// order they were written, a ring whose oldest is sent[head]; pending
	// counts the ones let go and not written yet, which count as written
	// now. Together they are never more than n.
	sent    []time.Time
	head    int
	count   int
	pending int
}

func (q *LocalQuota) get(svc Service) *localSlots {
	if s, ok := q.m.Load(svc); ok {
		return s.(*localSlots)
	}
	s := &localSlots{}
	if q.s.InFlight > 0 {
		s.inFlight = semaphore.NewWeighted(int64(q.s.InFlight))
	}
	v, _ := q.m.LoadOrStore(svc, s)
	return v.(*localSlots)
}

// reserve takes the next start free at or after now, when it is at most
// wait ahead: the start, or how far ahead the first free one is.
func (s *localSlots) reserve(now time.Time, interval, wait time.Duration) (start time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start = s.next
	if start.Before(now) {
		start = now
	}
	if start.Sub(now) > wait {
		return start, false
	}
	s.next = start.Add(interval)
	return start, true
}

// expire drops from the log the requests written span or longer before
// now. s.mu is held.
func (s *localSlots) expire(now time.Time, span time.Duration) {
	for s.count > 0 && now.Sub(s.sent[s.head]) >= span {
		s.head = (s.head + 1) % len(s.sent)
		s.count--
	}
}

// admit lets a request go when fewer than n were written in the span
// before now or are on their way; otherwise it returns when one is sure to
// have left the span (a request on its way leaves it a span after it is
// written, so a span from now at the earliest). The time is read under
// the lock, so the log is in order.
func (s *localSlots) admit(n int, span time.Duration) (now, free time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now = time.Now()
	s.expire(now, span)
	switch {
	case s.count+s.pending < n:
		s.pending++
		return now, now, true
	case s.count > 0:
		return now, s.sent[s.head].Add(span), false
	}
	return now, now.Add(span), false
}

// wrote notes a request let go by admit as written now, and returns now.
func (s *localSlots) wrote(span time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.expire(now, span)
	s.pending--
	if s.count == len(s.sent) {
		// Grown as the requests come, never past 2n: count+pending <= n.
		grown := make([]time.Time, max(2*len(s.sent), 8))
		k := copy(grown, s.sent[s.head:])
		copy(grown[k:], s.sent[:s.head])
		s.sent, s.head = grown, 0
	}
	s.sent[(s.head+s.count)%len(s.sent)] = now
	s.count++
	return now
}

// Acquire implements Quota: an in-flight slot first, then the start of
// the attempt, which is waited for while the in-flight slot is held.
func (q *LocalQuota) Acquire(ctx context.Context, svc Service, wait, _ time.Duration) (sent, release func(), err error) {
	s := q.get(svc)
	begin := time.Now()
	release = func() {}
	if s.inFlight != nil {
		if !s.inFlight.TryAcquire(1) {
			if err := acquireWithin(ctx, s.inFlight, wait); err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				return nil, nil, &QuotaRefusal{Service: svc, Limit: QuotaInFlight, RetryAfter: time.Second}
			}
		}
		var once sync.Once
		release = func() { once.Do(func() { s.inFlight.Release(1) }) }
	}
	if q.n > 0 {
		if err := q.pace(ctx, s, svc, begin, wait); err != nil {
			release()
			return nil, nil, err
		}
		var once sync.Once
		sent = func() { once.Do(func() { s.wrote(q.span) }) }
		inFlight := release
		release = func() {
			sent()
			inFlight()
		}
	}
	return sent, release, nil
}

// pace lets an attempt toward svc go when the rate allows it, within wait
// of begin: at its turn among the starts spaced q.interval apart, and then
// only when the log of the requests written says so, checked as it goes
// (a wait that ended late, or an earlier request written late, would
// otherwise crowd more than n into a span).
func (q *LocalQuota) pace(ctx context.Context, s *localSlots, svc Service, begin time.Time, wait time.Duration) error {
	now := time.Now()
	start, ok := s.reserve(now, q.interval, wait-now.Sub(begin))
	if !ok {
		return &QuotaRefusal{Service: svc, Limit: QuotaRate, RetryAfter: start.Sub(now)}
	}
	if d := start.Sub(now); d > 0 {
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
	for {
		now, free, ok := s.admit(q.n, q.span)
		if ok {
			return nil
		}
		if free.Sub(begin) > wait {
			return &QuotaRefusal{Service: svc, Limit: QuotaRate, RetryAfter: free.Sub(now)}
		}
		if err := sleep(ctx, free.Sub(now)); err != nil {
			return err
		}
	}
}

// acquireWithin waits up to wait for a slot of sem.
func acquireWithin(ctx context.Context, sem *semaphore.Weighted, wait time.Duration) error {
	if wait <= 0 {
		return context.DeadlineExceeded
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return sem.Acquire(wctx, 1)
}

// quotaHold is how long past its attempt timeout a slot is held at most:
// a slot of the shared quota whose holder stopped is freed after it.
const quotaHold = 5 * time.Second

// takeQuota takes the slot of the call's n-th attempt from the Policy's
// Quota, waiting at most the quota's wait and never past the call's
// deadline. Without a Quota it is free.
func (r *Runner) takeQuota(ctx context.Context, call Call) (sent, release func(), err error) {
	q := r.policy.Quota
	if q == nil {
		return nil, func() {}, nil
	}
	wait := r.policy.QuotaWait
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait = max(time.Until(d), 0)
	}
	return q.Acquire(ctx, call.Service, wait, r.policy.attemptTimeout(call.Write)+quotaHold)
}

// quotaRefused answers a call whose n-th attempt the quota refused.
func (r *Runner) quotaRefused(call Call, q *QuotaRefusal, attempts int) *Error {
	if o, ok := r.observer.(QuotaObserver); ok {
		o.QuotaRefused(call.Service, q.Limit)
	}
	return &Error{Service: call.Service, Operation: call.Operation, Write: call.Write, Attempts: attempts,
		QuotaLimit: q.Limit, RetryAfter: q.RetryAfter, Err: ErrQuota}
}
