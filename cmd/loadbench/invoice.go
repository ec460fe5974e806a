package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/erpgate/erpgate/api"
	erpgate "github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp/sim"
)

// The per-invoice bench: an invoice decided from its first read to its
// posting, through erpgate and by a client that makes the same OData calls
// itself, one after the other, with every ERP call costing the same
// latency.

// Defaults of the invoice command line.
const (
	defaultInvoiceLatency = 50 * time.Millisecond
	defaultInvoiceRounds  = 3
	// invoiceGoal is how many times faster than the sequential client
	// erpgate decides an invoice.
	invoiceGoal = 2.0
	// postTripsGoal is the most round trips of the posting's write part
	// (CSRF fetch, Post, read-back).
	postTripsGoal = 2
)

// Names of the steps of a flow.
const (
	stepGet      = "get_invoice"
	stepMatch    = "run_three_way_match"
	stepApproval = "request_approval"
	stepDecide   = "decide_approval"
	stepPost     = "post_invoice"
)

// invoiceFlow is one golden invoice and how an agent decides it.
type invoiceFlow struct {
	id            string
	match         string // the match result the flow expects
	action        string // proposed_action of request_approval
	justification string
	decidedBy     string // the person who approves; "" when approved at once
	infoCode      string // info_code the posting answers with
}

var invoiceFlows = []invoiceFlow{
	{id: "5105600101", match: "MATCHED", action: "post_as_invoiced",
		justification: "Three-way match MATCHED on all lines."},
	{id: "5105600102", match: "TOLERANCE_EXCEEDED", action: "accept_variance",
		justification: "Unit price 135.00 is 8 % over the PO price 125.00; supplier cites a raw-material surcharge.",
		decidedBy:     "m.keller", infoCode: "TOLERANCE_EXCEEDED"},
}

// stepResult is one request of a flow as the ERP saw it.
type stepResult struct {
	name  string
	wall  time.Duration
	calls []sim.Call
}

// flowResult is one invoice decided through erpgate.
type flowResult struct {
	flow  invoiceFlow
	steps []stepResult
}

// erpSteps are the steps that call the ERP (the person's decision does not).
func (f flowResult) erpSteps() []stepResult {
	var out []stepResult
	for _, s := range f.steps {
		if s.name != stepDecide {
			out = append(out, s)
		}
	}
	return out
}

func (f flowResult) calls() []sim.Call {
	var out []sim.Call
	for _, s := range f.erpSteps() {
		out = append(out, s.calls...)
	}
	return out
}

// wall is the time of the requests that call the ERP, one after the
// other; the person's decision is left out, as the sequential client has
// none.
func (f flowResult) wall() time.Duration {
	var d time.Duration
	for _, s := range f.erpSteps() {
		d += s.wall
	}
	return d
}

func (f flowResult) trips() int {
	n := 0
	for _, s := range f.erpSteps() {
		n += roundTrips(s.calls)
	}
	return n
}

func (f flowResult) step(name string) stepResult {
	for _, s := range f.steps {
		if s.name == name {
			return s
		}
	}
	return stepResult{}
}

// roundTrips is how many ERP round trips the calls took one after the
// other: the calls are intervals of time at the ERP, from arrival to
// answer, and overlapping intervals are one round trip, made at once; the
// count is that of the separate stretches the ERP was busy. With every
// call taking the injected latency, calls made at once overlap by almost
// all of it and calls made one after the other never do.
func roundTrips(calls []sim.Call) int {
	cs := slices.Clone(calls)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Start.Before(cs[j].Start) })
	n := 0
	var end time.Time
	for i, c := range cs {
		if i == 0 || !c.Start.Before(end) {
			n++
			end = c.End
		} else if c.End.After(end) {
			end = c.End
		}
	}
	return n
}

// writeTrips is how many round trips of the calls hold the write's part:
// a CSRF fetch of its own, a write, or a read after the first write. A
// token fetched on a read the write needs anyway costs no trip of its own.
func writeTrips(calls []sim.Call) int {
	cs := slices.Clone(calls)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Start.Before(cs[j].Start) })
	var part []sim.Call
	wrote := false
	for _, c := range cs {
		if c.Method == http.MethodPost {
			wrote = true
		}
		if isFetch(c) || wrote {
			part = append(part, c)
		}
	}
	return roundTrips(part)
}

