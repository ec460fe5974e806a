package sap

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// TestRetryAfterPastTheDeadline: a Retry-After the call's deadline cannot
// wait out ends the call at once, after one attempt and without a wait,
// and the agent is told the hint as given; a hint beyond MaxRetryAfter, in
// seconds or as a date, is told as MaxRetryAfter. A hint within the
// deadline is waited for.
func TestRetryAfterPastTheDeadline(t *testing.T) {
	day := int(MaxRetryAfter / time.Second)
	tests := []struct {
		name   string
		header func() string
		want   int // retry_after_s
	}{
		{"an hour", func() string { return "3600" }, 3600},
		{"a day", func() string { return strconv.Itoa(day) }, day},
		{"two days", func() string { return strconv.Itoa(2 * day) }, day},
		{"beyond int64", func() string { return "99999999999999999999" }, day},
		{"a date in two days", func() string { return time.Now().Add(48 * time.Hour).UTC().Format(http.TimeFormat) }, day},
	}
	for _, tt := range tests {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(tt.name+" "+strconv.Itoa(status), func(t *testing.T) {
				f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Retry-After", tt.header())
					writeJSON(w, status, `{}`)
				})
				var (
					mu     sync.Mutex
					sleeps []time.Duration
				)
				runner := retry.New(retry.Policy{MaxAttempts: 3, CallTimeout: 10 * time.Second,
					Sleep: func(_ context.Context, d time.Duration) error {
						mu.Lock()
						sleeps = append(sleeps, d)
						mu.Unlock()
						return nil
					}}, nil)
				_, err := f.client(Options{Runner: runner}).PurchaseOrder(context.Background(), "4500018822")
				e := errmap.Map(err)
				if e.Code != errmap.ERPUnavailable || e.Details["retry_after_s"] != tt.want || e.Details["attempts"] != 1 {
					t.Errorf("got %s %v, want ERP_UNAVAILABLE with retry_after_s %d after 1 attempt", e.Code, e.Details, tt.want)
				}
				if n := len(f.odata()); n != 1 || len(sleeps) != 0 {
					t.Errorf("%d requests, waits %v; want 1 request and no wait", n, sleeps)
				}
			})
		}
	}

	// A hint within the deadline is waited for, and the retry succeeds.
	n := 0
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if n++; n == 1 {
			w.Header().Set("Retry-After", "2")
			writeJSON(w, http.StatusTooManyRequests, `{}`)
			return
		}
		writeJSON(w, 200, poJSON)
	})
	var sleeps []time.Duration
	runner := retry.New(retry.Policy{MaxAttempts: 3, CallTimeout: 10 * time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil }}, nil)
	if _, err := f.client(Options{Runner: runner}).PurchaseOrder(context.Background(), "4500018822"); err != nil || len(sleeps) != 1 || sleeps[0] != 2*time.Second {
		t.Errorf("short hint: %v after waits %v, want success after one wait of 2s", err, sleeps)
	}
}
