package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logFlushEvery is how long a log line may wait in the buffer before it is
// written out.
const logFlushEvery = 100 * time.Millisecond

// logWriter buffers the log on its way to w: the access log writes a line
// per request, and a write(2) for each is a large share of a read's CPU.
// A line waits at most flushEvery (a timer armed by the first line into an
// empty buffer), a full buffer is written at once, and Close writes what is
// left, so a graceful shutdown loses no line. It is safe for concurrent use.
type logWriter struct {
	mu     sync.Mutex
	buf    *bufio.Writer
	timer  *time.Timer
	armed  bool
	closed bool
	every  time.Duration
}

func newLogWriter(w io.Writer, every time.Duration) *logWriter {
	lw := &logWriter{buf: bufio.NewWriterSize(w, 64<<10), every: every}
	lw.timer = time.AfterFunc(time.Hour, func() { _ = lw.Flush() })
	lw.timer.Stop()
	return lw
}

// Write buffers p, one log record. After Close it writes p through.
func (lw *logWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	n, err := lw.buf.Write(p)
	if lw.closed {
		if ferr := lw.buf.Flush(); err == nil {
			err = ferr
		}
		return n, err
	}
	if !lw.armed && lw.buf.Buffered() > 0 {
		lw.armed = true
		lw.timer.Reset(lw.every)
	}
	return n, err
}

// Flush writes out what is buffered.
func (lw *logWriter) Flush() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.armed = false
	return lw.buf.Flush()
}

// Close writes out what is buffered; later writes go straight through.
func (lw *logWriter) Close() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.closed = true
	lw.timer.Stop()
	return lw.buf.Flush()
}
