package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMCPRun runs the MCP bench briefly and checks that every call of
// each path was answered without an error, never the figures. A bridge
// that cannot start leaves its row out and says why.
func TestMCPRun(t *testing.T) {
	out := runBench(t, "mcp", "-d", "400ms", "-rounds", "1", "-c", "4", "-erpgate", erpgateBin,
		"-bridge", filepath.Join(t.TempDir(), "no-bridge"))
	if !strings.Contains(out, "no bridge row: ") {
		t.Error("output does not say why the bridge row is missing")
	}
	rows := map[string][]string{}
	var goals int
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		switch {
		case len(f) == 9 && (f[0] == pathREST || f[0] == pathMCP || f[0] == pathMCPLegacy || f[0] == pathBridge):
			rows[f[0]] = f
		case len(f) > 0 && f[0] == "goal":
			goals++
			if !strings.HasSuffix(strings.TrimSpace(line), "PASS") && !strings.HasSuffix(strings.TrimSpace(line), "MISS") {
				t.Errorf("goal without a verdict: %q", line)
			}
		}
	}
	if _, ok := rows[pathBridge]; ok {
		t.Error("a bridge row without a bridge")
	}
	for _, p := range []string{pathREST, pathMCP, pathMCPLegacy} {
		f, ok := rows[p]
		if !ok {
			t.Errorf("no %s row", p)
			continue
		}
		calls, _ := strconv.Atoi(f[1])
		answered, _ := strconv.Atoi(f[2])
		if calls == 0 || answered != calls || f[3] != "0" {
			t.Errorf("%s: %s calls, %s answered, %s errors; want every call answered and none failed", p, f[1], f[2], f[3])
		}
	}
	if goals != 2 {
		t.Errorf("%d goal lines, want 2", goals)
	}
}

func TestMCPBadFlags(t *testing.T) {
	for _, args := range [][]string{{"mcp", "-c", "0"}, {"mcp", "-d", "0s"}, {"mcp", "-rounds", "0"},
		{"mcp", "-bridge", ""}, {"mcp", "extra"}, {"mcp", "-nope"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}
