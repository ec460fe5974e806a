package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLogWriterClose writes lines from many goroutines and closes the
// writer: every line arrives whole, none is lost, and a line written after
// Close goes straight through.
func TestLogWriterClose(t *testing.T) {
	var out syncBuffer
	lw := newLogWriter(&out, time.Hour)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(lw, "line %d-%d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2000 {
		t.Fatalf("%d lines after Close, want 2000", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(seen) != 2000 {
		t.Fatalf("%d distinct lines, want 2000", len(seen))
	}
	fmt.Fprintln(lw, "after close")
	if !strings.HasSuffix(out.String(), "after close\n") {
		t.Fatal("a line written after Close was held back")
	}
}

// TestLogWriterFlushesOnItsOwn checks that a buffered line is written out
// without Close, once the flush interval has passed.
func TestLogWriterFlushesOnItsOwn(t *testing.T) {
	var out syncBuffer
	lw := newLogWriter(&out, 10*time.Millisecond)
	defer lw.Close()
	fmt.Fprintln(lw, "first")
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != "first\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the line was not written out: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Fprintln(lw, "second")
	for out.String() != "first\nsecond\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the second line was not written out: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAccessLogAtShutdown serves requests, shuts the gateway down at once
// and finds every request's access-log line in what it wrote: the buffered
// log is written out on a graceful shutdown.
func TestAccessLogAtShutdown(t *testing.T) {
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	args := []string{"-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-data-dir", t.TempDir()}
	go func() {
		done <- run(ctx, args, func(string) string { return "" }, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q", line)
	}
	const n = 50
	for i := range n {
		req, _ := http.NewRequest(http.MethodGet, m[1]+"/healthz", nil)
		req.Header.Set("X-Request-Id", fmt.Sprintf("shutdown-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the gateway did not shut down")
	}
	log := stderr.String()
	for i := range n {
		if !strings.Contains(log, fmt.Sprintf(`"request_id":"shutdown-%d"`, i)) {
			t.Fatalf("no access-log line for request %d in:\n%s", i, log)
		}
	}
	if !strings.Contains(log, "shutting down") {
		t.Fatalf("no shutdown line in:\n%s", log)
	}
}

// BenchmarkAccessLogLine is one access-log line written by the JSON
// handler into a pipe, as to a supervisor's stderr, straight and through
// the buffered writer.
func BenchmarkAccessLogLine(b *testing.B) {
	for _, buffered := range []bool{false, true} {
		b.Run(fmt.Sprintf("buffered=%v", buffered), func(b *testing.B) {
			pr, f, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			go func() { _, _ = io.Copy(io.Discard, pr) }()
			var w io.Writer = f
			if buffered {
				lw := newLogWriter(f, logFlushEvery)
				defer lw.Close()
				w = lw
			}
			logger := slog.New(slog.NewJSONHandler(w, nil))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				logger.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("request_id", "0123456789abcdef0123456789abcdef"),
					slog.String("method", "GET"), slog.String("path", "/invoices/5105600101"), slog.Int("status", 200),
					slog.Int64("duration_ms", 0), slog.String("operation", "get_invoice"), slog.String("code", "OK"),
					slog.String("client", "agent"))
			}
		})
	}
}
