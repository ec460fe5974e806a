package main

import (
	"math"
	"slices"
	"time"
)

// row is one line of the table: one client's run through one scenario.
type row struct {
	scenario string
	client   string
	// requests is how many requests were sent before the cap.
	requests int
	// erpCalls is how many OData requests reached the ERP from t0 on.
	erpCalls int64
	// busiest is the most requests (CSRF token fetches too) that reached
	// the ERP in any 1 s window from t0 on.
	busiest int
	// failures are the latencies of the failed requests, fast-fails
	// included. A fast-fail is an answer with details.breaker "open":
	// refused holds those that made no attempt (the request arrived while
	// the breaker was open), late those that tried the ERP before the
	// breaker opened.
	failures, refused, late []time.Duration
	// probe holds the fast-fails of one client alone, sent after the
	// loaded run while the breaker was still open.
	probe []time.Duration
	// unfinished counts requests not answered by the cap, sent or not.
	unfinished int
	// codes counts the gateway's error codes.
	codes map[string]int
	// breaker is set for a client with a breaker; opened and toOpen then
	// say whether and how long after t0 the purchase order breaker opened.
	breaker, opened bool
	toOpen          time.Duration
}

// summarize counts a run's samples into a row.
func summarize(samples []sample) row {
	r := row{codes: map[string]int{}}
	for _, s := range samples {
		if s.sent {
			r.requests++
		}
		if s.code != "" {
			r.codes[s.code]++
		}
		switch s.outcome {
		case unfinished:
			r.unfinished++
		case fastFail:
			if s.attempts == 0 {
				r.refused = append(r.refused, s.latency)
			} else {
				r.late = append(r.late, s.latency)
			}
			r.failures = append(r.failures, s.latency)
		case failure:
			r.failures = append(r.failures, s.latency)
		}
	}
	return r
}

// withBreaker fills in when the breaker first opened at or after t0.
func (r row) withBreaker(openings []time.Time, hasBreaker bool, t0 time.Time) row {
	r.breaker = hasBreaker
	for _, at := range openings {
		if !at.Before(t0) {
			r.opened, r.toOpen = true, at.Sub(t0)
			return r
		}
	}
	return r
}

// fastFails counts the answers the open breaker gave.
func (r row) fastFails() int { return len(r.refused) + len(r.late) }

// amplification is ERP calls per request sent.
func (r row) amplification() float64 {
	if r.requests == 0 {
		return 0
	}
	return float64(r.erpCalls) / float64(r.requests)
}

// percentile is the nearest-rank p-th quantile (0 < p ≤ 1) of ds; zero for
// none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
