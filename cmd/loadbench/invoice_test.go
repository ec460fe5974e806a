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
	// cached. Either way: the invoice, the Post, the read-back. With the
	// run's read shared, the match and the approval request read no
	// invoice of their own; reading afresh, each does.
	shared := map[string]map[string]int{
		"5105600101": {stepGet: 1, stepMatch: 4, stepApproval: 0, stepPost: 3},
		"5105600102": {stepGet: 1, stepMatch: 4, stepApproval: 0, stepDecide: 0, stepPost: 3},
	}
	fresh := map[string]map[string]int{
		"5105600101": {stepGet: 1, stepMatch: 5, stepApproval: 1, stepPost: 3},
		"5105600102": {stepGet: 1, stepMatch: 5, stepApproval: 1, stepDecide: 0, stepPost: 3},
	}
	if len(r.flows) != len(invoiceFlows) || len(r.fresh) != len(invoiceFlows) || len(r.seq) != len(invoiceFlows) {
		t.Fatalf("%d flows, %d fresh and %d sequential runs, want %d", len(r.flows), len(r.fresh), len(r.seq), len(invoiceFlows))
	}
	for _, f := range r.flows {
		checkFlow(t, "shared", f, shared[f.flow.id])
		// Round trips are told apart by time, which at 5 ms a loaded
		// machine blurs: the bench prints them; here they are shown.
		t.Logf("invoice %s: %d round trips (5 on a quiet machine)", f.flow.id, f.trips())
	}
	for i, f := range r.fresh {
		total := checkFlow(t, "afresh", f, fresh[f.flow.id])
		// The sequential client makes the calls of the fresh flow and a
		// CSRF fetch before its write.
		seq := total + 1
		if r.seq[i].calls != seq || r.seq[i].trips != r.seq[i].calls {
			t.Errorf("invoice %s: sequential client %d calls in %d round trips, want %d calls one after the other", f.flow.id, r.seq[i].calls, r.seq[i].trips, seq)
		}
	}
}

// checkFlow checks the ERP calls of each step of f against want and what
// holds of every flow, and returns the flow's calls.
func checkFlow(t *testing.T, how string, f flowResult, want map[string]int) int {
	t.Helper()
	if len(f.steps) != len(want) {
		t.Errorf("%s, invoice %s: %d steps, want %d", how, f.flow.id, len(f.steps), len(want))
	}
	total := 0
	for _, s := range f.steps {
		if n, ok := want[s.name]; !ok || len(s.calls) != n {
			t.Errorf("%s, invoice %s, %s: %d ERP calls, want %d", how, f.flow.id, s.name, len(s.calls), n)
		}
		if rr := repeatedReads(s.calls); len(rr) > 0 {
			t.Errorf("%s, invoice %s, %s: reads repeated within the request: %v", how, f.flow.id, s.name, rr)
		}
		total += len(s.calls)
	}
	posts := 0
	for _, c := range f.step(stepPost).calls {
		if c.Method == "POST" {
			posts++
		}
		if isFetch(c) {
			t.Errorf("%s, invoice %s: the post fetched a CSRF token by a call of its own: %s", how, f.flow.id, c.Key())
		}
	}
	if posts != 1 {
		t.Errorf("%s, invoice %s: %d writes, want one Post", how, f.flow.id, posts)
	}
	if n := writeTrips(f.step(stepPost).calls); n != 2 {
		t.Errorf("%s, invoice %s: the post's write part took %d round trips, want 2 (Post, read-back)", how, f.flow.id, n)
	}
	return total
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
