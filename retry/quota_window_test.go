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

// TestQuotaLogNeverCrowds: the log lets a request go only while fewer
// than n were written in the span before it or are on their way; one on
// its way holds its place until it is written, and from then on by the
// time it was written; a request is let go exactly when the n-th written
// before it has left the span.
func TestQuotaLogNeverCrowds(t *testing.T) {
	const n, span = 3, 50 * time.Millisecond
	s := &localSlots{}
	for i := range n {
		if _, _, ok := s.admit(n, span); !ok {
			t.Fatalf("request %d refused with %d on their way", i+1, i)
		}
	}
	now, free, ok := s.admit(n, span)
	if ok {
		t.Fatal("a fourth request was let go while three were on their way")
	}
	if want := now.Add(span); !free.Equal(want) {
		t.Errorf("with every place on its way, free at %v, want a span from now, %v", free, want)
	}
	// Written late, as after a new connection: each counts from then.
	time.Sleep(2 * span)
	var written []time.Time
	for range n {
		written = append(written, s.wrote(span))
	}
	if _, _, ok := s.admit(n, span); ok {
		t.Fatal("a request was let go while three were written just now")
	}
	refused := 0
	for len(written) < 4*n {
		now, free, ok := s.admit(n, span)
		oldest := written[len(written)-n]
		if left := now.Sub(oldest) >= span; ok != left {
			t.Fatalf("request %d let go %v, %v after the %d-th written before it (span %v)", len(written)+1, ok, now.Sub(oldest), n, span)
		}
		if ok {
			written = append(written, s.wrote(span))
			continue
		}
		refused++
		if want := oldest.Add(span); !free.Equal(want) {
			t.Fatalf("request %d: free at %v, want %v", len(written)+1, free, want)
		}
		time.Sleep(time.Until(free))
	}
	if refused == 0 {
		t.Error("no request was held back")
	}
	if s.pending != 0 || s.count > n {
		t.Errorf("%d on their way and %d in the log, want none and at most %d", s.pending, s.count, n)
	}
}
