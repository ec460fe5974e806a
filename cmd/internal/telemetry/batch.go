package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of the batching of ended spans (OTEL_BSP_*).
const (
	DefaultBatchDelay = 5 * time.Second
	DefaultBatchSize  = 512
	DefaultQueueSize  = 2048
	// DefaultExportTimeout bounds one export.
	DefaultExportTimeout = 30 * time.Second
)

// batcher is the span processor of a Tracing: it keeps the sampled spans
// that end and exports them in batches from a goroutine of its own, every
// delay or as soon as a batch is full. An ended span is appended to a
// slice under a lock: the SDK's BatchSpanProcessor instead sends each
// span on a channel to its goroutine, which wakes that goroutine once per
// span, a cost of several microseconds per span on a busy machine. Spans
// beyond the queue's size are dropped and counted, never waited for.
type batcher struct {
	exp                  sdktrace.SpanExporter
	delay, timeout       time.Duration
	batchSize, queueSize int

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	dropped atomic.Int64
	// exporting serialises exports: the loop's, a flush's and the last.
	exporting sync.Mutex
	// log, when set, is told of failed exports, at most every
	// failureLogEvery; loggedAt is when it was last told.
	log      *slog.Logger
	loggedAt time.Time
	failed   int64 // spans lost since then
}

// failureLogEvery is the least time between two log lines of failed
// exports.
const failureLogEvery = time.Minute

func newBatcher(exp sdktrace.SpanExporter, delay time.Duration, batchSize, queueSize int) *batcher {
	if delay <= 0 {
		delay = DefaultBatchDelay
	}
	if batchSize <= 0 {
		batchSize = DefaultBatchSize
	}
	if queueSize < batchSize {
		queueSize = max(DefaultQueueSize, batchSize)
	}
	b := &batcher{exp: exp, delay: delay, timeout: DefaultExportTimeout, batchSize: batchSize, queueSize: queueSize,
		queue: make([]sdktrace.ReadOnlySpan, 0, batchSize),
		kick:  make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if len(b.queue) >= b.queueSize {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	b.queue = append(b.queue, s)
	full := len(b.queue) == b.batchSize
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

// export sends what is queued a batch at a time: every full batch, and
// with all the last one that is not full too.
func (b *batcher) export(ctx context.Context, all bool) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.batchSize)
		if n == 0 || (n < b.batchSize && !all) {
			b.mu.Unlock()
			return nil
		}
		batch := make([]sdktrace.ReadOnlySpan, n)
		copy(batch, b.queue)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		ectx, cancel := context.WithTimeout(ctx, b.timeout)
		err := b.exp.ExportSpans(ectx, batch)
		cancel()
		if err != nil {
			b.lost(n, err)
			return err
		}
	}
}

func (b *batcher) ForceFlush(ctx context.Context) error { return b.export(ctx, true) }

func (b *batcher) Shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		close(b.stop)
		<-b.done
		err = b.export(ctx, true)
		if serr := b.exp.Shutdown(ctx); err == nil {
			err = serr
		}
	})
	return err
}

// Dropped is how many spans the full queue has dropped.
func (b *batcher) Dropped() int64 { return b.dropped.Load() }
