package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tableRow is one parsed line of the printed table.
type tableRow struct {
	scenario, client string
	requests         int
	erpCalls         int
	amplification    float64
	fastFails        string
	ffP99, toOpen    string
}

// The columns of the table, in order.
const (
	colScenario = iota
	colClient
	colRequests
	colERPCalls
	colAmplification
	colFailures
	colFailP50
	colFailP99
	colUnfinished
	colFastFails
	colFFP99
	colToOpen
	columns
)

// TestRunQuick runs every scenario and client in the smallest run that
// still opens the breaker in the outage, and checks what holds whatever the
// timings.
func TestRunQuick(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-n", "20", "-c", "5", "-cap", "500ms", "-warmup", "10"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	t.Logf("output:\n%s", out)
	for _, want := range []string{"GOMAXPROCS", "go1.", "go-retryablehttp defaults", "cap 500ms", "20 GETs"} {
		if !strings.Contains(out, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	rows := parseTable(t, out)
	for _, sc := range []string{"brown-out-30%", "brown-out-60%", "outage"} {
		for _, cl := range []string{"erpgate", "naive"} {
			r, ok := rows[sc+" "+cl]
			if !ok {
				t.Errorf("no row for %s %s", sc, cl)
				continue
			}
			checkRow(t, r)
		}
	}
	checkGoals(t, out)
}

// parseTable returns the table's rows by "scenario client".
func parseTable(t *testing.T, out string) map[string]tableRow {
	t.Helper()
	rows := map[string]tableRow{}
	inTable := false
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "scenario":
			inTable = true
			if len(f) != columns {
				t.Fatalf("table header has %d columns, want %d: %q", len(f), columns, line)
			}
			continue
		case !inTable:
			continue
		case len(f) != columns:
			return rows
		}
		rows[f[colScenario]+" "+f[colClient]] = tableRow{
			scenario: f[colScenario], client: f[colClient],
			requests: atoi(t, f[colRequests]), erpCalls: atoi(t, f[colERPCalls]),
			amplification: atof(t, f[colAmplification]),
			fastFails:     f[colFastFails], ffP99: f[colFFP99], toOpen: f[colToOpen],
		}
	}
	return rows
}

// checkRow checks what holds whatever the timings: every request the
// gateway sent, unless its breaker refused it, reached the ERP at least
// once; the naive client has no breaker columns.
func checkRow(t *testing.T, r tableRow) {
	t.Helper()
	if r.client == "naive" {
		if r.fastFails != "n/a" || r.ffP99 != "n/a" || r.toOpen != "n/a" {
			t.Errorf("%s naive: breaker columns %q %q %q, want n/a", r.scenario, r.fastFails, r.ffP99, r.toOpen)
		}
		return
	}
	ff := atoi(t, r.fastFails)
	if r.erpCalls < r.requests-ff {
		t.Errorf("%s erpgate: %d ERP calls for %d requests with %d fast-fails", r.scenario, r.erpCalls, r.requests, ff)
	}
	if ff == 0 && r.amplification < 0.9 {
		t.Errorf("%s erpgate: amplification %v without fast-fails, want >= 0.9", r.scenario, r.amplification)
	}
	if r.toOpen == "n/a" {
		t.Errorf("%s erpgate: t0->open is n/a", r.scenario)
	}
}

// checkGoals wants the three goal lines, each with a verdict.
func checkGoals(t *testing.T, out string) {
	t.Helper()
	var goals []string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "goal") {
			goals = append(goals, strings.TrimSpace(line))
		}
	}
	if len(goals) != 3 {
		t.Fatalf("got %d goal lines, want 3: %q", len(goals), goals)
	}
	for i, topic := range []string{"amplification", "fast-fail", "outage detected"} {
		g := goals[i]
		if !strings.Contains(g, topic) || !(strings.HasSuffix(g, "PASS") || strings.HasSuffix(g, "MISS")) {
			t.Errorf("goal line %d = %q, want %q and PASS or MISS", i+1, g, topic)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not an integer", s)
	}
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return f
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		args   []string
		n      int
		cap    time.Duration
		errUse bool
	}{
		{args: nil, n: defaultRequests, cap: defaultCap},
		{args: []string{"-quick"}, n: defaultQuickN, cap: defaultQuickCap},
		{args: []string{"-quick", "-n", "7", "-cap", "2s"}, n: 7, cap: 2 * time.Second},
		{args: []string{"-n", "0"}, errUse: true},
		{args: []string{"-cap", "-1s"}, errUse: true},
		{args: []string{"-bogus"}, errUse: true},
		{args: []string{"extra"}, errUse: true},
	}
	for _, tt := range tests {
		cfg, err := parseConfig(tt.args, io.Discard)
		if tt.errUse {
			if !errors.Is(err, errUsage) {
				t.Errorf("%q: err %v, want a usage error", tt.args, err)
			}
			continue
		}
		if err != nil || cfg.n != tt.n || cfg.cap != tt.cap {
			t.Errorf("%q: n %d cap %s err %v, want n %d cap %s", tt.args, cfg.n, cfg.cap, err, tt.n, tt.cap)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}} {
		if got := percentile(ds, tt.p); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
}
