package recheck_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/erp/recheck"
)

var t0 = time.Date(2026, time.November, 29, 10, 0, 0, 0, time.UTC)

// queues returns a fresh queue of each kind.
func queues(t *testing.T) map[string]recheck.Queue {
	t.Helper()
	return map[string]recheck.Queue{
		"memory": recheck.NewMemoryQueue(),
		"redis":  recheck.NewRedisQueue(newRedis(t), "test:"),
	}
}

func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { c.Close() })
	return c
}

func ids(entries []recheck.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.HoldID
	}
	return out
}

func sameEntry(a, b recheck.Entry) bool {
	return a.HoldID == b.HoldID && a.InvoiceID == b.InvoiceID && a.FiscalYear == b.FiscalYear &&
		a.RecheckAt.Equal(b.RecheckAt) && a.Checks == b.Checks
}

func mustLen(t *testing.T, q recheck.Queue, want int) {
	t.Helper()
	n, err := q.Len(context.Background())
	if err != nil || n != want {
		t.Fatalf("Len: got %d, %v, want %d", n, err, want)
	}
}

func TestQueue(t *testing.T) {
	for name, q := range queues(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			add := func(id string, at time.Time) {
				t.Helper()
				if err := q.Add(ctx, recheck.Entry{HoldID: id, InvoiceID: "51056001" + id[len(id)-2:], FiscalYear: "2026", RecheckAt: at, Checks: 2}); err != nil {
					t.Fatalf("Add %s: %v", id, err)
				}
			}
			add("H0000003", t0.Add(2*time.Minute))
			add("H0000001", t0.Add(time.Minute))
			add("H0000004", t0.Add(time.Hour))
			add("H0000002", t0.Add(time.Minute))
			add("H0000005", t0)
			mustLen(t, q, 5)

			if got, err := q.Claim(ctx, t0.Add(-time.Second), 10); err != nil || len(got) != 0 {
				t.Errorf("Claim before anything is due: got %v, %v, want none", got, err)
			}
			if got, err := q.Claim(ctx, t0.Add(time.Minute), 0); err != nil || len(got) != 0 {
				t.Errorf("Claim with limit 0: got %v, %v, want none", got, err)
			}

			// Earliest first, ties by hold id, at most limit.
			got, err := q.Claim(ctx, t0.Add(5*time.Minute), 2)
			if err != nil || !slices.Equal(ids(got), []string{"H0000005", "H0000001"}) {
				t.Fatalf("Claim limit 2: got %v, %v, want H0000005 H0000001", ids(got), err)
			}
			want := recheck.Entry{HoldID: "H0000005", InvoiceID: "5105600105", FiscalYear: "2026", RecheckAt: t0, Checks: 2}
			if !sameEntry(got[0], want) {
				t.Errorf("claimed entry: got %+v, want %+v", got[0], want)
			}
			mustLen(t, q, 3)

			// Due exactly now counts; later entries stay.
			got, err = q.Claim(ctx, t0.Add(2*time.Minute), 10)
			if err != nil || !slices.Equal(ids(got), []string{"H0000002", "H0000003"}) {
				t.Fatalf("Claim at 10:02: got %v, %v, want H0000002 H0000003", ids(got), err)
			}
			mustLen(t, q, 1)

			// Add replaces the entry with the same hold id.
			add("H0000004", t0)
			mustLen(t, q, 1)
			got, err = q.Claim(ctx, t0, 10)
			if err != nil || !slices.Equal(ids(got), []string{"H0000004"}) {
				t.Fatalf("Claim after replacing: got %v, %v, want H0000004", ids(got), err)
			}
			mustLen(t, q, 0)
			if got, err := q.Claim(ctx, t0.Add(24*time.Hour), 10); err != nil || len(got) != 0 {
				t.Errorf("Claim of an empty queue: got %v, %v, want none", got, err)
			}

			if err := q.Add(ctx, recheck.Entry{RecheckAt: t0}); !errors.Is(err, recheck.ErrNoHoldID) {
				t.Errorf("Add without hold id: got %v, want ErrNoHoldID", err)
			}
		})
	}
}

func TestRedisQueueSharedByClients(t *testing.T) {
	addr := redistest.Addr(t)
	a := recheck.NewRedisQueue(redis.NewClient(&redis.Options{Addr: addr}), "{erpgate}:")
	b := recheck.NewRedisQueue(redis.NewClient(&redis.Options{Addr: addr}), "{erpgate}:")
	other := recheck.NewRedisQueue(redis.NewClient(&redis.Options{Addr: addr}), "other:")
	ctx := context.Background()
	for i := range 3 {
		if err := a.Add(ctx, recheck.Entry{HoldID: fmt.Sprintf("H%07d", i+1), RecheckAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	mustLen(t, b, 3)
	mustLen(t, other, 0)
	got, err := b.Claim(ctx, t0, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("Claim through the other client: got %v, %v, want 3 entries", ids(got), err)
	}
	mustLen(t, a, 0)
}

func TestRedisQueueReturnsErrors(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	q := recheck.NewRedisQueue(c, "test:")
	ctx := context.Background()
	if err := q.Add(ctx, recheck.Entry{HoldID: "H0000001", RecheckAt: t0}); err == nil {
		t.Errorf("Add without Redis: got nil error")
	}
	if got, err := q.Claim(ctx, t0, 10); err == nil {
		t.Errorf("Claim without Redis: got %v, nil error", got)
	}
	if _, err := q.Len(ctx); err == nil {
		t.Errorf("Len without Redis: got nil error")
	}
}

func TestRedisQueueUndecodableEntry(t *testing.T) {
	c := newRedis(t)
	q := recheck.NewRedisQueue(c, "test:")
	ctx := context.Background()
	if err := q.Add(ctx, recheck.Entry{HoldID: "H0000001", RecheckAt: t0}); err != nil {
		t.Fatal(err)
	}
	c.ZAdd(ctx, "test:recheck:due", redis.Z{Score: float64(t0.UnixMilli()), Member: "H0000002"})
	c.HSet(ctx, "test:recheck:entries", "H0000002", "not json")
	got, err := q.Claim(ctx, t0, 10)
	if err == nil || !slices.Equal(ids(got), []string{"H0000001"}) {
		t.Errorf("Claim with a bad entry: got %v, %v, want H0000001 and an error", ids(got), err)
	}
	mustLen(t, q, 0)
}
