// Package recheck re-checks held invoices on a schedule. An invoice is put
// on hold when the goods receipt for a goods-receipt-based purchase order
// item is missing; a Scheduler later reads the invoice, its purchase order
// items and their goods receipts again and releases the hold in the ERP
// once every such item has received at least the invoiced quantity.
//
// The holds to re-check wait in a Queue. MemoryQueue serves a single
// gateway; RedisQueue is shared by all replicas, and its Claim hands each
// due entry to exactly one of them.
package recheck

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Entry is one hold waiting to be re-checked.
type Entry struct {
	HoldID     string    `json:"hold_id"`
	InvoiceID  string    `json:"invoice_id"`
	FiscalYear string    `json:"fiscal_year"`
	RecheckAt  time.Time `json:"recheck_at"`
	// Checks counts the re-checks that found the goods receipt still
	// missing; a failed attempt does not count.
	Checks int `json:"checks"`
}

// Queue holds the entries waiting for their re-check, keyed by HoldID.
// Implementations are safe for concurrent use.
type Queue interface {
	// Add stores e, replacing any entry with the same HoldID.
	Add(ctx context.Context, e Entry) error
	// Claim removes and returns up to limit entries whose RecheckAt is at
	// or before now, the earliest first (ties by HoldID). Removal and
	// return are one atomic step: of several callers sharing the queue,
	// only one gets a given entry. Times compare in whole milliseconds.
	// Entries returned together with an error were claimed all the same
	// and are the caller's to handle.
	Claim(ctx context.Context, now time.Time, limit int) ([]Entry, error)
	// Len returns how many entries are queued, due or not.
	Len(ctx context.Context) (int, error)
}

// ErrNoHoldID is returned by Add for an entry without a HoldID.
var ErrNoHoldID = errors.New("recheck: entry has no hold id")

// MemoryQueue is a Queue in the memory of one process.
type MemoryQueue struct {
	mu      sync.Mutex
	entries map[string]Entry
}

var _ Queue = (*MemoryQueue)(nil)

// NewMemoryQueue returns an empty MemoryQueue.
func NewMemoryQueue() *MemoryQueue {
	return &MemoryQueue{entries: map[string]Entry{}}
}

// Add implements Queue.
func (q *MemoryQueue) Add(ctx context.Context, e Entry) error {
	if e.HoldID == "" {
		return ErrNoHoldID
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.entries[e.HoldID] = e
	return nil
}

// Claim implements Queue.
func (q *MemoryQueue) Claim(ctx context.Context, now time.Time, limit int) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	var due []Entry
	for _, e := range q.entries {
		if e.RecheckAt.UnixMilli() <= now.UnixMilli() {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.RecheckAt.UnixMilli(), b.RecheckAt.UnixMilli()), cmp.Compare(a.HoldID, b.HoldID))
	})
	due = due[:min(limit, len(due))]
	for _, e := range due {
		delete(q.entries, e.HoldID)
	}
	return due, nil
}

// Len implements Queue.
func (q *MemoryQueue) Len(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.entries), nil
}
