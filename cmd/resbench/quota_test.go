package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/errmap"
)

// TestCallCounterBusiest: every request to the OData services is noted,
// CSRF token fetches too, and the busiest 1 s window is found wherever it
// starts, from the time asked on.
func TestCallCounterBusiest(t *testing.T) {
	c := &callCounter{next: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	serve := func(path string, fetch bool) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if fetch {
			r.Header.Set("X-CSRF-Token", "Fetch")
		}
		c.ServeHTTP(httptest.NewRecorder(), r)
	}
	serve(odataPrefix+"sap/API_PURCHASEORDER_PROCESS_SRV/", true)
	serve(odataPrefix+"sap/API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder('1')", false)
	serve("/sim/admin/ledger", false)
	if got := c.calls.Load(); got != 1 {
		t.Errorf("%d ERP calls counted, want 1 (the fetch is not one)", got)
	}
	if got := c.busiest(time.Time{}); got != 2 {
		t.Errorf("busiest %d, want 2 (the fetch and the read)", got)
	}
	t0 := time.Now()
	c.arrivals = []time.Time{t0.Add(-time.Second), t0, t0.Add(600 * time.Millisecond), t0.Add(1100 * time.Millisecond),
		t0.Add(1500 * time.Millisecond), t0.Add(2500 * time.Millisecond)}
	if got := c.busiest(t0); got != 3 {
		t.Errorf("busiest from t0 %d, want 3 (600 ms to 1.5 s)", got)
	}
}

// TestQuotaGoal: the goal holds the busiest second at the ERP of every
// erpgate row to the ceiling, rounded down, and leaves the naive client
// out.
func TestQuotaGoal(t *testing.T) {
	rows := []row{
		{scenario: "brown-out-30%", client: gatewayName, busiest: 20, codes: map[string]int{string(errmap.RateLimited): 7}},
		{scenario: "brown-out-30%", client: "naive", busiest: 90},
		{scenario: "outage", client: gatewayName, busiest: 19},
	}
	g := quotaGoal(rows, 20.7)
	if !g.met || !strings.Contains(g.value, "brown-out-30% 20 (7 RATE_LIMITED)") || !strings.Contains(g.name, "<= 20") {
		t.Errorf("goal %+v, want met with the erpgate rows", g)
	}
	rows[2].busiest = 21
	if g := quotaGoal(rows, 20); g.met {
		t.Errorf("goal %+v met with 21 in a second at a ceiling of 20", g)
	}
	if g := quotaGoal(rows[1:2], 20); g.met {
		t.Errorf("goal %+v met without an erpgate row", g)
	}
}

// TestRunWithQuota: -erp-rate reaches the gateway: the ERP sees at most
// the ceiling in any second, and the quota's goal is printed.
func TestRunWithQuota(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-n", "40", "-c", "40", "-cap", "1s", "-warmup", "5", "-erp-rate", "10"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	t.Logf("output:\n%s", out)
	if !strings.Contains(out, "quota     erpgate -erp-rate 10") {
		t.Error("the header does not name the quota")
	}
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "goal") && strings.Contains(l, "busiest 1 s at the ERP <= 10") {
			line = l
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(line), "PASS") || !strings.Contains(line, "RATE_LIMITED") {
		t.Errorf("quota goal line %q, want PASS with the refusals", line)
	}
}
