package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// sample is one request: whether it was sent, its answer and how long the
// answer took.
type sample struct {
	answer
	sent    bool
	latency time.Duration
}

// drive sends n requests through get, c at a time, until all are answered
// or ctx ends. Requests not sent by then, or whose answer ctx cut short,
// stay unfinished.
func drive(ctx context.Context, n, c int, get func(context.Context) answer) []sample {
	samples := make([]sample, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(c, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				start := time.Now()
				a := get(ctx)
				samples[i] = sample{answer: a, sent: true, latency: time.Since(start)}
			}
		})
	}
	wg.Wait()
	return samples
}
