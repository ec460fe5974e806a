package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/erpgate/erpgate/retry"
)

// fault is a failed attempt of the tests' service: an HTTP status (0 for no
// answer) and what is known about it.
type fault struct {
	Write      bool
	Status     int
	MessageIDs []string
	Transient  bool
	Timeout    bool
	RetryAfter time.Duration
	Err        error
}

func (f *fault) Error() string {
	return fmt.Sprintf("status %d transient %v timeout %v: %v", f.Status, f.Transient, f.Timeout, f.Err)
}
func (f *fault) Unwrap() error { return f.Err }

// notFound is an answer of the tests' service.
type notFound struct{ id string }

func (n *notFound) Error() string { return n.id + " not found" }

// classify sorts faults the way an HTTP adapter would.
func classify(err error, write bool) retry.Class {
	var f *fault
	if !errors.As(err, &f) || errors.Is(err, context.Canceled) {
		return retry.Permanent
	}
	var op *net.OpError
	switch {
	case write && f.Status == 0 && errors.As(f.Err, &op) && op.Op == "dial":
		return retry.Transient
	case write && (f.Timeout || f.Status == 0 || (f.Status >= 200 && f.Status < 300)):
		return retry.OutcomeUnknown
	case write && (f.Status == 429 || f.Status == 503):
		return retry.Transient
	case write && f.Transient:
		return retry.OutcomeUnknown
	case f.Transient || f.Timeout || f.Status == 0 || (f.Status >= 200 && f.Status < 300):
		return retry.Transient
	}
	return retry.Permanent
}

func result(err error) string {
	var f *fault
	switch {
	case errors.As(err, &f) && f.Timeout:
		return "timeout"
	case errors.As(err, &f) && f.Transient:
		return "transient"
	}
	return "business"
}

func hint(err error) time.Duration {
	var f *fault
	if errors.As(err, &f) {
		return f.RetryAfter
	}
	return 0
}

// call returns a Call to svc that knows the faults.
func call(svc retry.Service, op string) retry.Call {
	return retry.Call{Service: svc, Operation: op, Classify: classify, Result: result, RetryAfter: hint}
}

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu          sync.Mutex
	results     []string
	retries     []string
	exhausted   int
	fastFails   int
	reconciled  []bool
	transitions []string
}

func (r *recorder) Attempt(_ retry.Service, result string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, result)
}
func (r *recorder) Retry(_ retry.Service, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries = append(r.retries, reason)
}
func (r *recorder) BudgetExhausted(retry.Service) { r.mu.Lock(); r.exhausted++; r.mu.Unlock() }
func (r *recorder) FastFail(retry.Service)        { r.mu.Lock(); r.fastFails++; r.mu.Unlock() }
func (r *recorder) Reconciled(_ retry.Service, applied bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reconciled = append(r.reconciled, applied)
}
func (r *recorder) BreakerState(_ retry.Service, from, to string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.transitions = append(r.transitions, from+">"+to)
}

// fakeClock advances only when the runner sleeps, so no test waits.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func newRunner(p retry.Policy) (*retry.Runner, *fakeClock, *recorder) {
	clock := &fakeClock{now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
	rec := &recorder{}
	p.Now, p.Sleep = clock.Now, clock.Sleep
	if p.Jitter == nil {
		p.Jitter = func() float64 { return 0.5 }
	}
	return retry.New(p, rec), clock, rec
}

// script returns fn that answers each attempt with the next error.
func script(errs ...error) (func(context.Context) error, *int) {
	n := 0
	return func(context.Context) error {
		n++
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, &n
}

func unavailable() error { return &fault{Status: 503, Transient: true} }

var read = call("purchase_order", "read purchase order")

func TestRetriesTransientWithFullJitter(t *testing.T) {
	r, clock, rec := newRunner(retry.Policy{})
	fn, n := script(unavailable(), unavailable())
	if err := r.Do(context.Background(), read, fn); err != nil {
		t.Fatalf("Do = %v, want success on the third attempt", err)
	}
	if *n != 3 {
		t.Errorf("attempts = %d, want 3", *n)
	}
	// Exponential from 200ms, doubled, each scaled by the jitter draw 0.5.
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}; !equal(clock.sleeps, want) {
		t.Errorf("sleeps = %v, want %v", clock.sleeps, want)
	}
	if len(rec.retries) != 2 || rec.retries[0] != "transient" {
		t.Errorf("retries observed = %v", rec.retries)
	}
}

