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
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	erpgate "github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp/sim"
)

// The decisions bench: a person's decision on an approval that an
// invoice's hold waits for, through a gateway in process with its
// background work running, on SQLite and on PostgreSQL. It measures, from
// the person's and the agent platform's side, how long after the decision
// is sent the hold is released: when the decision's answer arrives (the
// release is in its transaction), when get_hold shows it released, and when
// the hold webhook (-hold-webhook) receives hold.released.

const (
	defaultDecisions = 100
	// releaseGoal is the most a decision may take to reach the agent's
	// platform as hold.released, p99.
	releaseGoal = time.Second
	// decisionInvoice is the golden invoice whose approvals go to a person.
	decisionInvoice = "5105600102"
)

// decisionsConfig is what the decisions command line asks for.
type decisionsConfig struct {
	n           int
	databaseURL string
}

func parseDecisions(args []string, stderr io.Writer) (decisionsConfig, error) {
	fs := flag.NewFlagSet("loadbench decisions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg decisionsConfig
	fs.IntVar(&cfg.n, "n", defaultDecisions, "measured decisions per engine (after five to warm up)")
	fs.StringVar(&cfg.databaseURL, "database-url", "", "PostgreSQL to use, as a user that may create tables (default: start a throwaway cluster)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return decisionsConfig{}, err
		}
		return decisionsConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 || cfg.n < 1 {
		fmt.Fprintln(stderr, "loadbench decisions: want -n of at least 1")
		return decisionsConfig{}, fmt.Errorf("%w: bad decisions arguments", errUsage)
	}
	return cfg, nil
}

// decisionTimes is one decision, each time since the decision was sent.
type decisionTimes struct {
	answered, shown, told time.Duration
}

// decisionsCell is one engine's decisions.
type decisionsCell struct {
	engine string
	times  []decisionTimes
}

func (c decisionsCell) pick(f func(decisionTimes) time.Duration) []time.Duration {
	out := make([]time.Duration, len(c.times))
	for i, t := range c.times {
		out[i] = f(t)
	}
	return out
}

type decisionsResult struct {
	cfg            decisionsConfig
	cells          []decisionsCell
	pgName, pgNote string
}

func runDecisions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseDecisions(args, stderr)
	if err != nil {
		return err
	}
	r, err := decisionsRound(ctx, cfg, func(format string, a ...any) { fmt.Fprintf(stderr, "loadbench: "+format+"\n", a...) })
	if err != nil {
		return err
	}
	printDecisions(stdout, r)
	return nil
}

