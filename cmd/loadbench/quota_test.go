package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestArrivalsBusiest: the busiest 1 s window is found wherever it
// starts, not only in the seconds counted from the first arrival.
func TestArrivalsBusiest(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(ms ...int) arrivals {
		var a arrivals
		for _, m := range ms {
			a = append(a, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return a
	}
	for _, tc := range []struct {
		a          arrivals
		most, want int
	}{
		{at(), 0, 0},
		{at(0), 1, 1},
		// Two in [0, 1s) and two in [1s, 2s), but three in [600ms, 1.6s).
		{at(0, 600, 1100, 1500), 3, 4},
		// A window holds [t, t+1s): 1000 ms after the first is outside it.
		{at(1000, 0, 999), 2, 3},
	} {
		most, total, _ := tc.a.busiest()
		if most != tc.most || total != tc.want {
			t.Errorf("%v: busiest %d of %d, want %d of %d", tc.a, most, total, tc.most, tc.want)
		}
	}
}

// TestParseQuota: the defaults are the ceiling of 20 and 200 callers for
// 3 s; values the bench cannot run with are refused.
func TestParseQuota(t *testing.T) {
	cfg, err := parseQuota(nil, io.Discard)
	if err != nil || cfg.rate != 20 || cfg.callers != 200 || cfg.length != 3*time.Second || cfg.inFlight != 0 {
		t.Fatalf("defaults %+v, %v", cfg, err)
	}
	for _, args := range [][]string{{"-erp-rate", "0"}, {"-callers", "0"}, {"-d", "2h"}, {"-erp-in-flight", "-1"}, {"extra"}} {
		var stderr bytes.Buffer
		if _, err := parseQuota(args, &stderr); !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), "loadbench quota") {
			t.Errorf("%q: %v (%q), want a usage error", args, err, stderr.String())
		}
	}
}