func TestStopsAfterMaxAttempts(t *testing.T) {
	r, _, rec := newRunner(retry.Policy{MaxAttempts: 3})
	fn, n := script(unavailable(), unavailable(), unavailable(), unavailable())
	err := r.Do(context.Background(), read, fn)
	var up *retry.Error
	if !errors.As(err, &up) || up.Attempts != 3 || *n != 3 {
		t.Fatalf("err %v after %d attempts, want the last failure with Attempts 3", err, *n)
	}
	if len(rec.results) != 3 || rec.results[2] != "transient" {
		t.Errorf("attempts observed = %v", rec.results)
	}
}

func TestPermanentIsNotRetried(t *testing.T) {
	r, clock, _ := newRunner(retry.Policy{})
	for _, e := range []error{
		&fault{Status: 400, MessageIDs: []string{"F5/201"}},
		&notFound{"4500019822"},
		context.Canceled,
	} {
		fn, n := script(e, e)
		if err := r.Do(context.Background(), read, fn); !errors.Is(err, e) || *n != 1 {
			t.Errorf("%v: %d attempts, err %v; want 1 and the error", e, *n, err)
		}
	}
	if len(clock.sleeps) != 0 {
		t.Errorf("slept %v for permanent failures", clock.sleeps)
	}
}

func TestRetryAfterHonouredWhenItFits(t *testing.T) {
	r, clock, rec := newRunner(retry.Policy{})
	fn, _ := script(&fault{Status: 429, Transient: true, RetryAfter: 2 * time.Second})
	if err := r.Do(context.Background(), read, fn); err != nil {
		t.Fatal(err)
	}
	if !equal(clock.sleeps, []time.Duration{2 * time.Second}) || rec.retries[0] != "retry_after" {
		t.Errorf("sleeps %v reasons %v, want the 2s hint", clock.sleeps, rec.retries)
	}
}

func TestRetryAfterBeyondTheDeadlineFailsAtOnce(t *testing.T) {
	r, clock, _ := newRunner(retry.Policy{CallTimeout: 10 * time.Second})
	fn, n := script(&fault{Status: 429, Transient: true, RetryAfter: 30 * time.Second})
	err := r.Do(context.Background(), read, fn)
	var up *retry.Error
	if !errors.As(err, &up) || *n != 1 || hint(err) != 30*time.Second || up.Attempts != 1 {
		t.Fatalf("err %v after %d attempts; want one attempt keeping the 30s hint", err, *n)
	}
	if len(clock.sleeps) != 0 {
		t.Errorf("slept %v", clock.sleeps)
	}
}

