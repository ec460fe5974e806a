package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
)

// TestInvoiceRound decides both golden invoices once with a small latency
// and checks what each step cost at the ERP: the calls, never the times.
func TestInvoiceRound(t *testing.T) {
	r, err := runInvoiceRound(context.Background(), 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The clean invoice's post is the first write of the gateway: its
	// read of the invoice brings the CSRF token along. The second finds it
	// cached. Either way: the invoice, the Post, the read-back.
	want := map[string]map[string]int{
		"5105600101": {stepGet: 1, stepMatch: 5, stepApproval: 1, stepPost: 3},
		"5105600102": {stepGet: 1, stepMatch: 5, stepApproval: 1, stepDecide: 0, stepPost: 3},
	}
	if len(r.flows) != len(invoiceFlows) || len(r.seq) != len(invoiceFlows) {
		t.Fatalf("%d flows and %d sequential runs, want %d", len(r.flows), len(r.seq), len(invoiceFlows))
	}
	for i, f := range r.flows {
		w := want[f.flow.id]
		if len(f.steps) != len(w) {
			t.Errorf("invoice %s: %d steps, want %d", f.flow.id, len(f.steps), len(w))
		}
		total := 0
		for _, s := range f.steps {
			if n, ok := w[s.name]; !ok || len(s.calls) != n {
				t.Errorf("invoice %s, %s: %d ERP calls, want %d", f.flow.id, s.name, len(s.calls), n)
			}
			if rr := repeatedReads(s.calls); len(rr) > 0 {
				t.Errorf("invoice %s, %s: reads repeated within the request: %v", f.flow.id, s.name, rr)
			}
			total += len(s.calls)
		}
		posts := 0
		for _, c := range f.step(stepPost).calls {
			if c.Method == "POST" {
				posts++
			}
		}
		if posts != 1 {
			t.Errorf("invoice %s: %d writes, want one Post", f.flow.id, posts)
		}
		// The sequential client makes the same calls and a CSRF fetch
		// before its write.
		seq := total + 1
		for _, c := range f.step(stepPost).calls {
			if isFetch(c) {
				t.Errorf("invoice %s: the post fetched a CSRF token by a call of its own: %s", f.flow.id, c.Key())
			}
		}
		if n := writeTrips(f.step(stepPost).calls); n != 2 {
			t.Errorf("invoice %s: the post's write part took %d round trips, want 2 (Post, read-back)", f.flow.id, n)
		}
		if r.seq[i].calls != seq || r.seq[i].trips > r.seq[i].calls {
			t.Errorf("invoice %s: sequential client %d calls in %d round trips, want %d calls", f.flow.id, r.seq[i].calls, r.seq[i].trips, seq)
		}
	}
}

func TestRoundTrips(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	call := func(from, to int, method string, fetch bool) sim.Call {
		return sim.Call{Method: method, Path: "A_X", Fetch: fetch, Start: at(from), End: at(to)}
	}
	calls := []sim.Call{
		call(100, 150, "GET", false), // the match's reads after the invoice, at once
		call(0, 50, "GET", false),    // the invoice
		call(101, 149, "GET", false),
		call(149, 200, "GET", false), // started before the others ended: same trip
		call(200, 250, "GET", true),  // the CSRF fetch, once they have ended
		call(250, 300, "POST", false),
		call(300, 350, "GET", false), // the read-back
	}
	calls[4].Path = "" // the service root
	if n := roundTrips(calls); n != 5 {
		t.Errorf("round trips: got %d, want 5", n)
	}
	if n := writeTrips(calls); n != 3 {
		t.Errorf("write trips: got %d, want 3 (fetch, Post, read-back)", n)
	}
	if n := roundTrips(nil); n != 0 {
		t.Errorf("round trips of no calls: got %d, want 0", n)
	}
	calls[0].Fetch = true // a token fetched on a read: still a read, and not a trip of the write's
	if n := writeTrips(calls); n != 3 {
		t.Errorf("write trips with a fetch on a read: got %d, want 3", n)
	}
	if rr := repeatedReads(calls); len(rr) != 1 || !strings.HasPrefix(rr[0], "GET ") {
		t.Errorf("repeated reads: got %v, want the one read made four times, once", rr)
	}
}

func TestInvoiceBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-latency", "0s"}, {"-rounds", "0"}, {"extra"}, {"-nope"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"invoice"}, args...), &bytes.Buffer{}, &stderr)
		if !errors.Is(err, errUsage) {
			t.Errorf("invoice %q: got %v, want a usage error", args, err)
		}
	}
}
