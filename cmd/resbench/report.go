package main

import (
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// The goals the gateway is held to.
const (
	goalAmplification = 1.25
	goalFastFailP99   = time.Millisecond
	goalDetection     = 3 * time.Second
	// goalScenario is the scenario whose amplification the goal bounds.
	goalScenario = "brown-out-30%"
	// outageScenario is the scenario whose breaker timing the goal bounds.
	outageScenario = "outage"
	// gatewayName is the client the goals are about.
	gatewayName = "erpgate"
)

// printHeader prints the platform and every setting the table depends on.
func printHeader(w io.Writer, cfg config) {
	p := retry.New(gatewayPolicy(), nil).Policy()
	nc := retryablehttp.NewClient()
	fmt.Fprintf(w, "resbench  %s %s/%s, GOMAXPROCS %d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "load      %d GETs of purchase order %s per scenario and client, concurrency %d, cap %s per run; one simulated ERP, seed %d\n",
		cfg.n, poID, cfg.c, cfg.cap, cfg.seed)
	fmt.Fprintf(w, "erpgate   retry defaults but attempt timeout %s: %d attempts, backoff %s-%s x%g full jitter, call timeout %s;\n",
		p.AttemptTimeout, p.MaxAttempts, p.InitialInterval, p.MaxInterval, p.Multiplier, p.CallTimeout)
	fmt.Fprintf(w, "          breaker opens at %g of >=%d attempts in %s, for %s; budget %g, +%g per call, -%g per retry\n",
		p.Breaker.FailureRatio, p.Breaker.MinRequests, p.Breaker.Window, p.Breaker.OpenFor,
		p.Budget.Capacity, p.Budget.Deposit, p.Budget.Cost)
	if cfg.quota.Enabled() {
		fmt.Fprintf(w, "quota     erpgate -erp-rate %g -erp-in-flight %d toward each ERP service; busiest = most requests at the ERP in any 1 s from t0\n",
			cfg.quota.Rate, cfg.quota.InFlight)
	}
	fmt.Fprintf(w, "naive     go-retryablehttp defaults straight to the ERP: %d retries, waits %s-%s\n", nc.RetryMax, nc.RetryWaitMin, nc.RetryWaitMax)
	fmt.Fprintf(w, "t0        brown-outs: fault injected before the first request; outage: after %d healthy requests per client (not counted)\n", cfg.warmup)
	fmt.Fprintln(w, "columns   requests sent before the cap; ERP calls from t0; amplif = ERP calls/requests; failures include fast-fails;")
	fmt.Fprintln(w, "          unfinished = not answered by the cap; fast-fails = details.breaker open; ff-p99 = of those that made no attempt")
	fmt.Fprintln(w)
}

// printTable prints one line per row, and a note for every erpgate failure
// that was not ERP_UNAVAILABLE.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tclient\trequests\tERP-calls\tamplif\tfailures\tfail-p50\tfail-p99\tunfinished\tfast-fails\tff-p99\tt0->open")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	_ = tw.Flush()
	for _, r := range rows {
		if note := r.unexpectedCodes(); note != "" {
			fmt.Fprintf(w, "note      %s %s failures other than %s: %s\n", r.client, r.scenario, errmap.ERPUnavailable, note)
		}
		if len(r.late) > 0 {
			fmt.Fprintf(w, "note      %s %s: %d fast-fails had tried the ERP before the breaker opened (p99 %s); ff-p99 leaves them out\n",
				r.client, r.scenario, len(r.late), duration(percentile(r.late, 0.99)))
		}
	}
	fmt.Fprintln(w)
}

// cells are a row's table cells.
func (r row) cells() []string {
	c := []string{
		r.scenario, r.client, strconv.Itoa(r.requests), strconv.FormatInt(r.erpCalls, 10),
		strconv.FormatFloat(r.amplification(), 'f', 2, 64), strconv.Itoa(len(r.failures)),
		latency(r.failures, 0.5), latency(r.failures, 0.99), strconv.Itoa(r.unfinished),
	}
	if !r.breaker {
		return append(c, "n/a", "n/a", "n/a")
	}
	toOpen := "never"
	if r.opened {
		toOpen = duration(r.toOpen)
	}
	return append(c, strconv.Itoa(r.fastFails()), latency(r.refused, 0.99), toOpen)
}

