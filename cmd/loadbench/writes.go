package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	erpgate "github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sim"
)

// The writes bench: post_invoice and hand_over through a gateway in
// process, on SQLite and on PostgreSQL, with the time every request spends
// inside the records store measured by a wrapper of the store.

// Defaults of the writes command line.
const (
	defaultWriteCalls = 400
	defaultWriteConc  = 2
	// storeWorkGoal is the most store work of a write, p50.
	storeWorkGoal = 2 * time.Millisecond
)

// Names of the engines and write operations in the table.
const (
	engineSQLite   = "sqlite"
	enginePostgres = "postgres"
	opPost         = "post_invoice"
	opHandOver     = "hand_over"
)

// writesConfig is what the writes command line asks for.
type writesConfig struct {
	calls       int    // measured calls per operation and engine
	conc        int    // concurrent callers
	databaseURL string // a running PostgreSQL to use; "" starts one
	runs, keys  int    // distinct run ids and idempotency keys of the memory part; 0 skips it
	memConc     int
	erpgate     string // the binary of the memory part; "" builds it
}

func parseWrites(args []string, stderr io.Writer) (writesConfig, error) {
	fs := flag.NewFlagSet("loadbench writes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg writesConfig
	fs.IntVar(&cfg.calls, "n", defaultWriteCalls, "measured calls per operation and engine (after a tenth as many to warm up)")
	fs.IntVar(&cfg.conc, "c", defaultWriteConc, "concurrent callers of the writes")
	fs.StringVar(&cfg.databaseURL, "database-url", "", "PostgreSQL to use, as a user that may create tables (default: start a throwaway cluster)")
	fs.IntVar(&cfg.runs, "runs", defaultMemRuns, "distinct run ids of the memory part (0 with -keys 0 skips it)")
	fs.IntVar(&cfg.keys, "keys", defaultMemKeys, "distinct idempotency keys of the memory part")
	fs.IntVar(&cfg.memConc, "memc", defaultMemConc, "concurrent callers of the memory part")
	fs.StringVar(&cfg.erpgate, "erpgate", "", "erpgate binary of the memory part (default: build it)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writesConfig{}, err
		}
		return writesConfig{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 || cfg.calls < 1 || cfg.conc < 1 || cfg.runs < 0 || cfg.keys < 0 || cfg.memConc < 1 {
		fmt.Fprintln(stderr, "loadbench writes: want -n and -c of at least 1, -runs and -keys of at least 0, -memc of at least 1")
		return writesConfig{}, fmt.Errorf("%w: bad writes arguments", errUsage)
	}
	return cfg, nil
}

// writeCall is one measured call: its latency at the client and the
// store work the gateway did for it.
type writeCall struct {
	wall, store time.Duration
	storeCalls  int
	byMethod    map[string]time.Duration
}

// writeCell is one operation on one engine.
type writeCell struct {
	op, engine string
	calls      []writeCall
	non2xx     int
	firstErr   string
	noWork     int // answered calls whose store work was not found
	ids        int // distinct records the calls answered with (handover ids; invoice ids for posts)
	elapsed    time.Duration
}

func quantileOf(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func (c writeCell) walls() []time.Duration {
	var out []time.Duration
	for _, k := range c.calls {
		out = append(out, k.wall)
	}
	return out
}

func (c writeCell) stores() []time.Duration {
	var out []time.Duration
	for _, k := range c.calls {
		out = append(out, k.store)
	}
	return out
}

// rests are the latencies with each call's store work taken out: the
// call as it would be with a store that costs nothing.
func (c writeCell) rests() []time.Duration {
	var out []time.Duration
	for _, k := range c.calls {
		out = append(out, k.wall-k.store)
	}
	return out
}

func (c writeCell) storeCalls() float64 {
	if len(c.calls) == 0 {
		return 0
	}
	n := 0
	for _, k := range c.calls {
		n += k.storeCalls
	}
	return float64(n) / float64(len(c.calls))
}

// writesGateway is a gateway in process, in front of a simulated ERP in
// process, with its store timed.
type writesGateway struct {
	gw     *erpgate.Gateway
	log    *workLog
	base   string
	client *http.Client
	close  func()
}

// startWritesGateway starts the gateway with its records on SQLite in dir
// or, with databaseURL, on PostgreSQL.
func startWritesGateway(ctx context.Context, dir, databaseURL string, conc int) (*writesGateway, error) {
	s := sim.New(sim.Options{})
	erpURL, shutdown, err := s.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cfg := erpgate.Config{ERPURL: erpURL, SkipMetadata: true, DataDir: dir, DatabaseURL: databaseURL, DemoPeople: benchPeople,
		WrapRecords: func(st records.Store) records.Store { return storeClock{st} }}
	gw, err := erpgate.New(ctx, cfg)
	if err != nil {
		_ = shutdown(context.Background())
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gw.Close()
		_ = shutdown(context.Background())
		return nil, err
	}
	wl := newWorkLog(gw.Handler())
	srv := &http.Server{Handler: wl, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown below
	tr := &http.Transport{MaxIdleConnsPerHost: conc}
	w := &writesGateway{gw: gw, log: wl, base: "http://" + ln.Addr().String(),
		client: &http.Client{Transport: tr, Timeout: time.Minute}}
	w.close = func() {
		tr.CloseIdleConnections()
		_ = srv.Shutdown(context.Background())
		gw.Close()
		_ = shutdown(context.Background())
	}
	return w, nil
}

// do sends one JSON request to the gateway with the headers and answers
// its status, body and the latency at the client.
func (w *writesGateway) do(ctx context.Context, method, path string, header http.Header, body any) (int, []byte, time.Duration, error) {
	return sendJSON(ctx, w.client, method, w.base+path, header, body)
}

// sendJSON sends one request with body, when not nil, as JSON and the
// headers, and answers its status, body and the latency at the client.
func sendJSON(ctx context.Context, client *http.Client, method, url string, header http.Header, body any) (int, []byte, time.Duration, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, data, time.Since(start), err
}

// approve gets an approval of the invoice and posts it once, so that every
// post after it finds the invoice posted.
func (w *writesGateway) approve(ctx context.Context, f invoiceFlow) (string, error) {
	status, data, _, err := w.do(ctx, http.MethodPost, "/invoices/"+f.id+"/approvals", nil,
		map[string]string{"proposed_action": f.action, "justification": f.justification})
	if err != nil {
		return "", err
	}
	var appr struct {
		ID     string `json:"approval_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(data, &appr); err != nil || status != http.StatusOK {
		return "", fmt.Errorf("request_approval of %s answered %d: %s", f.id, status, data)
	}
	if f.decidedBy != "" {
		status, data, _, err = w.do(ctx, http.MethodPost, "/approvals/"+appr.ID+"/decision", as(f.decidedBy),
			map[string]string{"decision": "approve", "reason": "Surcharge confirmed with the supplier."})
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(data, &appr); err != nil || status != http.StatusOK {
			return "", fmt.Errorf("decide_approval of %s answered %d: %s", f.id, status, data)
		}
	}
	if appr.Status != "approved" {
		return "", fmt.Errorf("approval of %s is %s, want approved", f.id, appr.Status)
	}
	status, data, _, err = w.do(ctx, http.MethodPost, "/invoices/"+f.id+"/post", nil, map[string]string{"approval_id": appr.ID})
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("first post of %s answered %d: %s", f.id, status, data)
	}
	return appr.ID, nil
}

// measureWrites runs warm-up and measured calls of both operations
// against one engine.
func measureWrites(ctx context.Context, engine, dir, databaseURL string, cfg writesConfig) ([]writeCell, error) {
	w, err := startWritesGateway(ctx, dir, databaseURL, cfg.conc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", engine, err)
	}
	defer w.close()
	approvals := map[string]string{}
	for _, f := range invoiceFlows {
		id, err := w.approve(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", engine, err)
		}
		approvals[f.id] = id
	}
	var out []writeCell
	for _, op := range []string{opPost, opHandOver} {
		c := w.cell(ctx, engine, op, cfg, approvals)
		out = append(out, c)
	}
	return out, nil
}

// cell makes a tenth of cfg.calls to warm up, then cfg.calls measured
// ones, from cfg.conc callers, each with an Idempotency-Key of its own:
// caller k makes calls k, k+conc, k+2·conc and so on. Caller k posts the golden invoice k modulo their number, so that two
// callers only share an invoice's write lease when there are more callers
// than invoices. A post goes to a posted invoice with its approval: the gateway claims
// the key, checks the approval, takes the invoice's write lease, reads
// the invoice, writes the audit row and keeps the answer, and answers
// already_posted.
func (w *writesGateway) cell(ctx context.Context, engine, op string, cfg writesConfig, approvals map[string]string) writeCell {
	cell := writeCell{op: op, engine: engine}
	warm := max(1, cfg.calls/10)
	var mu sync.Mutex
	seen := map[string]bool{}
	one := func(k, i int) {
		f := invoiceFlows[k%len(invoiceFlows)]
		reqID := fmt.Sprintf("wb-%s-%s-%d", engine, op, i)
		h := http.Header{"Idempotency-Key": {reqID}, "X-Request-Id": {reqID}}
		var status int
		var data []byte
		var wall time.Duration
		var err error
		if op == opPost {
			status, data, wall, err = w.do(ctx, http.MethodPost, "/invoices/"+f.id+"/post", h,
				map[string]string{"approval_id": approvals[f.id]})
		} else {
			status, data, wall, err = w.do(ctx, http.MethodPost, "/handovers", h,
				map[string]string{"invoice_id": "5105600103", "code": "PO_NOT_FOUND",
					"summary": fmt.Sprintf("Invoice references PO 4500019822, which does not exist (call %d).", i)})
		}
		sw, found := w.log.take(reqID)
		mu.Lock()
		defer mu.Unlock()
		if i < warm {
			return
		}
		if err != nil || status < 200 || status > 299 {
			cell.non2xx++
			if cell.firstErr == "" {
				cell.firstErr = fmt.Sprintf("%d %s %v", status, bytes.TrimSpace(data), err)
			}
			return
		}
		var ans struct {
			HandoverID string `json:"handover_id"`
			InvoiceID  string `json:"invoice_id"`
			Already    bool   `json:"already_posted"`
		}
		_ = json.Unmarshal(data, &ans)
		id := ans.HandoverID
		if op == opPost {
			id = ans.InvoiceID
			if !ans.Already {
				cell.non2xx++
				cell.firstErr = "a post did not answer already_posted: " + string(data)
			}
		}
		if id != "" {
			seen[id] = true
		}
		if !found {
			cell.noWork++
			return
		}
		sw.mu.Lock()
		cell.calls = append(cell.calls, writeCall{wall: wall, store: sw.total, storeCalls: sw.calls, byMethod: sw.byMethod})
		sw.mu.Unlock()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for k := range cfg.conc {
		wg.Go(func() {
			for i := k; i < warm+cfg.calls && ctx.Err() == nil; i += cfg.conc {
				one(k, i)
			}
		})
	}
	wg.Wait()
	cell.elapsed = time.Since(start)
	cell.ids = len(seen)
	return cell
}

// writesResult is everything the writes mode found.
type writesResult struct {
	cfg     writesConfig
	cells   []writeCell
	pgNote  string // why there is no PostgreSQL column; "" when there is
	pgName  string
	memory  *idMemory
	memNote string
}

// benchPostgres is the PostgreSQL a bench measures: the one named, or a
// throwaway cluster started from Debian's postgresql. It sets name to what
// the report calls it, or note to why the bench's PostgreSQL part (its
// "column" or "row") is skipped, and returns the server's URL ("" when
// skipped) and what stops it.
func benchPostgres(ctx context.Context, named, part string, name, note *string, progress func(string, ...any)) (string, func()) {
	if named != "" {
		*name = "PostgreSQL at " + erpgate.RedactURL(named)
		return named, func() {}
	}
	bin := postgresBinDir()
	if bin == "" {
		*note = "PostgreSQL " + part + " skipped: no initdb on PATH or under /usr/lib/postgresql (apt-get install -y postgresql)"
		return "", func() {}
	}
	progress("starting a throwaway PostgreSQL from %s", bin)
	pg, err := startPostgres(ctx, bin)
	if err != nil {
		*note = "PostgreSQL " + part + " skipped: the throwaway cluster did not start: " + err.Error()
		return "", func() {}
	}
	*name = "PostgreSQL " + pg.version + ", throwaway cluster on loopback, fsync and synchronous_commit on"
	return pg.url, pg.stop
}

// runWrites runs the writes bench and its memory part and prints them.
func runWrites(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseWrites(args, stderr)
	if err != nil {
		return err
	}
	r, err := writesRound(ctx, cfg, func(format string, a ...any) { fmt.Fprintf(stderr, "loadbench: "+format+"\n", a...) })
	if err != nil {
		return err
	}
	printWrites(stdout, r)
	return nil
}

// writesRound measures both engines (PostgreSQL when there is one) and,
// unless cfg asks for no ids, the memory part.
func writesRound(ctx context.Context, cfg writesConfig, progress func(string, ...any)) (writesResult, error) {
	r := writesResult{cfg: cfg}
	dir, err := os.MkdirTemp("", "loadbench-writes-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)

	progress("writes on SQLite: %d calls of each operation, %d callers", cfg.calls, cfg.conc)
	cells, err := measureWrites(ctx, engineSQLite, dir, "", cfg)
	if err != nil {
		return r, err
	}
	r.cells = append(r.cells, cells...)

	pgURL, stopPG := benchPostgres(ctx, cfg.databaseURL, "column", &r.pgName, &r.pgNote, progress)
	defer stopPG()
	if pgURL != "" {
		progress("writes on PostgreSQL: %d calls of each operation, %d callers", cfg.calls, cfg.conc)
		dbURL, drop, err := freshDatabase(ctx, pgURL, "loadbench_writes")
		if err != nil {
			return r, err
		}
		cells, err := measureWrites(ctx, enginePostgres, "", dbURL, cfg)
		drop()
		if err != nil {
			return r, err
		}
		r.cells = append(r.cells, cells...)
	}

	if cfg.runs == 0 && cfg.keys == 0 {
		r.memNote = "memory part skipped (-runs 0 -keys 0)"
		return r, nil
	}
	memURL := ""
	if pgURL != "" {
		u, drop, err := freshDatabase(ctx, pgURL, "loadbench_memory")
		if err != nil {
			return r, err
		}
		defer drop()
		memURL = u
	}
	m, err := measureIDMemory(ctx, cfg, dir, memURL, progress)
	if err != nil {
		return r, err
	}
	r.memory = m
	return r, nil
}

// printWrites prints the table per operation and engine, the goal lines
// and the memory part.
func printWrites(w io.Writer, r writesResult) {
	m := readMachine()
	fmt.Fprintf(w, "writes with the store: %d calls per cell, %d callers, gateway and simulated ERP in process; %d CPUs, %s, %s, load %s\n",
		r.cfg.calls, r.cfg.conc, m.cpus, m.model, m.goVersion, m.load)
	if r.pgNote != "" {
		fmt.Fprintln(w, r.pgNote)
	} else {
		fmt.Fprintln(w, "postgres:", r.pgName)
	}
	fmt.Fprintln(w, "store off = each call's latency less the time it spent inside the records store (measured per request)")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "op\tengine\tcalls\t2xx\tp50\tp99\tstore off p50\tstore off p99\tadded p50\tadded p99\tstore work p50\tstore work p99\tstore calls/call\tgoal store work p50 <= 2ms")
	for _, c := range r.cells {
		walls, rests, stores := c.walls(), c.rests(), c.stores()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n", c.op, c.engine,
			len(c.calls)+c.non2xx+c.noWork, len(c.calls)+c.noWork,
			dur(quantileOf(walls, 0.5)), dur(quantileOf(walls, 0.99)),
			dur(quantileOf(rests, 0.5)), dur(quantileOf(rests, 0.99)),
			signed(quantileOf(walls, 0.5)-quantileOf(rests, 0.5)), signed(quantileOf(walls, 0.99)-quantileOf(rests, 0.99)),
			dur(quantileOf(stores, 0.5)), dur(quantileOf(stores, 0.99)), c.storeCalls(),
			verdict(c.ok() && quantileOf(stores, 0.5) <= storeWorkGoal))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nstore work by method, mean per call:")
	for _, c := range r.cells {
		if len(c.calls) > 0 {
			fmt.Fprintf(w, "  %s on %s: %s\n", c.op, c.engine, c.methods())
		}
	}
	for _, c := range r.cells {
		if c.firstErr != "" {
			fmt.Fprintf(w, "%s on %s: %d calls not 2xx, first: %s\n", c.op, c.engine, c.non2xx, c.firstErr)
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.cells {
		goal(tw, fmt.Sprintf("%s on %s: store work p50 <= %s", c.op, c.engine, dur(storeWorkGoal)),
			dur(quantileOf(c.stores(), 0.5)), verdict(c.ok() && quantileOf(c.stores(), 0.5) <= storeWorkGoal))
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.memory == nil {
		fmt.Fprintln(w, r.memNote)
		return
	}
	r.memory.print(w)
}

// methods is the mean time per call in each store method, longest first.
func (c writeCell) methods() string {
	sum := map[string]time.Duration{}
	for _, k := range c.calls {
		for m, d := range k.byMethod {
			sum[m] += d
		}
	}
	names := slices.Collect(maps.Keys(sum))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(sum[b], sum[a]) })
	var parts []string
	for _, m := range names {
		parts = append(parts, fmt.Sprintf("%s %s", m, dur(sum[m]/time.Duration(len(c.calls)))))
	}
	return strings.Join(parts, ", ")
}

// ok reports whether every call was answered 2xx with its store work.
func (c writeCell) ok() bool { return c.non2xx == 0 && c.noWork == 0 && len(c.calls) > 0 }
