package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	erpgate "github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// The brown-out grid: transient failure rates, concurrent callers and how
// long a failure takes to come back.
var (
	brownoutRates   = []float64{0.1, 0.2, 0.3}
	brownoutCallers = []int{20, 50, 200}
	brownoutDelays  = []time.Duration{0, 50 * time.Millisecond}
)

// brownoutGoal is the share of reads that must be answered 200 at a
// failure rate, and the most ERP attempts per call at any rate.
var brownoutGoal = map[float64]float64{0.1: 0.99, 0.2: 0.96, 0.3: 0.90}

const maxAmplification = 1.25

// Defaults of the brownout command line.
const (
	defaultCell     = 4 * time.Second
	outageCallers   = 50
	brownoutPOID    = "4500018822"
	brownoutService = erp.ServicePurchaseOrder
)

// cell is one run of the grid.
type cell struct {
	rate    float64       // share of ERP requests that fail with 503
	delay   time.Duration // how long a failure takes
	callers int           // closed-loop agent calls in flight
	length  time.Duration
	// minCalls makes the cell go on past length until this many calls
	// were answered (but never past a minute): the retry budget's initial
	// tokens weigh on the amplification of a few hundred calls only.
	minCalls int64
	seed     uint64
}

// cellResult is what a cell measured.
type cellResult struct {
	cell
	calls    int64
	ok       int64
	codes    map[int]int64 // answers other than 200, by status
	attempts int64         // ERP attempts the gateway made
	retries  int64
	denied   int64 // retries the retry budget refused
	opens    int64 // breaker transitions to open
	toOpen   time.Duration
	err      error // the first failure to make a call at all
}

func (r cellResult) okShare() float64 {
	if r.calls == 0 {
		return 0
	}
	return float64(r.ok) / float64(r.calls)
}

func (r cellResult) amplification() float64 {
	if r.calls == 0 {
		return 0
	}
	return float64(r.attempts) / float64(r.calls)
}

// counter is the gateway's retry observer in a cell: it counts what the
// table shows.
type counter struct {
	start    time.Time
	attempts atomic.Int64
	retries  atomic.Int64
	denied   atomic.Int64
	opens    atomic.Int64
	openedAt atomic.Int64 // nanoseconds after start of the first open
}

func (c *counter) Attempt(svc retry.Service, _ string, _ time.Duration) {
	if svc == retry.Service(brownoutService) {
		c.attempts.Add(1)
	}
}
func (c *counter) Retry(retry.Service, string)    { c.retries.Add(1) }
func (c *counter) BudgetExhausted(retry.Service)  { c.denied.Add(1) }
func (c *counter) FastFail(retry.Service)         {}
func (c *counter) Reconciled(retry.Service, bool) {}
func (c *counter) BreakerState(_ retry.Service, _, to string) {
	if to == "open" && c.opens.Add(1) == 1 {
		c.openedAt.Store(int64(time.Since(c.start)))
	}
}

// runCell starts a gateway with its simulated ERP in process on a free
// loopback port, the ERP failing c.rate of the purchase order reads with
// 503 after c.delay, and reads the purchase order from c.callers
// goroutines, each one call after the other, for c.length.
func runCell(ctx context.Context, c cell) (cellResult, error) {
	res := cellResult{cell: c, codes: map[int]int64{}}
	rule := sim.FaultRule{Service: brownoutService, Status: http.StatusServiceUnavailable, Probability: c.rate,
		DelayMS: int(c.delay / time.Millisecond)}
	obs := &counter{}
	gw, err := erpgate.New(ctx, erpgate.Config{SimFaults: []sim.FaultRule{rule}, SimSeed: c.seed,
		SkipMetadata: true, RetryObserver: obs})
	if err != nil {
		return res, err
	}
	defer gw.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown below
	defer srv.Shutdown(context.Background())

	tr := &http.Transport{MaxIdleConnsPerHost: c.callers, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	url := "http://" + ln.Addr().String() + "/purchase-orders/" + brownoutPOID

	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		calls    atomic.Int64
		ok       atomic.Int64
		firstErr error
	)
	obs.start = time.Now()
	end, hardEnd := obs.start.Add(c.length), obs.start.Add(c.length+time.Minute)
	more := func() bool {
		now := time.Now()
		return (now.Before(end) || calls.Load() < c.minCalls) && now.Before(hardEnd) && ctx.Err() == nil
	}
	for range c.callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes := map[int]int64{}
			defer func() {
				mu.Lock()
				for k, v := range codes {
					res.codes[k] += v
				}
				mu.Unlock()
			}()
			for more() {
				status, err := get(ctx, client, url)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				calls.Add(1)
				if status == http.StatusOK {
					ok.Add(1)
				} else {
					codes[status]++
				}
			}
		}()
	}
	wg.Wait()
	res.calls, res.ok = calls.Load(), ok.Load()
	res.attempts, res.retries, res.denied = obs.attempts.Load(), obs.retries.Load(), obs.denied.Load()
	res.opens = obs.opens.Load()
	res.toOpen = time.Duration(obs.openedAt.Load())
	res.err = firstErr
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if firstErr != nil {
		return res, fmt.Errorf("a call got no answer: %w", firstErr)
	}
	return res, nil
}