// unexpectedCodes lists the gateway's error codes other than
// ERP_UNAVAILABLE, with their counts; "" when there are none.
func (r row) unexpectedCodes() string {
	if !r.breaker {
		return ""
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(r.codes)) {
		if code != string(errmap.ERPUnavailable) {
			parts = append(parts, fmt.Sprintf("%d x %s", r.codes[code], code))
		}
	}
	return strings.Join(parts, ", ")
}

// printGoals prints a PASS or MISS line per goal, and with a rate ceiling
// of the ERP's quota the goal that the ERP never sees more.
func printGoals(w io.Writer, rows []row, quota retry.QuotaSettings) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	all := goals(rows)
	if quota.Rate > 0 {
		all = append(all, quotaGoal(rows, quota.Rate))
	}
	for _, g := range all {
		verdict := "MISS"
		if g.met {
			verdict = "PASS"
		}
		fmt.Fprintf(tw, "goal\t%s\t%s\t%s\n", g.name, g.value, verdict)
	}
	_ = tw.Flush()
}

// goal is one goal with the value measured against it.
type goal struct {
	name  string
	value string
	met   bool
}

// goals measures the rows against the goals.
func goals(rows []row) []goal {
	return []goal{amplificationGoal(rows), fastFailGoal(rows), detectionGoal(rows)}
}

func amplificationGoal(rows []row) goal {
	g := goal{name: fmt.Sprintf("erpgate amplification <= %g at 30%% brown-out", goalAmplification), value: "no row"}
	if r, ok := find(rows, goalScenario, gatewayName); ok {
		a := r.amplification()
		g.value, g.met = strconv.FormatFloat(a, 'f', 2, 64), a <= goalAmplification
	}
	return g
}

// fastFailGoal holds the fast-fail p99 of one client alone during the
// outage to the goal, and shows the worst loaded row beside it: under load
// the figure is mostly the queueing of 20 clients on two cores.
func fastFailGoal(rows []row) goal {
	g := goal{name: fmt.Sprintf("erpgate fast-fail p99 < %s while open", duration(goalFastFailP99)), value: "no fast-fails"}
	worst, seen := time.Duration(0), false
	for _, r := range rows {
		if r.client == gatewayName && len(r.refused) > 0 {
			worst, seen = max(worst, percentile(r.refused, 0.99)), true
		}
	}
	if r, ok := find(rows, outageScenario, gatewayName); ok && len(r.probe) > 0 {
		p := percentile(r.probe, 0.99)
		g.value, g.met = fmt.Sprintf("%s (1 client, %d calls)", duration(p), len(r.probe)), p < goalFastFailP99
		if seen {
			g.value += fmt.Sprintf("; %s under load", duration(worst))
		}
		return g
	}
	if seen {
		g.value, g.met = duration(worst)+" (worst row)", worst < goalFastFailP99
	}
	return g
}

// quotaGoal holds the busiest 1 s window at the ERP in every erpgate row
// to the ceiling of -erp-rate, rounded down as the quota keeps it, and
// says how many calls the quota refused.
func quotaGoal(rows []row, rate float64) goal {
	ceiling := max(int(rate), 1)
	g := goal{name: fmt.Sprintf("erpgate busiest 1 s at the ERP <= %d (-erp-rate)", ceiling), value: "no row", met: true}
	var parts []string
	for _, r := range rows {
		if r.client != gatewayName {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d (%d RATE_LIMITED)", r.scenario, r.busiest, r.codes[string(errmap.RateLimited)]))
		g.met = g.met && r.busiest <= ceiling
	}
	if len(parts) > 0 {
		g.value = strings.Join(parts, ", ")
	} else {
		g.met = false
	}
	return g
}

func detectionGoal(rows []row) goal {
	g := goal{name: fmt.Sprintf("erpgate outage detected (t0->open) <= %s", duration(goalDetection)), value: "never"}
	if r, ok := find(rows, outageScenario, gatewayName); ok && r.opened {
		g.value, g.met = duration(r.toOpen), r.toOpen <= goalDetection
	}
	return g
}

// find returns the row of a scenario and client.
func find(rows []row, scenario, client string) (row, bool) {
	for _, r := range rows {
		if r.scenario == scenario && r.client == client {
			return r, true
		}
	}
	return row{}, false
}

// latency is the p-th quantile of ds for the table, "-" for none.
func latency(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "-"
	}
	return duration(percentile(ds, p))
}

// duration prints d with a unit that keeps it short.
func duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dus", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}
