package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// erpgateBin is built once for every test run of the bench.
var erpgateBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loadbench-test-")
	if err != nil {
		panic(err)
	}
	erpgateBin, err = buildErpgate(context.Background(), dir)
	if err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The columns of the table, in order.
const (
	colOp = iota
	colTarget
	colSat
	colCPU
	colRate
	colP50
	colP99
	colAddedP50
	colAddedP99
	colErrors
	columns
)

// TestQuickRun runs the bench briefly with whatever nginx the machine has
// and checks the shape of what it prints, never the figures. The runs are
// shorter and the connections fewer than -quick's: the shape is the same.
func TestQuickRun(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "erpgate-cpu.pprof")
	out := runBench(t, "-quick", "-sat", "150ms", "-fixed", "150ms", "-conns", "10", "-c", "8",
		"-erpgate", erpgateBin, "-profile", profile)
	withNginx := !strings.Contains(out, "running without the nginx column")
	if !withNginx {
		t.Log("nginx is not available here: checked the output without its column")
	}
	checkOutput(t, out, withNginx)

	// -profile: a CPU profile of erpgate (gzipped protobuf) and a line
	// saying where it is.
	b, err := os.ReadFile(profile)
	if err != nil || len(b) < 100 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("profile %s: %d bytes, %v; want a gzipped pprof profile", profile, len(b), err)
	}
	if !strings.Contains(out, "profile: erpgate CPU in "+profile) {
		t.Error("output does not say where the profile is")
	}
}

// TestRunWithoutNginx checks that a missing nginx leaves its column out
// and its goals unjudged instead of failing the run.
func TestRunWithoutNginx(t *testing.T) {
	out := runBench(t, "-quick", "-sat", "100ms", "-fixed", "100ms", "-conns", "10", "-c", "8",
		"-erpgate", erpgateBin, "-nginx", filepath.Join(t.TempDir(), "no-nginx"))
	if !strings.Contains(out, "running without the nginx column") {
		t.Errorf("output does not say nginx is left out")
	}
	checkOutput(t, out, false)
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-c", "0"}, {"-share", "2"}, {"-conns", "0"}, {"extra"}, {"-nope"},
		{"brownout", "-cell", "0s"}, {"brownout", "extra"}, {"brownout", "-nope"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}

func runBench(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("output:\n%s", stdout.String())
	return stdout.String()
}

func checkOutput(t *testing.T, out string, withNginx bool) {
	t.Helper()
	for _, want := range []string{"machine: nproc ", "go1.", "load average", "GOMAXPROCS", "erpgate: separate process",
		"allocs per get_invoice: ", "memory: erpgate RSS "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if withNginx && !strings.Contains(out, "nginx/") {
		t.Errorf("output does not name the nginx version")
	}

	rows := map[string][]string{}
	var goals, floors []string
	inTable := false
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "operation":
			inTable = true
			if len(f) != columns {
				t.Fatalf("table header has %d columns, want %d: %q", len(f), columns, line)
			}
		case len(f) == 0:
			inTable = false
		case inTable:
			if len(f) != columns {
				t.Errorf("table row has %d columns, want %d: %q", len(f), columns, line)
				continue
			}
			rows[f[colOp]+" "+f[colTarget]] = f
		case f[0] == "goal":
			goals = append(goals, strings.TrimSpace(line))
		case f[0] == "floor":
			floors = append(floors, strings.TrimSpace(line))
		}
	}

	targets := []string{direct, goProxy, gateway}
	if withNginx {
		targets = []string{direct, viaNginx, goProxy, gateway}
	}
	want := 0
	for _, op := range []string{opGetInvoice, opMatch, opNotFound} {
		for _, tg := range targets {
			if op == opNotFound && (tg == viaNginx || tg == goProxy) {
				continue
			}
			want++
			r, ok := rows[op+" "+tg]
			if !ok {
				t.Errorf("no row for %s via %s", op, tg)
				continue
			}
			checkRow(t, op, tg, r)
		}
	}
	if len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}

	// Per operation, go-proxy against nginx when there is nginx, and
	// erpgate beyond go-proxy.
	wantFloors := 2
	if withNginx {
		wantFloors = 4
	}
	if len(floors) != wantFloors {
		t.Errorf("%d floor lines, want %d:\n%s", len(floors), wantFloors, strings.Join(floors, "\n"))
	}
	for _, f := range floors {
		if !signedLatency.MatchString(f) {
			t.Errorf("floor line without a signed latency: %q", f)
		}
	}

	if len(goals) != 11 {
		t.Errorf("%d goal lines, want 11:\n%s", len(goals), strings.Join(goals, "\n"))
	}
	for _, g := range goals {
		verdict := g[strings.LastIndexByte(g, ' ')+1:]
		nginxGoal := strings.Contains(g, "nginx's")
		switch {
		case nginxGoal && !withNginx:
			if verdict != "n/a" {
				t.Errorf("goal judged without nginx: %q", g)
			}
		case verdict == "n/a" && strings.Contains(g, "whole erpgate process") && strings.Contains(g, "unknown ("):
			// Counting the process's allocations takes scrapes of its
			// /metrics between the loads; on a machine loaded past its
			// cores one can fail, and the line says why.
			t.Logf("process allocations not counted in this run: %q", g)
		case verdict != "PASS" && verdict != "MISS":
			t.Errorf("goal without PASS or MISS: %q", g)
		}
	}
}