// repeatedReads lists the reads made more than once among calls.
func repeatedReads(calls []sim.Call) []string {
	seen := map[string]int{}
	var out []string
	for _, c := range calls {
		if !c.Read() {
			continue
		}
		if seen[c.Key()]++; seen[c.Key()] == 2 {
			out = append(out, c.Key())
		}
	}
	return out
}

// isFetch reports whether the call only fetches a CSRF token.
func isFetch(c sim.Call) bool { return c.Fetch && !c.Read() }

// latencyRule delays every OData call, CSRF fetches included, by d.
func latencyRule(d time.Duration) sim.FaultRule {
	return sim.FaultRule{Service: sim.AnyService, Kind: sim.FaultHang, DelayMS: int(d / time.Millisecond),
		Count: -1, IncludeFetch: true}
}

// startSim serves a simulated ERP that records its calls and answers each
// after latency, on a free loopback port.
func startSim(latency time.Duration) (*sim.Server, string, func(), error) {
	s := sim.New(sim.Options{RecordCalls: true, Faults: []sim.FaultRule{latencyRule(latency)}})
	url, shutdown, err := s.Start("127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	return s, url, func() { _ = shutdown(context.Background()) }, nil
}

// runFlows decides every golden invoice through one erpgate in front of a
// fresh simulated ERP, one request after the other, as one agent does,
// each invoice in a run of its own (X-Run-Id). runReads is the gateway's
// RunReadTTL: 0 has every request read the invoice afresh, as a process
// API that reads what each step decides on.
func runFlows(ctx context.Context, latency, runReads time.Duration) ([]flowResult, error) {
	s, erpURL, stopSim, err := startSim(latency)
	if err != nil {
		return nil, err
	}
	defer stopSim()
	gw, err := erpgate.New(ctx, erpgate.Config{ERPURL: erpURL, SkipMetadata: true, RunReadTTL: runReads, DemoPeople: benchPeople})
	if err != nil {
		return nil, err
	}
	defer gw.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown below
	defer srv.Shutdown(context.Background())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	a := &agent{ctx: ctx, client: &http.Client{Transport: tr, Timeout: time.Minute}, base: "http://" + ln.Addr().String(), sim: s}

	var out []flowResult
	for _, f := range invoiceFlows {
		a.run = "loadbench-" + f.id
		r, err := a.decide(f)
		if err != nil {
			return nil, fmt.Errorf("invoice %s: %w", f.id, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// agent calls erpgate's REST API and notes what each call cost at the ERP.
type agent struct {
	ctx    context.Context
	client *http.Client
	base   string
	sim    *sim.Server
	run    string // the X-Run-Id sent
	steps  []stepResult
}

// call sends one request and decodes its JSON answer into out; an answer
// other than 200 is an error.
func (a *agent) call(step, method, path string, body any, out any) error {
	return a.send(step, method, path, http.Header{"X-Run-Id": {a.run}}, body, out)
}

// send is call with the headers given.
func (a *agent) send(step, method, path string, header http.Header, body any, out any) error {
	a.sim.ResetCalls()
	status, data, wall, err := sendJSON(a.ctx, a.client, method, a.base+path, header, body)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: %s %s answered %d: %s", step, method, path, status, data)
	}
	a.steps = append(a.steps, stepResult{name: step, wall: wall, calls: a.sim.Calls()})
	return json.Unmarshal(data, out)
}

func (a *agent) decide(f invoiceFlow) (flowResult, error) {
	a.steps = nil
	var inv struct {
		Status string `json:"status"`
	}
	if err := a.call(stepGet, http.MethodGet, "/invoices/"+f.id, nil, &inv); err != nil {
		return flowResult{}, err
	}
	var match struct {
		Result string `json:"result"`
	}
	if err := a.call(stepMatch, http.MethodPost, "/invoices/"+f.id+"/three-way-match", nil, &match); err != nil {
		return flowResult{}, err
	}
	if match.Result != f.match {
		return flowResult{}, fmt.Errorf("three-way match %s, want %s", match.Result, f.match)
	}
	var appr struct {
		ID     string `json:"approval_id"`
		Status string `json:"status"`
	}
	if err := a.call(stepApproval, http.MethodPost, "/invoices/"+f.id+"/approvals",
		map[string]string{"proposed_action": f.action, "justification": f.justification}, &appr); err != nil {
		return flowResult{}, err
	}
	if f.decidedBy != "" {
		if appr.Status != "pending" {
			return flowResult{}, fmt.Errorf("approval %s, want pending", appr.Status)
		}
		// The person decides with their own key, in no run.
		if err := a.send(stepDecide, http.MethodPost, "/approvals/"+appr.ID+"/decision", as(f.decidedBy),
			map[string]string{"decision": "approve", "reason": "Surcharge confirmed with the supplier."}, &appr); err != nil {
			return flowResult{}, err
		}
	}
	if appr.Status != "approved" {
		return flowResult{}, fmt.Errorf("approval %s, want approved", appr.Status)
	}
	var post struct {
		Status   string `json:"status"`
		Already  bool   `json:"already_posted"`
		InfoCode string `json:"info_code"`
	}
	if err := a.call(stepPost, http.MethodPost, "/invoices/"+f.id+"/post", map[string]string{"approval_id": appr.ID}, &post); err != nil {
		return flowResult{}, err
	}
	if post.Status != "posted" || post.Already || post.InfoCode != f.infoCode {
		return flowResult{}, fmt.Errorf("posting %+v, want posted now with info_code %q", post, f.infoCode)
	}
	return flowResult{flow: f, steps: a.steps}, nil
}

// seqResult is one invoice decided by the sequential client.
type seqResult struct {
	calls int
	trips int
	wall  time.Duration
}

// runSequential makes, for every flow, the OData calls erpgate made for
// it, one after the other, straight to a fresh simulated ERP, as a client
// without erpgate (or a process API that calls one step after the other)
// does: each read, and for each write a CSRF fetch first, then the write
// with the fetched token and the session cookie, as SAP requires. One
// client decides all invoices, so it keeps its session cookie but fetches
// a token for every write.
func runSequential(ctx context.Context, latency time.Duration, flows []flowResult) ([]seqResult, error) {
	s, erpURL, stopSim, err := startSim(latency)
	if err != nil {
		return nil, err
	}
	defer stopSim()
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Jar: jar, Transport: tr, Timeout: time.Minute}
	send := func(method, uri string, header http.Header) (http.Header, error) {
		req, err := http.NewRequestWithContext(ctx, method, erpURL+uri, nil)
		if err != nil {
			return nil, err
		}
		req.Header = header
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s %s answered %d", method, uri, resp.StatusCode)
		}
		return resp.Header, nil
	}
	var out []seqResult
	for _, f := range flows {
		s.ResetCalls()
		start := time.Now()
		for _, c := range sortedCalls(f.calls()) {
			switch {
			case isFetch(c):
				// Made before the write below, as every write needs.
			case c.Method == http.MethodPost:
				root, _, _ := strings.Cut(c.URI, "/"+c.Path)
				h, err := send(http.MethodGet, root+"/", http.Header{"X-Csrf-Token": {"Fetch"}})
				if err != nil {
					return nil, fmt.Errorf("invoice %s: CSRF fetch: %w", f.flow.id, err)
				}
				if _, err := send(c.Method, c.URI, http.Header{"X-Csrf-Token": {h.Get("X-CSRF-Token")}}); err != nil {
					return nil, fmt.Errorf("invoice %s: %w", f.flow.id, err)
				}
			default:
				if _, err := send(c.Method, c.URI, http.Header{}); err != nil {
					return nil, fmt.Errorf("invoice %s: %w", f.flow.id, err)
				}
			}
		}
		calls := s.Calls()
		out = append(out, seqResult{calls: len(calls), trips: roundTrips(calls), wall: time.Since(start)})
	}
	return out, nil
}

func sortedCalls(calls []sim.Call) []sim.Call {
	cs := slices.Clone(calls)
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Start.Before(cs[j].Start) })
	return cs
}

