package retry

import (
	"testing"
	"time"
)

// TestQuotaWindow: the ceiling is a whole number of calls in any second
// (the guard added), spaced evenly; below one a second, one call every
// 1/rate seconds; none without a rate.
func TestQuotaWindow(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		n        int
		span     time.Duration
		interval time.Duration
	}{
		{0, 0, 0, 0},
		{20, 20, time.Second + QuotaGuard, (time.Second + QuotaGuard) / 20},
		{2.5, 2, time.Second + QuotaGuard, (time.Second + QuotaGuard) / 2},
		{1, 1, time.Second + QuotaGuard, time.Second + QuotaGuard},
		{0.5, 1, 2*time.Second + QuotaGuard, 2*time.Second + QuotaGuard},
		{11, 11, time.Second + QuotaGuard, 95454546}, // 1.05 s / 11, rounded up
		{1e-30, 1, 24*time.Hour + QuotaGuard, 24*time.Hour + QuotaGuard},
	} {
		n, span, interval := QuotaSettings{Rate: tc.rate}.window()
		if n != tc.n || span != tc.span || interval != tc.interval {
			t.Errorf("rate %g: %d in %v spaced %v, want %d in %v spaced %v", tc.rate, n, span, interval, tc.n, tc.span, tc.interval)
		}
	}
}

// TestQuotaLogNeverCrowds: sends noted at once, as many callers would
// after a late wake-up, are let go only while the log holds fewer than n
// in the span; then each is let go exactly when the n-th before it has
// left the span.
func TestQuotaLogNeverCrowds(t *testing.T) {
	const n, span = 3, 50 * time.Millisecond
	s := &localSlots{}
	var sent []time.Time
	for i := range n {
		now, _, ok := s.send(n, span)
		if !ok {
			t.Fatalf("send %d refused with %d in the log", i+1, i)
		}
		sent = append(sent, now)
	}
	refused := 0
	for len(sent) < 3*n {
		now, free, ok := s.send(n, span)
		oldest := sent[len(sent)-n]
		if left := now.Sub(oldest) >= span; ok != left {
			t.Fatalf("send %d let go %v, %v after the %d-th before it (span %v)", len(sent)+1, ok, now.Sub(oldest), n, span)
		}
		if ok {
			sent = append(sent, now)
			continue
		}
		refused++
		if want := oldest.Add(span); !free.Equal(want) {
			t.Fatalf("send %d: free at %v, want %v", len(sent)+1, free, want)
		}
		time.Sleep(time.Until(free))
	}
	if refused == 0 {
		t.Error("no send was held back")
	}
}