func checkRow(t *testing.T, op, tg string, r []string) {
	t.Helper()
	if op == opNotFound {
		if r[colSat] != "-" {
			t.Errorf("%s via %s: saturation %q, want -", op, tg, r[colSat])
		}
	} else if v, err := strconv.ParseFloat(r[colSat], 64); err != nil || v < 0 {
		t.Errorf("%s via %s: saturation %q is not a rate", op, tg, r[colSat])
	}
	switch {
	case tg == direct || op == opNotFound:
		if r[colCPU] != "-" {
			t.Errorf("%s via %s: cpu/req %q, want -", op, tg, r[colCPU])
		}
	case r[colCPU] != "-" && !isDuration(r[colCPU]):
		t.Errorf("%s via %s: cpu/req %q is not a duration", op, tg, r[colCPU])
	}
	if v, err := strconv.ParseFloat(r[colRate], 64); err != nil || v < 1 {
		t.Errorf("%s via %s: rate %q is not a rate", op, tg, r[colRate])
	}
	for _, c := range []int{colP50, colP99} {
		if !isDuration(r[c]) {
			t.Errorf("%s via %s: %q is not a latency", op, tg, r[c])
		}
	}
	for _, c := range []int{colAddedP50, colAddedP99} {
		switch {
		case tg == direct && r[c] != "-":
			t.Errorf("%s direct: added latency %q, want -", op, r[c])
		case tg != direct && !(strings.HasPrefix(r[c], "+") || strings.HasPrefix(r[c], "-")) || tg != direct && !isDuration(r[c][1:]):
			t.Errorf("%s via %s: added latency %q is not a signed latency", op, tg, r[c])
		}
	}
	if _, err := strconv.Atoi(r[colErrors]); err != nil {
		t.Errorf("%s via %s: errors %q is not a count", op, tg, r[colErrors])
	}
}

var signedLatency = regexp.MustCompile(`[+-][0-9.]+(us|ms|s)\b`)

func isDuration(s string) bool {
	for _, unit := range []string{"us", "ms", "s"} {
		if v, ok := strings.CutSuffix(s, unit); ok {
			_, err := strconv.ParseFloat(v, 64)
			return err == nil
		}
	}
	return false
}

// TestBrownoutCell runs one small cell of the brown-out grid: 20 callers,
// a fifth of the ERP's reads failing. The breaker must stay closed and the
// retry budget keep the ERP's attempts at most 1.25 per call; those are
// counts, so they hold on any machine.
func TestBrownoutCell(t *testing.T) {
	r, err := runCell(context.Background(), cell{rate: 0.2, callers: 20, length: time.Second, minCalls: 1000, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls, %.2f %% answered 200, amplification %.3f, %d retries, %d refused by the budget",
		r.calls, 100*r.okShare(), r.amplification(), r.retries, r.denied)
	if r.calls < 1000 {
		t.Errorf("%d calls, want at least 1000", r.calls)
	}
	if r.opens != 0 {
		t.Errorf("breaker opened %d times, want closed", r.opens)
	}
	if a := r.amplification(); a > maxAmplification {
		t.Errorf("amplification %.3f, want at most %.2f", a, maxAmplification)
	}
	// The 503s came back and were retried: the cell tested something.
	if r.retries == 0 {
		t.Errorf("no retries: the ERP did not fail")
	}
}

// TestBrownoutOutage: with every read failing the breaker opens.
func TestBrownoutOutage(t *testing.T) {
	r, err := runCell(context.Background(), cell{rate: 1, callers: 20, length: 300 * time.Millisecond, seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.opens == 0 || r.ok != 0 {
		t.Errorf("outage: breaker opened %d times, %d of %d calls 200; want it open and no 200", r.opens, r.ok, r.calls)
	}
}

func TestRoundDiffsPairRoundsAndSort(t *testing.T) {
	off := []time.Duration{150 * time.Microsecond, 140 * time.Microsecond, 160 * time.Microsecond}
	on := []time.Duration{155 * time.Microsecond, 170 * time.Microsecond, 158 * time.Microsecond, 999 * time.Microsecond}
	got := roundDiffs(off, on)
	want := []time.Duration{-2 * time.Microsecond, 5 * time.Microsecond, 30 * time.Microsecond}
	if !slices.Equal(got, want) {
		t.Fatalf("roundDiffs = %v, want %v (each round on minus the same round off, smallest first, unpaired rounds left out)", got, want)
	}
}

// TestCPUTimeCountsThisProcess: the scheduler's count of this process's
// CPU time moves as it spins, and agrees with the kernel's ticks.
func TestCPUTimeCountsThisProcess(t *testing.T) {
	pid := os.Getpid()
	on0, err := onCPU(pid)
	if err != nil {
		t.Fatalf("schedstat: %v", err)
	}
	st0, err := statCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var on1 time.Duration
	for x := 0; time.Now().Before(deadline); x++ {
		if x%100000 == 0 {
			if on1, _ = onCPU(pid); on1-on0 >= 200*time.Millisecond {
				break
			}
		}
	}
	st1, _ := statCPU(pid)
	if on1-on0 < 200*time.Millisecond {
		t.Fatalf("schedstat counted %v of spinning", on1-on0)
	}
	if d := st1 - st0; d < 100*time.Millisecond {
		t.Errorf("schedstat counted %v, /proc/<pid>/stat %v", on1-on0, d)
	}
}
