// Package retry makes one ERP call safe: every call from an ERP adapter goes
// through a Runner, which bounds each attempt with a timeout under the
// request's context and records what happened. Backoff, Retry-After, the
// circuit breaker and the retry budget plug in here, behind the same Do.
package retry

import (
	"context"
	"errors"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// Policy configures a Runner. The zero value is usable: every zero field
// takes the default documented beside it.
type Policy struct {
	// AttemptTimeout bounds one attempt. Default 3s.
	AttemptTimeout time.Duration
}

// DefaultAttemptTimeout is the per-attempt timeout when Policy leaves it zero.
const DefaultAttemptTimeout = 3 * time.Second

// Call describes the ERP call being made.
type Call struct {
	Service   erp.Service
	Operation string // e.g. "read invoice", for logs and metrics
	Write     bool   // the call changes ERP state
}

// Observer is told about every attempt; metrics implement it. It must be
// safe for concurrent use.
type Observer interface {
	Attempt(service erp.Service, result string, d time.Duration)
}

// Runner runs ERP calls under a Policy.
type Runner struct {
	policy   Policy
	observer Observer
}

// New returns a Runner with the policy; obs may be nil.
func New(p Policy, obs Observer) *Runner {
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = DefaultAttemptTimeout
	}
	return &Runner{policy: p, observer: obs}
}

// Policy returns the runner's effective policy.
func (r *Runner) Policy() Policy { return r.policy }

// Do runs fn once under a context that ends at the attempt timeout or when
// ctx ends. An *erp.UpstreamError returned by fn gets its Attempts filled in.
func (r *Runner) Do(ctx context.Context, call Call, fn func(ctx context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, r.policy.AttemptTimeout)
	start := time.Now()
	err := fn(actx)
	cancel()
	if r.observer != nil {
		r.observer.Attempt(call.Service, Result(err), time.Since(start))
	}
	var up *erp.UpstreamError
	if errors.As(err, &up) && up.Attempts == 0 {
		up.Attempts = 1
	}
	return err
}

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
