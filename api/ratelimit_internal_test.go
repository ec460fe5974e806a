package api

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net/http/httptest"
	"testing"
	"time"
)

// TestBoundedCounterHoldsAtMostItsKeys checks the bound of the table of
// failed authentications: at most max keys per window, a new key beyond
// them refused, and the counts of windows before the previous one dropped.
func TestBoundedCounterHoldsAtMostItsKeys(t *testing.T) {
	c := &boundedCounter{max: 3, seed: maphash.MakeSeed()}
	c.Config(0, time.Minute)
	w := time.Now().UTC().Truncate(time.Minute)
	for _, k := range []string{"a", "b", "c", "a"} {
		if err := c.Increment(k, w); err != nil {
			t.Fatalf("key %s: %v", k, err)
		}
	}
	if err := c.Increment("d", w); !errors.Is(err, errSourcesFull) {
		t.Fatalf("a 4th key: %v, want errSourcesFull", err)
	}
	if cur, prev, _ := c.Get("a", w, w.Add(-time.Minute)); cur != 2 || prev != 0 {
		t.Errorf("a: %d, %d, want 2, 0", cur, prev)
	}
	// The next window starts empty and keeps the last as the previous.
	next := w.Add(time.Minute)
	if err := c.Increment("d", next); err != nil {
		t.Fatalf("d in the next window: %v", err)
	}
	if cur, prev, _ := c.Get("a", next, w); cur != 0 || prev != 2 {
		t.Errorf("a in the next window: %d, %d, want 0, 2", cur, prev)
	}
	if n := c.size(); n != 4 {
		t.Errorf("size %d, want 4 (3 + 1)", n)
	}
	// Two windows on, nothing of the first is left.
	if err := c.Increment("e", next.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := c.size(); n != 1 {
		t.Errorf("size %d two windows on, want 1", n)
	}
}

// TestAuthFailLimiterBeyondItsTable checks that a failure from an address
// the full table cannot take is refused as over the limit.
func TestAuthFailLimiterBeyondItsTable(t *testing.T) {
	l := newAuthFailLimiter(5, time.Hour, 100)
	r := httptest.NewRequest("GET", "/", nil)
	for i := range 100 {
		if _, limited := onLimit(l, r, fmt.Sprintf("198.51.100.%d", i)); limited {
			t.Fatalf("address %d of 100 limited", i)
		}
	}
	if wait, limited := onLimit(l, r, "203.0.113.1"); !limited || wait < 1 {
		t.Errorf("the 101st address: limited %v, wait %d, want limited", limited, wait)
	}
	if _, limited := onLimit(l, r, "198.51.100.1"); limited {
		t.Errorf("an address in the table was limited after 1 failure")
	}
}
