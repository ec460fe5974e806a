package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/erpgate/erpgate/cmd/internal/telemetry/otlptest"
)

// The traces bench: the same gateway twice, one with tracing off (no
// OTEL_* variable) and one exporting every span to an OTLP/HTTP receiver
// in this process that decodes and discards them, driven with get_invoice
// over REST (with a traceparent) and as tools/call on /mcp (with
// params._meta.traceparent). What tracing costs is the difference of the
// two gateways' CPU time per call, taken round by round, and the goal is
// judged on the median of the rounds' differences, which one disturbed
// round cannot move. Two things would otherwise swamp a difference of a
// few microseconds on a small machine: the machine's speed, which changes
// from one second to the next, and the two processes themselves (two
// gateways alike, both off, differ by about 5 µs per call for the whole of
// their lives). So each round drives off and on side by side, at once,
// each with a closed loop of its own, and each round runs on two gateways
// started afresh, the other one first in every other round.

// Goal of the traces bench: tracing costs at most this much CPU per read.
const goalTraceCPU = 10 * time.Microsecond

// Defaults of the traces command line.
const (
	defaultTraceConcurrency = 8
	defaultTraceLength      = 12 * time.Second
	defaultTraceRounds      = 12
)

type tracesConfig struct {
	concurrency int
	length      time.Duration // per path, over all rounds
	rounds      int
	erpgate     string
}

func parseTraces(args []string, stderr io.Writer) (tracesConfig, error) {
	fs := flag.NewFlagSet("loadbench traces", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg tracesConfig
	fs.IntVar(&cfg.concurrency, "c", defaultTraceConcurrency, "concurrent calls of each gateway's closed loop (two at once)")
	fs.DurationVar(&cfg.length, "d", defaultTraceLength, "time each path is driven, over all rounds, its 10 % warm-up per round included")
	fs.IntVar(&cfg.rounds, "rounds", defaultTraceRounds, "rounds, each on two gateways started afresh")
	fs.StringVar(&cfg.erpgate, "erpgate", "", "erpgate binary (default: built from this repository with go build)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return tracesConfig{}, err
		}
		return tracesConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 || cfg.concurrency < 1 || cfg.rounds < 1 || cfg.length <= 0 {
		fmt.Fprintln(stderr, "loadbench traces: want -c and -rounds of at least 1, a positive -d, and no other arguments")
		return tracesConfig{}, errUsage
	}
	return cfg, nil
}

// newTraceparent is a sampled trace context of a new trace.
func newTraceparent() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "00-" + hex.EncodeToString(b[:16]) + "-" + hex.EncodeToString(b[16:]) + "-01"
}

// tracedRESTPath reads the invoice over REST, each call with a
// traceparent of its own.
func tracedRESTPath(name string, base *string, tr *http.Transport) *mcpPath {
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return &mcpPath{name: name, tr: tr, start: func(context.Context) (caller, func(), error) {
		url := *base + "/invoices/" + invoiceID
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Accept", "application/json")
			req.Header.Set("Traceparent", newTraceparent())
			return expectInvoice(client.Do(req))
		}, func() {}, nil
	}}
}

// tracedMCPPath reads the invoice as tools/call on /mcp in mcpProtocol,
// each call with a traceparent of its own in params._meta.
func tracedMCPPath(name string, base *string, tr *http.Transport) *mcpPath {
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return &mcpPath{name: name, tr: tr, start: func(context.Context) (caller, func(), error) {
		url := *base + "/mcp"
		return func(ctx context.Context) error {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcpProtocol +
				`","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"` + newTraceparent() +
				`"},"name":"get_invoice","arguments":{"invoice_id":"` + invoiceID + `"}}}`
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(body)))
			if err != nil {
				return err
			}
			h := req.Header
			h.Set("Content-Type", "application/json")
			h.Set("Accept", "application/json, text/event-stream")
			h.Set("Mcp-Protocol-Version", mcpProtocol)
			h.Set("Mcp-Method", "tools/call")
			h.Set("Mcp-Name", "get_invoice")
			return expectInvoice(client.Do(req))
		}, func() {}, nil
	}}
}

// expectInvoice reads an answer that must be a 200 naming the invoice.
func expectInvoice(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(invoiceID)) || bytes.Contains(body, []byte(`"isError":true`)) {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	return nil
}

// runTraces runs the traces bench and prints its table and goal.
func runTraces(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseTraces(args, stderr)
	if err != nil {
		return err
	}
	m := readMachine()
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, "loadbench traces: "+format+"\n", a...) }
	ws, err := openSimWorkspace(ctx, "traces", cfg.erpgate, progress)
	if err != nil {
		return err
	}
	defer ws.close()
	dir, erp, bin := ws.dir, ws.erp, ws.bin
	receiver := otlptest.NewDiscarding()
	defer receiver.Close()
	onEnv := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + receiver.URL(), "OTEL_SERVICE_NAME=loadbench"}
	conns := 2 * cfg.concurrency
	var offURL, onURL string
	restOff := tracedRESTPath("REST, off", &offURL, newMCPTransport(conns))
	restOn := tracedRESTPath("REST, on", &onURL, newMCPTransport(conns))
	mcpOff := tracedMCPPath("/mcp, off", &offURL, newMCPTransport(conns))
	mcpOn := tracedMCPPath("/mcp, on", &onURL, newMCPTransport(conns))
	paths := []*mcpPath{restOff, restOn, mcpOff, mcpOn}
	d := cfg.length / time.Duration(cfg.rounds)
	for round := range cfg.rounds {
		off, on, err := startPair(bin, erp.url, dir, onEnv, round%2 == 1)
		if err != nil {
			return err
		}
		offURL, onURL = off.url, on.url
		restOff.procs, mcpOff.procs = []*child{off}, []*child{off}
		restOn.procs, mcpOn.procs = []*child{on}, []*child{on}
		for _, pair := range [][2]*mcpPath{{restOff, restOn}, {mcpOff, mcpOn}} {
			progress("round %d of %d: %s and %s side by side, %d concurrent each, %s", round+1, cfg.rounds, pair[0].name, pair[1].name, cfg.concurrency, d)
			if err = driveTogether(ctx, cfg.concurrency, d, pair[0], pair[1]); err != nil {
				break
			}
		}
		// The on gateway sends its last spans as it stops.
		off.stop()
		on.stop()
		for _, p := range paths {
			p.tr.CloseIdleConnections()
		}
		if err != nil {
			return err
		}
	}
	// The last spans leave the gateway as it stops; the receiver may still
	// be reading them.
	deadline := time.Now().Add(7 * time.Second)
	for receiver.Count() < restOn.calls+mcpOn.calls && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	printTraces(stdout, m, cfg, paths, receiver)
	return nil
}