func TestCallerDeadlineBoundsTheWaits(t *testing.T) {
	r, _, _ := newRunner(retry.Policy{InitialInterval: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	fn, n := script(unavailable(), unavailable())
	// The fake clock stands still, so the 500ms wait would end past the
	// caller's 100ms deadline: no retry.
	if err := r.Do(ctx, read, fn); err == nil || *n != 1 {
		t.Errorf("err %v after %d attempts, want one attempt", err, *n)
	}
}

func TestAttemptTimeout(t *testing.T) {
	r := retry.New(retry.Policy{AttemptTimeout: 20 * time.Millisecond, MaxAttempts: 1}, nil)
	var deadline time.Time
	_ = r.Do(context.Background(), read, func(ctx context.Context) error {
		deadline, _ = ctx.Deadline()
		<-ctx.Done()
		return &fault{Timeout: true, Transient: true, Err: ctx.Err()}
	})
	if d := time.Until(deadline); d > 20*time.Millisecond {
		t.Errorf("attempt deadline %v away, want at most 20ms", d)
	}
}

func TestBreakerOpensAndFailsFast(t *testing.T) {
	r, _, rec := newRunner(retry.Policy{MaxAttempts: 1, Breaker: retry.BreakerSettings{OpenFor: 30 * time.Second, MinRequests: 5}})
	for i := 0; i < 5; i++ {
		fn, _ := script(unavailable())
		_ = r.Do(context.Background(), read, fn)
	}
	if got := r.BreakerStates()["purchase_order"]; got != "open" {
		t.Fatalf("breaker %s after 5 failures in a row, want open", got)
	}
	called := false
	err := r.Do(context.Background(), read, func(context.Context) error { called = true; return nil })
	var up *retry.Error
	if called || !errors.As(err, &up) || !up.BreakerOpen || !errors.Is(err, retry.ErrBreakerOpen) || up.Attempts != 0 {
		t.Fatalf("open breaker: called %v err %v", called, err)
	}
	if up.RetryAfter < 29*time.Second || up.RetryAfter > 30*time.Second {
		t.Errorf("RetryAfter %v, want the time to the half-open probe (about 30s)", up.RetryAfter)
	}
	if rec.fastFails != 1 || len(rec.transitions) != 1 || rec.transitions[0] != "closed>open" {
		t.Errorf("fast fails %d transitions %v", rec.fastFails, rec.transitions)
	}
	// Another service is not affected.
	if err := r.Do(context.Background(), call("business_partner", ""), func(context.Context) error { return nil }); err != nil {
		t.Errorf("other service: %v", err)
	}
}

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// drive makes one call every 10 ms on the clock for d, each failing when
// fail says so for its number, and returns how many calls were made before
// the breaker opened, -1 when it stayed closed.
func drive(r *retry.Runner, clock *fakeClock, d time.Duration, fail func(i int) bool) int {
	for i := 0; i < int(d/(10*time.Millisecond)); i++ {
		clock.advance(10 * time.Millisecond)
		_ = r.Do(context.Background(), read, func(context.Context) error {
			if fail(i) {
				return unavailable()
			}
			return nil
		})
		if r.BreakerStates()["purchase_order"] == "open" {
			return i + 1
		}
	}
	return -1
}

// TestBreakerOpensOnAnOutageOnly: the breaker opens within 2 s of the ERP
// going down after a busy healthy spell, and not before nine in ten of the
// window's calls failed; a brown-out's failures, even in runs of ten, and a
// failure share of 85 % leave it closed.
func TestBreakerOpensOnAnOutageOnly(t *testing.T) {
	r, clock, _ := newRunner(retry.Policy{MaxAttempts: 1})
	if n := drive(r, clock, 10*time.Second, func(int) bool { return false }); n != -1 {
		t.Fatalf("breaker opened after %d healthy calls", n)
	}
	n := drive(r, clock, 10*time.Second, func(int) bool { return true })
	// 100 calls a second, a window of one second: 90 of its 100 calls have
	// failed after 0.9 s.
	if n < 0 || time.Duration(n)*10*time.Millisecond > 2*time.Second {
		t.Fatalf("outage: breaker opened after %d calls (%v), want within 2s", n, time.Duration(n)*10*time.Millisecond)
	}
	if n < 85 {
		t.Errorf("outage: breaker opened after %d calls, before 90 %% of the window failed", n)
	}

	for _, tc := range []struct {
		name string
		fail func(i int) bool
	}{
		{"30 % in runs of 10", func(i int) bool { return i%33 < 10 }},
		{"20 % in runs of 10", func(i int) bool { return i%50 < 10 }},
		{"85 % spread", func(i int) bool { return i%20 < 17 }},
	} {
		r, clock, _ := newRunner(retry.Policy{MaxAttempts: 1})
		drive(r, clock, 5*time.Second, func(int) bool { return false })
		if n := drive(r, clock, 60*time.Second, tc.fail); n != -1 {
			t.Errorf("%s: breaker opened after %d calls, want closed", tc.name, n)
		}
	}
}

func TestBreakerHalfOpenProbeCloses(t *testing.T) {
	r := retry.New(retry.Policy{MaxAttempts: 1, Breaker: retry.BreakerSettings{OpenFor: 20 * time.Millisecond, MinRequests: 5}}, nil)
	for i := 0; i < 5; i++ {
		_ = r.Do(context.Background(), read, func(context.Context) error { return unavailable() })
	}
	time.Sleep(30 * time.Millisecond) // gobreaker reads the wall clock
	if err := r.Do(context.Background(), read, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if got := r.BreakerStates()["purchase_order"]; got != "closed" {
		t.Errorf("breaker %s after a good probe, want closed", got)
	}
}

func TestBusinessErrorsAndCancellationsDoNotOpenTheBreaker(t *testing.T) {
	r, _, _ := newRunner(retry.Policy{MaxAttempts: 1})
	for i := 0; i < 20; i++ {
		_ = r.Do(context.Background(), read, func(context.Context) error {
			return &fault{Status: 400, MessageIDs: []string{"06/019"}}
		})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = r.Do(ctx, read, func(ctx context.Context) error {
			return &fault{Timeout: true, Transient: true, Err: ctx.Err()}
		})
	}
	if got := r.BreakerStates()["purchase_order"]; got != "closed" {
		t.Errorf("breaker %s, want closed: business errors are answers and cancellations say nothing", got)
	}
}

func TestRetryBudget(t *testing.T) {
	r, _, rec := newRunner(retry.Policy{MaxAttempts: 2, Budget: retry.BudgetSettings{Capacity: 2, Deposit: 0.001},
		Breaker: retry.BreakerSettings{Disabled: true}})
	attempts := 0
	for i := 0; i < 10; i++ {
		_ = r.Do(context.Background(), read, func(context.Context) error { attempts++; return unavailable() })
	}
	// Two retries from the initial tokens, then none.
	if attempts != 12 || rec.exhausted != 8 {
		t.Errorf("attempts %d, budget refusals %d; want 12 and 8", attempts, rec.exhausted)
	}
}

func TestWriteWithLostAnswer(t *testing.T) {
	write := call("supplier_invoice", "post invoice")
	write.Write = true
	lost := func() error { return &fault{Write: true, Timeout: true} }
	reset := func() error {
		return &fault{Write: true, Transient: true, Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}
	}
	refused := &fault{Write: true, Transient: true, Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	// reads answers each read of the ERP with the next of its answers, the
	// last one from then on, and counts the reads.
	reads := func(answers ...func() (bool, error)) (func(context.Context) (bool, error), *int) {
		n := 0
		return func(context.Context) (bool, error) {
			n++
			return answers[min(n, len(answers))-1]()
		}, &n
	}
	notYet := func() (bool, error) { return false, nil }
	posted := func() (bool, error) { return true, nil }
	unconfirmed := func(t *testing.T, err error, attempts int) {
		t.Helper()
		var up *retry.Error
		if !errors.As(err, &up) || !up.Unconfirmed || up.Attempts != 1 || attempts != 1 {
			t.Errorf("err %v after %d attempts, want one unconfirmed attempt", err, attempts)
		}
	}

	t.Run("not repeated without reconcile", func(t *testing.T) {
		r, _, _ := newRunner(retry.Policy{})
		fn, n := script(lost())
		unconfirmed(t, r.Do(context.Background(), write, fn), *n)
	})
	t.Run("reconciled as applied", func(t *testing.T) {
		r, _, rec := newRunner(retry.Policy{})
		c := write
		c.Reconcile, _ = reads(posted)
		fn, n := script(reset())
		if err := r.Do(context.Background(), c, fn); err != nil || *n != 1 {
			t.Errorf("err %v after %d attempts, want success without a repeat", err, *n)
		}
		if len(rec.reconciled) != 1 || !rec.reconciled[0] {
			t.Errorf("reconciled %v", rec.reconciled)
		}
	})
	// An attempt that lost its connection may still be running in the
	// ERP: the reads wait for it, and the write is not sent again.
	t.Run("the reads wait for an attempt that may still run", func(t *testing.T) {
		r, clock, rec := newRunner(retry.Policy{WriteTimeout: 5 * time.Second})
		c := write
		var m *int
		c.Reconcile, m = reads(notYet, notYet, notYet, posted)
		fn, n := script(reset())
		if err := r.Do(context.Background(), c, fn); err != nil || *n != 1 || *m != 4 {
			t.Errorf("err %v after %d attempts and %d reads, want success on the fourth read without a repeat", err, *n, *m)
		}
		if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}; !equal(clock.sleeps, want) {
			t.Errorf("waits between the reads %v, want %v", clock.sleeps, want)
		}
		if len(rec.reconciled) != 1 || !rec.reconciled[0] || len(rec.retries) != 0 {
			t.Errorf("reconciled %v, retries %v; want one applied and no retry", rec.reconciled, rec.retries)
		}
	})
	t.Run("never applied: unconfirmed once the attempt's time is up", func(t *testing.T) {
		r, clock, rec := newRunner(retry.Policy{WriteTimeout: 5 * time.Second, CallTimeout: time.Minute})
		c := write
		var m *int
		c.Reconcile, m = reads(notYet)
		fn, n := script(reset())
		unconfirmed(t, r.Do(context.Background(), c, fn), *n)
		var waited time.Duration
		for _, d := range clock.sleeps {
			waited += d
		}
		if waited > 5*time.Second || waited < 2*time.Second || *m != len(clock.sleeps)+1 {
			t.Errorf("%d reads over %v, want reads until the 5s write timeout is nearly over", *m, waited)
		}
		if len(rec.reconciled) != 1 || rec.reconciled[0] {
			t.Errorf("reconciled %v, want one not applied", rec.reconciled)
		}
	})
	t.Run("the reads take a call's time at most", func(t *testing.T) {
		r, clock, _ := newRunner(retry.Policy{WriteTimeout: time.Minute, CallTimeout: 2 * time.Second})
		c := write
		c.Reconcile, _ = reads(notYet)
		fn, n := script(reset())
		unconfirmed(t, r.Do(context.Background(), c, fn), *n)
		var waited time.Duration
		for _, d := range clock.sleeps {
			waited += d
		}
		if waited > 2*time.Second {
			t.Errorf("reads over %v, want at most the 2s call timeout", waited)
		}
	})
	// An attempt that ran until its timeout has had the time a write
	// takes: one read settles what can be settled.
	t.Run("timed out: one read", func(t *testing.T) {
		r, clock, _ := newRunner(retry.Policy{WriteTimeout: 5 * time.Second})
		c := write
		var m *int
		c.Reconcile, m = reads(notYet)
		n := 0
		fn := func(context.Context) error {
			n++
			clock.advance(5 * time.Second)
			return lost()
		}
		unconfirmed(t, r.Do(context.Background(), c, fn), n)
		if *m != 1 || len(clock.sleeps) != 0 {
			t.Errorf("%d reads and waits %v, want one read and no wait", *m, clock.sleeps)
		}
	})
	// The ERP answered, unreadably: it is done with the attempt, so a read
	// that finds the write not applied lets it be sent again.
	t.Run("answered, not applied: repeated", func(t *testing.T) {
		r, _, rec := newRunner(retry.Policy{})
		c := write
		var m *int
		c.Reconcile, m = reads(notYet)
		c.Answered = func(err error) bool {
			var f *fault
			return errors.As(err, &f) && f.Status == 200
		}
		fn, n := script(&fault{Write: true, Status: 200})
		if err := r.Do(context.Background(), c, fn); err != nil || *n != 2 || *m != 1 {
			t.Errorf("err %v after %d attempts and %d reads, want success on the repeat after one read", err, *n, *m)
		}
		if len(rec.reconciled) != 1 || rec.reconciled[0] || len(rec.retries) != 1 || rec.retries[0] != "unknown_outcome" {
			t.Errorf("reconciled %v, retries %v", rec.reconciled, rec.retries)
		}
	})
	t.Run("a read that fails for a while", func(t *testing.T) {
		r, _, _ := newRunner(retry.Policy{})
		c := write
		c.Reconcile, _ = reads(func() (bool, error) { return false, unavailable() }, posted)
		fn, n := script(reset())
		if err := r.Do(context.Background(), c, fn); err != nil || *n != 1 {
			t.Errorf("err %v after %d attempts, want success on the second read", err, *n)
		}
	})
	t.Run("a read that fails for good", func(t *testing.T) {
		r, _, _ := newRunner(retry.Policy{})
		c := write
		var m *int
		c.Reconcile, m = reads(func() (bool, error) { return false, &fault{Status: 403} })
		fn, n := script(lost())
		unconfirmed(t, r.Do(context.Background(), c, fn), *n)
		if *m != 1 {
			t.Errorf("%d reads, want 1", *m)
		}
	})
	t.Run("draining: one read", func(t *testing.T) {
		r, _, _ := newRunner(retry.Policy{})
		r.Drain()
		c := write
		var m *int
		c.Reconcile, m = reads(notYet)
		fn, n := script(reset())
		unconfirmed(t, r.Do(context.Background(), c, fn), *n)
		if *m != 1 {
			t.Errorf("%d reads, want 1", *m)
		}
	})
	t.Run("refused connection and 503 are repeated", func(t *testing.T) {
		r, _, _ := newRunner(retry.Policy{})
		fn, n := script(refused, &fault{Write: true, Status: 503, Transient: true})
		if err := r.Do(context.Background(), write, fn); err != nil || *n != 3 {
			t.Errorf("err %v after %d attempts, want success on the third", err, *n)
		}
	})
}

// TestWriteTimeout: an attempt of a write has the write timeout, not a
// read's, and the call's deadline leaves room for it; the caller's own
// deadline bounds it still.
func TestWriteTimeout(t *testing.T) {
	r := retry.New(retry.Policy{AttemptTimeout: 20 * time.Millisecond, WriteTimeout: time.Minute, CallTimeout: time.Second,
		MaxAttempts: 1}, nil)
	write := call("supplier_invoice", "post invoice")
	write.Write = true
	deadline := func(ctx context.Context, c retry.Call) time.Duration {
		var d time.Time
		_ = r.Do(ctx, c, func(ctx context.Context) error {
			d, _ = ctx.Deadline()
			return nil
		})
		return time.Until(d)
	}
	if d := deadline(context.Background(), write); d < 50*time.Second || d > time.Minute {
		t.Errorf("write attempt deadline %v away, want the minute of the write timeout", d)
	}
	if d := deadline(context.Background(), read); d > 20*time.Millisecond {
		t.Errorf("read attempt deadline %v away, want at most 20ms", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if d := deadline(ctx, write); d > 5*time.Second {
		t.Errorf("write attempt deadline %v away, want at most the caller's 5s", d)
	}
	if p := retry.New(retry.Policy{}, nil).Policy(); p.WriteTimeout != retry.DefaultWriteTimeout || p.WriteTimeout < 10*p.AttemptTimeout {
		t.Errorf("default write timeout %v", p.WriteTimeout)
	}
}

func TestDefaultClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	tests := []struct {
		err   error
		write bool
		want  retry.Class
	}{
		{context.Canceled, false, retry.Permanent},
		{context.DeadlineExceeded, false, retry.Transient},
		{context.DeadlineExceeded, true, retry.OutcomeUnknown},
		{refused, true, retry.Transient},
		{reset, false, retry.Transient},
		{reset, true, retry.OutcomeUnknown},
		{&fault{Status: 503, Transient: true}, false, retry.Permanent},
		{errors.New("other"), false, retry.Permanent},
	}
	for _, tt := range tests {
		if got := retry.DefaultClassify(tt.err, tt.write); got != tt.want {
			t.Errorf("DefaultClassify(%v, write=%v) = %s, want %s", tt.err, tt.write, got, tt.want)
		}
	}
}

func TestCallWithoutClassifyTakesThePolicys(t *testing.T) {
	r, _, rec := newRunner(retry.Policy{Classify: classify})
	fn, n := script(unavailable())
	if err := r.Do(context.Background(), retry.Call{Service: "purchase_order"}, fn); err != nil || *n != 2 {
		t.Fatalf("err %v after %d attempts, want success on the second", err, *n)
	}
	if len(rec.results) != 2 || rec.results[0] != "error" || rec.results[1] != "ok" {
		t.Errorf("attempts observed = %v, want error then ok without a Result", rec.results)
	}
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNoRetryIntoAnOpenBreaker(t *testing.T) {
	r, clock, rec := newRunner(retry.Policy{Breaker: retry.BreakerSettings{MinRequests: 1, OpenFor: time.Minute}})
	fn, n := script(unavailable(), unavailable())
	err := r.Do(context.Background(), read, fn)
	var up *retry.Error
	if !errors.As(err, &up) || !up.BreakerOpen || up.Attempts != 1 || *n != 1 {
		t.Fatalf("err %v after %d attempts, want a fast fail after the attempt that opened the breaker", err, *n)
	}
	if len(clock.sleeps) != 0 || len(rec.retries) != 0 || rec.exhausted != 0 {
		t.Errorf("slept %v, retried %v: a refused retry must cost neither a wait nor the budget", clock.sleeps, rec.retries)
	}
}

func TestDrainStopsRetrying(t *testing.T) {
	r, clock, _ := newRunner(retry.Policy{})
	r.Drain()
	fn, n := script(unavailable(), unavailable())
	err := r.Do(context.Background(), read, fn)
	var up *retry.Error
	if !errors.As(err, &up) || up.Attempts != 1 || *n != 1 || len(clock.sleeps) != 0 {
		t.Errorf("draining: err %v after %d attempts and sleeps %v, want the first failure at once", err, *n, clock.sleeps)
	}
}