// decisionsRound measures SQLite and PostgreSQL (the one named, else a
// throwaway cluster when initdb is there).
func decisionsRound(ctx context.Context, cfg decisionsConfig, progress func(string, ...any)) (decisionsResult, error) {
	r := decisionsResult{cfg: cfg}
	dir, err := os.MkdirTemp("", "loadbench-decisions-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	progress("decisions on SQLite: %d", cfg.n)
	c, err := measureDecisions(ctx, engineSQLite, erpgate.Config{DataDir: dir}, cfg.n)
	if err != nil {
		return r, err
	}
	r.cells = append(r.cells, c)

	pgURL, stopPG := benchPostgres(ctx, cfg.databaseURL, "row", &r.pgName, &r.pgNote, progress)
	defer stopPG()
	if pgURL != "" {
		progress("decisions on PostgreSQL: %d", cfg.n)
		dbURL, drop, err := freshDatabase(ctx, pgURL, "loadbench_decisions")
		if err != nil {
			return r, err
		}
		c, err := measureDecisions(ctx, enginePostgres, erpgate.Config{DatabaseURL: dbURL}, cfg.n)
		drop()
		if err != nil {
			return r, err
		}
		r.cells = append(r.cells, c)
	}
	return r, nil
}

// hookReceiver is the agent's platform: it notes when each hold's
// hold.released arrives.
type hookReceiver struct {
	mu      sync.Mutex
	arrived map[string]chan time.Time
}

func (h *hookReceiver) wait(holdID string) chan time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.arrived[holdID]
	if !ok {
		ch = make(chan time.Time, 1)
		h.arrived[holdID] = ch
	}
	return ch
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	var ev struct {
		Event  string `json:"event"`
		HoldID string `json:"hold_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ev.Event == "hold.released" {
		select {
		case h.wait(ev.HoldID) <- at:
		default: // a repeat of a delivery already noted
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// measureDecisions runs warm-up and n measured decisions on one gateway:
// each round asks for an approval of another corrected amount (above the
// auto-approve limit, so that a person decides, and superseding nothing
// pending), holds the invoice, which then waits for that approval, and
// approves it as a person.
func measureDecisions(ctx context.Context, engine string, cfg erpgate.Config, n int) (decisionsCell, error) {
	cell := decisionsCell{engine: engine}
	hook := &hookReceiver{arrived: map[string]chan time.Time{}}
	hookLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return cell, err
	}
	hookSrv := &http.Server{Handler: hook, ReadHeaderTimeout: 5 * time.Second}
	go hookSrv.Serve(hookLn) //nolint:errcheck // ends with Close below
	defer hookSrv.Close()

	s := sim.New(sim.Options{})
	erpURL, shutdown, err := s.Start("127.0.0.1:0")
	if err != nil {
		return cell, err
	}
	defer shutdown(context.Background()) //nolint:errcheck // the bench is over
	cfg.ERPURL, cfg.SkipMetadata, cfg.HoldWebhook = erpURL, true, "http://"+hookLn.Addr().String()
	cfg.DemoPeople = benchPeople
	gw, err := erpgate.New(ctx, cfg)
	if err != nil {
		return cell, err
	}
	defer gw.Close()
	bg, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { gw.Run(bg) })
	defer func() { stop(); wg.Wait() }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return cell, err
	}
	srv := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close below
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 30 * time.Second}

	call := func(method, path string, body any, into any) error {
		var header http.Header
		if strings.HasSuffix(path, "/decision") {
			header = as(approver) // a person's call, with their key
		}
		status, data, _, err := sendJSON(ctx, client, method, base+path, header, body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		if status != http.StatusOK {
			return fmt.Errorf("%s %s: %d %s", method, path, status, data)
		}
		if into != nil {
			return json.Unmarshal(data, into)
		}
		return nil
	}
	const warm = 5
	for i := range warm + n {
		var appr struct {
			ApprovalID string `json:"approval_id"`
			Status     string `json:"status"`
		}
		amount := fmt.Sprintf("%d.%02d", 12000+i/100, i%100)
		if err := call(http.MethodPost, "/invoices/"+decisionInvoice+"/approvals", map[string]string{
			"proposed_action": "correct_amount", "corrected_amount": amount,
			"justification": "Correct the invoice to " + amount + " EUR as the supplier agreed."}, &appr); err != nil {
			return cell, err
		}
		var hold struct {
			HoldID   string `json:"hold_id"`
			WaitsFor struct {
				ApprovalID string `json:"approval_id"`
			} `json:"waits_for"`
		}
		if err := call(http.MethodPost, "/invoices/"+decisionInvoice+"/hold",
			map[string]string{"reason": "Approval " + appr.ApprovalID + " awaits a person."}, &hold); err != nil {
			return cell, err
		}
		if appr.Status != "pending" || hold.WaitsFor.ApprovalID != appr.ApprovalID {
			return cell, fmt.Errorf("round %d: approval %s %s, hold %s waiting for %q; want a pending approval the hold waits for",
				i, appr.ApprovalID, appr.Status, hold.HoldID, hold.WaitsFor.ApprovalID)
		}
		told := hook.wait(hold.HoldID)
		start := time.Now()
		if err := call(http.MethodPost, "/approvals/"+appr.ApprovalID+"/decision", map[string]string{
			"decision": "approve", "reason": "Agreed with the supplier."}, nil); err != nil {
			return cell, err
		}
		var t decisionTimes
		t.answered = time.Since(start)
		var got struct {
			Status string `json:"status"`
		}
		if err := call(http.MethodGet, "/holds/"+hold.HoldID, nil, &got); err != nil {
			return cell, err
		}
		t.shown = time.Since(start)
		if got.Status != "released" {
			return cell, fmt.Errorf("round %d: hold %s is %s after the decision, want released", i, hold.HoldID, got.Status)
		}
		select {
		case at := <-told:
			t.told = at.Sub(start)
		case <-time.After(30 * time.Second):
			return cell, fmt.Errorf("round %d: no hold.released for %s within 30s", i, hold.HoldID)
		case <-ctx.Done():
			return cell, ctx.Err()
		}
		if i >= warm {
			cell.times = append(cell.times, t)
		}
	}
	return cell, nil
}

func printDecisions(w io.Writer, r decisionsResult) {
	m := readMachine()
	fmt.Fprintf(w, "decisions: %d per engine, gateway, its outbox and the simulated ERP in process, webhook receiver on loopback; %d CPUs, %s, %s, load %s\n",
		r.cfg.n, m.cpus, m.model, m.goVersion, m.load)
	if r.pgNote != "" {
		fmt.Fprintln(w, r.pgNote)
	} else {
		fmt.Fprintln(w, "postgres:", r.pgName)
	}
	fmt.Fprintln(w, "times from the decision sent: its answer (the hold is released in its transaction), get_hold showing it released, hold.released at the webhook")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "engine\tdecisions\tanswered p50\tanswered p99\treleased (get_hold) p50\treleased p99\twebhook p50\twebhook p99\tgoal webhook p99 <= %s\n", releaseGoal)
	for _, c := range r.cells {
		ans := c.pick(func(t decisionTimes) time.Duration { return t.answered })
		shown := c.pick(func(t decisionTimes) time.Duration { return t.shown })
		told := c.pick(func(t decisionTimes) time.Duration { return t.told })
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.engine, len(c.times),
			dur(quantileOf(ans, 0.5)), dur(quantileOf(ans, 0.99)), dur(quantileOf(shown, 0.5)), dur(quantileOf(shown, 0.99)),
			dur(quantileOf(told, 0.5)), dur(quantileOf(told, 0.99)), verdict(len(c.times) > 0 && quantileOf(told, 0.99) <= releaseGoal))
	}
	tw.Flush()
}
