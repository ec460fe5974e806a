package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

type recorder struct {
	mu      sync.Mutex
	results []string
}

func (r *recorder) Attempt(_ erp.Service, result string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, result)
}

func TestDoBoundsTheAttempt(t *testing.T) {
	rec := &recorder{}
	r := retry.New(retry.Policy{AttemptTimeout: 20 * time.Millisecond}, rec)
	var deadline time.Time
	err := r.Do(context.Background(), retry.Call{Service: erp.ServicePurchaseOrder}, func(ctx context.Context) error {
		deadline, _ = ctx.Deadline()
		<-ctx.Done()
		return &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Timeout: true, Transient: true, Err: ctx.Err()}
	})
	var up *erp.UpstreamError
	if !errors.As(err, &up) || up.Attempts != 1 {
		t.Fatalf("err = %v, want an UpstreamError with Attempts 1", err)
	}
	if d := time.Until(deadline); d > 20*time.Millisecond {
		t.Errorf("attempt deadline %v away, want at most the 20ms attempt timeout", d)
	}
	if len(rec.results) != 1 || rec.results[0] != "timeout" {
		t.Errorf("observed %v, want [timeout]", rec.results)
	}
}

func TestDoKeepsTheCallersDeadline(t *testing.T) {
	r := retry.New(retry.Policy{}, nil)
	if got := r.Policy().AttemptTimeout; got != retry.DefaultAttemptTimeout {
		t.Errorf("default attempt timeout %v, want %v", got, retry.DefaultAttemptTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	want, _ := ctx.Deadline()
	_ = r.Do(ctx, retry.Call{}, func(actx context.Context) error {
		if got, _ := actx.Deadline(); got.After(want) {
			t.Errorf("attempt deadline %v is after the caller's %v", got, want)
		}
		return nil
	})
}

func TestResult(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{&erp.UpstreamError{Status: 400, MessageIDs: []string{"M8/108"}}, "business"},
		{&erp.NotFoundError{Entity: erp.EntityInvoice, ID: "1"}, "business"},
		{&erp.UpstreamError{Status: 503, Transient: true}, "transient"},
		{&erp.UpstreamError{Timeout: true}, "timeout"},
		{&erp.UpstreamError{Err: errors.New("tls: bad certificate")}, "error"},
	}
	for _, tt := range tests {
		if got := retry.Result(tt.err); got != tt.want {
			t.Errorf("Result(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
