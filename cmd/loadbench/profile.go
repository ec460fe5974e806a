package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// profileTime is how long -profile samples erpgate's CPU.
const profileTime = 10 * time.Second

// profileCPU loads erpgate through l at rate while it samples its own CPU
// for d (net/http/pprof on its profiles port), and writes the profile to
// path.
func profileCPU(ctx context.Context, gw *child, l *loader, rate float64, d time.Duration, path string) error {
	var base string
	select {
	case base = <-gw.profiles:
	case <-time.After(5 * time.Second):
		return errors.New("erpgate printed no profiles address")
	}
	type result struct {
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, max(1, int(d.Seconds())))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, body)
		}
		done <- result{body, err}
	}()
	// The load runs a little longer than the sampling on both sides.
	l.attack(ctx, rate, 8, d+time.Second, 0)
	r := <-done
	if r.err != nil {
		return r.err
	}
	return os.WriteFile(path, r.body, 0o644)
}