// invoiceRound is one run of every flow through erpgate, through erpgate
// with every request reading the invoice afresh, and by the sequential
// client.
type invoiceRound struct {
	flows []flowResult
	fresh []flowResult
	seq   []seqResult
}

// runInvoiceRound decides the flows three ways. The sequential client makes
// the calls of the fresh flows, those of a process API whose every step
// reads the invoice it decides on, so that what it is given does not shrink
// with what the run's shared read saves.
func runInvoiceRound(ctx context.Context, latency time.Duration) (invoiceRound, error) {
	fresh, err := runFlows(ctx, latency, 0)
	if err != nil {
		return invoiceRound{}, err
	}
	seq, err := runSequential(ctx, latency, fresh)
	if err != nil {
		return invoiceRound{}, err
	}
	flows, err := runFlows(ctx, latency, api.DefaultRunReadTTL)
	if err != nil {
		return invoiceRound{}, err
	}
	return invoiceRound{flows: flows, fresh: fresh, seq: seq}, nil
}

// invoiceConfig is what the invoice command line asks for.
type invoiceConfig struct {
	latency time.Duration
	rounds  int
}

func parseInvoice(args []string, stderr io.Writer) (invoiceConfig, error) {
	fs := flag.NewFlagSet("loadbench invoice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg invoiceConfig
	fs.DurationVar(&cfg.latency, "latency", defaultInvoiceLatency, "latency of every OData call (whole milliseconds)")
	fs.IntVar(&cfg.rounds, "rounds", defaultInvoiceRounds, "runs of both flows; the wall times shown are the medians")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return invoiceConfig{}, err
		}
		return invoiceConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 || cfg.latency < time.Millisecond || cfg.rounds < 1 {
		fmt.Fprintln(stderr, "loadbench invoice: want only -latency (at least 1ms) and -rounds (at least 1)")
		return invoiceConfig{}, fmt.Errorf("%w: bad invoice arguments", errUsage)
	}
	return cfg, nil
}