// get reads url and returns its status, the body read to its end so that
// the connection is kept.
func get(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// brownoutConfig is what the brownout command line asks for.
type brownoutConfig struct {
	cell time.Duration
	seed uint64
}

func parseBrownout(args []string, stderr io.Writer) (brownoutConfig, error) {
	fs := flag.NewFlagSet("loadbench brownout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg brownoutConfig
	fs.DurationVar(&cfg.cell, "cell", defaultCell, "length of each cell of the grid")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the simulated ERP's fault probabilities")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return brownoutConfig{}, err
		}
		return brownoutConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 || cfg.cell <= 0 {
		fmt.Fprintln(stderr, "loadbench brownout: want only -cell (a positive duration) and -seed")
		return brownoutConfig{}, fmt.Errorf("%w: bad brownout arguments", errUsage)
	}
	return cfg, nil
}

// runBrownout runs the brown-out grid and an outage, and prints a row per
// cell with a PASS or MISS against the goals.
func runBrownout(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseBrownout(args, stderr)
	if err != nil {
		return err
	}
	var cells []cell
	for _, rate := range brownoutRates {
		for _, delay := range brownoutDelays {
			for _, n := range brownoutCallers {
				cells = append(cells, cell{rate: rate, delay: delay, callers: n, length: cfg.cell, seed: cfg.seed})
			}
		}
	}
	// The outage: every read fails; the breaker must open, within 2 s.
	cells = append(cells, cell{rate: 1, callers: outageCallers, length: cfg.cell, seed: cfg.seed})
	var results []cellResult
	for i, c := range cells {
		fmt.Fprintf(stderr, "loadbench: brown-out cell %d of %d: %.0f %% failing after %s, %d callers, %s\n",
			i+1, len(cells), 100*c.rate, c.delay, c.callers, c.length)
		r, err := runCell(ctx, c)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	printBrownout(stdout, results)
	return nil
}

// verdict judges a cell against the goals.
func (r cellResult) verdict() string {
	if r.rate >= 1 {
		if r.opens > 0 && r.toOpen <= 2*time.Second {
			return "PASS"
		}
		return "MISS"
	}
	if r.opens == 0 && r.amplification() <= maxAmplification && r.okShare() >= brownoutGoal[r.rate] {
		return "PASS"
	}
	return "MISS"
}

func printBrownout(w io.Writer, results []cellResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "failing\tdelay\tcallers\tcalls\t200\tgoal\tbreaker\tamplif\tretries\tdenied\tother answers\tverdict")
	for _, r := range results {
		breaker := "closed"
		if r.opens > 0 {
			breaker = fmt.Sprintf("opened %dx, first at %s", r.opens, r.toOpen.Round(time.Millisecond))
		}
		goal := "-"
		if g, ok := brownoutGoal[r.rate]; ok {
			goal = fmt.Sprintf(">=%.0f%%", 100*g)
		}
		var other []string
		for _, s := range slices.Sorted(maps.Keys(r.codes)) {
			other = append(other, fmt.Sprintf("%d:%d", s, r.codes[s]))
		}
		otherText := "-"
		if len(other) > 0 {
			otherText = fmt.Sprint(other)
		}
		fmt.Fprintf(tw, "%.0f%%\t%s\t%d\t%d\t%.2f%%\t%s\t%s\t%.3f\t%d\t%d\t%s\t%s\n",
			100*r.rate, r.delay, r.callers, r.calls, 100*r.okShare(), goal, breaker, r.amplification(),
			r.retries, r.denied, otherText, r.verdict())
	}
	tw.Flush()
}
