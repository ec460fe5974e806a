package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the batching of ended spans (OTEL_BSP_*).
const (
	DefaultBatchDelay = 5 * time.Second
	DefaultBatchSize  = 512
	DefaultQueueSize  = 2048
	// DefaultExportTimeout bounds one export.
	DefaultExportTimeout = 30 * time.Second
)

// encoding writes spans in one of OTLP's encodings: each span as it
// ends, into the batch it goes in; the request around a batch as it is
// sent.
type encoding interface {
	// appendItem encodes span s at the end of a batch of n spans.
	appendItem(batch []byte, n int, s *span) []byte
	// appendRequest appends the export request of a batch.
	appendRequest(b []byte, batch []byte) []byte
}

// exporter sends an encoded export request of n spans.
type exporter interface {
	send(ctx context.Context, body []byte, n int) error
	shutdown()
}

// batch is encoded spans waiting to be sent together.
type batch struct {
	spans []byte
	n     int
}

// batcher keeps the sampled spans that end, encoded, and exports them in
// batches from a goroutine of its own, every delay or as soon as a batch
// is full. An ended span is encoded into the open batch under a lock: the
// SDK's BatchSpanProcessor instead sends each span on a channel to its
// goroutine, which wakes that goroutine once per span, a cost of several
// microseconds per span on a busy machine. Spans beyond the queue's size
// are dropped and counted, never waited for.
type batcher struct {
	enc                  encoding
	exp                  exporter
	delay, timeout       time.Duration
	batchSize, queueSize int

	mu     sync.Mutex
	open   *batch   // being filled; nil when none is
	full   []*batch // waiting to be sent
	queued int      // spans in open and full
	free   []*batch // sent, to be filled again

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	dropped atomic.Int64
	// exporting serialises exports: the loop's, a flush's and the last;
	// body is the request they write, used again.
	exporting sync.Mutex
	body      []byte
	// log, when set, is told of failed exports, at most every
	// failureLogEvery; loggedAt is when it was last told.
	log      *slog.Logger
	loggedAt time.Time
	failed   int64 // spans lost since then
}

// failureLogEvery is the least time between two log lines of failed
// exports.
const failureLogEvery = time.Minute

// keptBatches is how many sent batches' buffers are kept to be filled
// again.
const keptBatches = 2

func newBatcher(enc encoding, exp exporter, delay time.Duration, batchSize, queueSize int) *batcher {
	if delay <= 0 {
		delay = DefaultBatchDelay
	}
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	if queueSize < batchSize {
		queueSize = max(DefaultQueueSize, batchSize)
	}
	b := &batcher{enc: enc, exp: exp, delay: delay, timeout: DefaultExportTimeout, batchSize: batchSize, queueSize: queueSize,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// add encodes the ended span s into the open batch, or drops it when the
// queue is full.
func (b *batcher) add(s *span) {
	b.mu.Lock()
	if b.queued >= b.queueSize {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	if b.open == nil {
		if n := len(b.free); n > 0 {
			b.open, b.free = b.free[n-1], b.free[:n-1]
		} else {
			b.open = &batch{}
		}
	}
	b.open.spans = b.enc.appendItem(b.open.spans, b.open.n, s)
	b.open.n++
	b.queued++
	full := b.open.n == b.batchSize
	if full {
		b.full, b.open = append(b.full, b.open), nil
	}
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	t := time.NewTicker(b.delay)
	defer t.Stop()
	for {
		all := false
		select {
		case <-b.stop:
			return
		case <-t.C:
			all = true
		case <-b.kick:
		}
		_ = b.export(context.Background(), all)
	}
}

// lost counts n spans an export lost to err and logs them now and then.
// Called with exporting held.
func (b *batcher) lost(n int, err error) {
	b.failed += int64(n)
	if b.log == nil || time.Since(b.loggedAt) < failureLogEvery {
		return
	}
	b.log.Warn("spans not exported", "spans", b.failed, "dropped_queue_full", b.dropped.Load(), "error", err.Error())
	b.loggedAt, b.failed = time.Now(), 0
}

// next takes the batch to send: the first full one, or with all the open
// one; nil when there is none.
func (b *batcher) next(all bool) *batch {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t *batch
	switch {
	case len(b.full) > 0:
		t = b.full[0]
		b.full[0] = nil
		b.full = b.full[1:]
	case all && b.open != nil && b.open.n > 0:
		t, b.open = b.open, nil
	default:
		return nil
	}
	b.queued -= t.n
	return t
}

// recycle keeps t's buffer to be filled again.
func (b *batcher) recycle(t *batch) {
	t.spans, t.n = t.spans[:0], 0
	b.mu.Lock()
	if len(b.free) < keptBatches {
		b.free = append(b.free, t)
	}
	b.mu.Unlock()
}

// export sends what is queued a batch at a time: every full batch, and
// with all the open one too.
func (b *batcher) export(ctx context.Context, all bool) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	for {
		t := b.next(all)
		if t == nil {
			return nil
		}
		b.body = b.enc.appendRequest(b.body[:0], t.spans)
		n := t.n
		b.recycle(t)
		ectx, cancel := context.WithTimeout(ctx, b.timeout)
		err := b.exp.send(ectx, b.body, n)
		cancel()
		if err != nil {
			b.lost(n, err)
			return err
		}
	}
}

// flush sends every span ended so far.
func (b *batcher) flush(ctx context.Context) error { return b.export(ctx, true) }

// shutdown stops the loop, sends what is left within ctx and closes the
// exporter. Spans that end after it are dropped.
func (b *batcher) shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		close(b.stop)
		<-b.done
		err = b.export(ctx, true)
		b.mu.Lock()
		b.queueSize = 0
		b.mu.Unlock()
		b.exp.shutdown()
	})
	return err
}

// Dropped is how many spans the full queue has dropped.
func (b *batcher) Dropped() int64 { return b.dropped.Load() }