// runInvoice runs the per-invoice bench and prints its table.
func runInvoice(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseInvoice(args, stderr)
	if err != nil {
		return err
	}
	var rounds []invoiceRound
	for i := range cfg.rounds {
		fmt.Fprintf(stderr, "loadbench: invoice round %d of %d, %s per ERP call\n", i+1, cfg.rounds, cfg.latency)
		r, err := runInvoiceRound(ctx, cfg.latency)
		if err != nil {
			return err
		}
		rounds = append(rounds, r)
	}
	printInvoice(stdout, cfg, rounds)
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// printInvoice prints, per invoice and step, the ERP calls, round trips and
// wall time through erpgate, then per invoice the same beside the
// sequential client, with a PASS or MISS per goal. Calls and trips are
// those of the first round (every round makes the same calls); wall times
// are medians over the rounds.
func printInvoice(w io.Writer, cfg invoiceConfig, rounds []invoiceRound) {
	m := readMachine()
	fmt.Fprintf(w, "per invoice: %s per OData call, %d rounds (wall: median); %d CPUs, %s, %s, load %s\n\n",
		cfg.latency, len(rounds), m.cpus, m.model, m.goVersion, m.load)
	first := rounds[0]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "invoice\tstep\tERP calls\tround trips\twall\trepeated reads")
	for fi, f := range first.flows {
		for si, s := range f.steps {
			var walls []time.Duration
			for _, r := range rounds {
				walls = append(walls, r.flows[fi].steps[si].wall)
			}
			rep := "none"
			if rr := repeatedReads(s.calls); len(rr) > 0 {
				rep = strings.Join(rr, ", ")
			}
			trips := fmt.Sprint(roundTrips(s.calls))
			if s.name == stepPost {
				trips += fmt.Sprintf(" (write part %d)", writeTrips(s.calls))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", f.flow.id, s.name, len(s.calls), trips,
				median(walls).Round(100*time.Microsecond), rep)
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "invoice\terpgate calls, trips, wall\teach request reading afresh\tsequential client\tspeed-up (afresh)\tgoal\tno repeated read\tpost write part <= 2 trips")
	for fi, f := range first.flows {
		var gw, fr, sq []time.Duration
		for _, r := range rounds {
			gw = append(gw, r.flows[fi].wall())
			fr = append(fr, r.fresh[fi].wall())
			sq = append(sq, r.seq[fi].wall)
		}
		speed := float64(median(sq)) / float64(median(gw))
		noRepeat := true
		for _, s := range f.steps {
			noRepeat = noRepeat && len(repeatedReads(s.calls)) == 0
		}
		fresh := first.fresh[fi]
		fmt.Fprintf(tw, "%s\t%d, %d, %s\t%d, %d, %s\t%d, %d, %s\t%.2fx (%.2fx)\t>=%.0fx %s\t%s\t%s\n", f.flow.id,
			len(f.calls()), f.trips(), median(gw).Round(100*time.Microsecond),
			len(fresh.calls()), fresh.trips(), median(fr).Round(100*time.Microsecond),
			first.seq[fi].calls, first.seq[fi].trips, median(sq).Round(100*time.Microsecond),
			speed, float64(median(sq))/float64(median(fr)), invoiceGoal, passMiss(speed >= invoiceGoal), passMiss(noRepeat),
			passMiss(writeTrips(f.step(stepPost).calls) <= postTripsGoal))
	}
	tw.Flush()
}

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}
