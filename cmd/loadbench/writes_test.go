package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// TestWritesRound runs the writes bench once in a tiny configuration, on
// SQLite and on PostgreSQL (the server .ci/test.sh starts, else a
// throwaway cluster of the bench's own), and checks the counts, never the
// times: every call answered 2xx with store work measured, every
// hand_over a handover of its own, every post the posting of one of the
// two golden invoices, and the memory part's calls all answered.
func TestWritesRound(t *testing.T) {
	const calls, runIDs, keys = 30, 400, 300
	cfg := writesConfig{calls: calls, conc: 2, databaseURL: os.Getenv(recordstest.EnvDatabaseURL),
		runs: runIDs, keys: keys, memConc: 8, erpgate: erpgateBin}
	r, err := writesRound(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if r.pgNote != "" {
		t.Fatalf("no PostgreSQL column: %s", r.pgNote)
	}
	want := map[string]bool{}
	for _, e := range []string{engineSQLite, enginePostgres} {
		for _, op := range []string{opPost, opHandOver} {
			want[op+" on "+e] = true
		}
	}
	for _, c := range r.cells {
		name := c.op + " on " + c.engine
		if !want[name] {
			t.Errorf("%s: a cell not asked for, or twice", name)
		}
		delete(want, name)
		if c.non2xx != 0 || c.noWork != 0 || len(c.calls) != calls {
			t.Errorf("%s: %d calls with store work, %d not 2xx (first: %s), %d without store work; want %d, 0, 0",
				name, len(c.calls), c.non2xx, c.firstErr, c.noWork, calls)
		}
		for _, k := range c.calls {
			if k.store <= 0 || k.storeCalls < 3 || k.store > k.wall {
				t.Errorf("%s: store work %s in %d store calls of a call of %s; want more than 0 in at least 3 (key and lease claimed, record or approval, settled), within the call",
					name, k.store, k.storeCalls, k.wall)
				break
			}
		}
		wantIDs := calls // a handover of its own per call
		if c.op == opPost {
			wantIDs = len(invoiceFlows) // the posted invoices
		}
		if c.ids != wantIDs {
			t.Errorf("%s: %d distinct records answered, want %d", name, c.ids, wantIDs)
		}
	}
	for name := range want {
		t.Errorf("%s: no cell", name)
	}
	if r.memory == nil || len(r.memory.phases) != 2 {
		t.Fatalf("memory part: %+v, want both phases", r.memory)
	}
	for _, ph := range r.memory.phases {
		if ph.answered() != ph.ids {
			t.Errorf("memory, %s: %d of %d calls answered 2xx: %s", ph.name, ph.answered(), ph.ids, ph.statusList())
		}
		if ph.before().rss <= 0 || ph.after.rss <= 0 || ph.after.heapGC <= 0 {
			t.Errorf("memory, %s: RSS %d before, %d after, heap %d after GC; want them read", ph.name, ph.before().rss, ph.after.rss, ph.after.heapGC)
		}
	}
	var out bytes.Buffer
	printWrites(&out, r)
	for _, s := range []string{"post_invoice  postgres", "hand_over     sqlite", "goal  hand_over on postgres: store work p50 <= 2.00ms",
		"goal  memory flat after 400 distinct run ids"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
}

func TestWritesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "0"}, {"-c", "0"}, {"-runs", "-1"}, {"-memc", "0"}, {"extra"}, {"-nope"}} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"writes"}, args...), &bytes.Buffer{}, &stderr)
		if !errors.Is(err, errUsage) {
			t.Errorf("writes %q: got %v, want a usage error", args, err)
		}
	}
}

// TestDecisionsRound runs the decisions bench once with a few decisions on
// SQLite and on PostgreSQL, and checks that every decision was measured
// to its webhook, in order: the answer before get_hold showed the release.
func TestDecisionsRound(t *testing.T) {
	const n = 4
	r, err := decisionsRound(context.Background(), decisionsConfig{n: n, databaseURL: os.Getenv(recordstest.EnvDatabaseURL)}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if r.pgNote != "" {
		t.Fatalf("no PostgreSQL row: %s", r.pgNote)
	}
	if len(r.cells) != 2 {
		t.Fatalf("%d engines measured, want 2", len(r.cells))
	}
	for _, c := range r.cells {
		if len(c.times) != n {
			t.Errorf("%s: %d decisions measured, want %d", c.engine, len(c.times), n)
		}
		for _, d := range c.times {
			if d.answered <= 0 || d.shown < d.answered || d.told <= 0 {
				t.Errorf("%s: decision answered after %s, release shown after %s, told after %s", c.engine, d.answered, d.shown, d.told)
			}
		}
	}
	var out bytes.Buffer
	printDecisions(&out, r)
	if !strings.Contains(out.String(), "webhook p99") || strings.Count(out.String(), "\nsqlite") != 1 {
		t.Errorf("report:\n%s", out.String())
	}
}