// startPair starts a gateway with tracing off and one with onEnv, in turn
// the other one first.
func startPair(bin, erpURL, dir string, onEnv []string, onFirst bool) (off, on *child, err error) {
	startOff := func() error {
		off, err = startErpgateEnv(bin, erpURL, dir, "erpgate-off", false, nil)
		return err
	}
	startOn := func() error {
		on, err = startErpgateEnv(bin, erpURL, dir, "erpgate-on", false, onEnv)
		return err
	}
	first, second := startOff, startOn
	if onFirst {
		first, second = startOn, startOff
	}
	if err = first(); err == nil {
		err = second()
	}
	if err != nil {
		off.stop()
		on.stop()
		return nil, nil, err
	}
	return off, on, nil
}

// driveTogether drives a and b at once, each with a closed loop of n
// workers for d: both gateways meet the same machine, whatever else it
// runs at that moment.
func driveTogether(ctx context.Context, n int, d time.Duration, a, b *mcpPath) error {
	var wg sync.WaitGroup
	var errA, errB error
	wg.Go(func() { errA = a.drive(ctx, n, d) })
	wg.Go(func() { errB = b.drive(ctx, n, d) })
	wg.Wait()
	return errors.Join(errA, errB)
}

// roundDiffs are the rounds' differences of CPU per call, on minus off,
// smallest first.
func roundDiffs(off, on []time.Duration) []time.Duration {
	n := min(len(off), len(on))
	d := make([]time.Duration, n)
	for i := range n {
		d[i] = on[i] - off[i]
	}
	slices.Sort(d)
	return d
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func printTraces(w io.Writer, m machine, cfg tracesConfig, paths []*mcpPath, receiver *otlptest.Receiver) {
	fmt.Fprintf(w, "machine: nproc %d, %s, %s, GOMAXPROCS %d; load average %s at start, %s at end\n",
		m.cpus, m.model, m.goVersion, runtime.GOMAXPROCS(0), m.load, loadAverage())
	fmt.Fprintf(w, "get_invoice, off and on side by side, a closed loop of %d concurrent calls each, %s per path in %d rounds "+
		"(10 %% warm-up per round), each round on two gateways started afresh; every call with a sampled traceparent of its own\n",
		cfg.concurrency, cfg.length, cfg.rounds)
	fmt.Fprintf(w, "off: no OTEL_* variable; on: OTEL_EXPORTER_OTLP_ENDPOINT to a receiver in the bench that decodes and discards (%d spans in %d exports)\n",
		receiver.Count(), receiver.Exports())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "path\tcalls\terrors\treq/s\tp50\tp99\tCPU/call")
	for _, p := range paths {
		cpu := "n/a"
		if c := p.cpuPerCall(); c > 0 {
			cpu = fmt.Sprintf("%.1fus", float64(c)/float64(time.Microsecond))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\n", p.name, p.answered, p.failed, p.rps(), dur(p.quantile(0.5)), dur(p.quantile(0.99)), cpu)
	}
	tw.Flush()
	for _, p := range paths {
		if p.failed > 0 {
			fmt.Fprintf(w, "%s: %d of %d calls failed, first: %s\n", p.name, p.failed, p.answered, p.firstErr)
		}
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(paths); i += 2 {
		offP, onP := paths[i], paths[i+1]
		a, b := offP.cpuPerCall(), onP.cpuPerCall()
		if a <= 0 || b <= 0 {
			goal(tw, "tracing's CPU per call, "+onP.name, "n/a (CPU time unknown)", "MISS")
			continue
		}
		diffs := roundDiffs(offP.rounds, onP.rounds)
		if len(diffs) == 0 {
			goal(tw, "tracing's CPU per call, "+onP.name, "n/a (CPU time unknown)", "MISS")
			continue
		}
		cost := diffs[len(diffs)/2]
		if len(diffs)%2 == 0 {
			cost = (diffs[len(diffs)/2-1] + cost) / 2
		}
		ok := cost <= goalTraceCPU && offP.failed == 0 && onP.failed == 0
		goal(tw, fmt.Sprintf("tracing costs at most %s of CPU per read (%s)", dur(goalTraceCPU), onP.name),
			fmt.Sprintf("%+.1fus, the median of %d rounds from %+.1fus to %+.1fus (whole run %.1fus on, %.1fus off)",
				us(cost), len(diffs), us(diffs[0]), us(diffs[len(diffs)-1]), us(b), us(a)), verdict(ok))
	}
	tw.Flush()
}
