package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Names of the targets and operations in the table.
const (
	direct   = "direct"
	viaNginx = "nginx"
	goProxy  = "go-proxy" // net/http/httputil.ReverseProxy and nothing else
	gateway  = "erpgate"

	opGetInvoice = "get_invoice"
	opMatch      = "run_three_way_match"
	opNotFound   = "get_invoice(404)"
)

// How many turns over all targets the saturation and the constant-rate runs
// take, so that a spell of load from elsewhere on the machine falls on all
// targets alike.
const (
	satRounds   = 2
	fixedRounds = 7
)

// row is one operation through one target, as measured.
type row struct {
	op     string
	target target
	proc   *child        // the proxy's process; nil for the ERP directly
	tree   bool          // count proc's children too (nginx's workers)
	sat    *stats        // nil when saturation is not measured
	cpu    time.Duration // the proxy's CPU time per answer at saturation; 0 when unknown
	fixed  stats
	rate   float64
}

// bench is everything a run found.
type bench struct {
	cfg       config
	machine   machine
	nginxNote string // why there is no nginx column; "" when there is
	nginxName string
	rows      []*row
	allocs    allocReading
	procAlloc float64 // mallocs per get_invoice in the erpgate process; 0 when unknown
	procBytes float64 // bytes allocated per get_invoice in the erpgate process
	procErr   error   // why procAlloc is unknown
	memGW     memoryReading
	memNginx  *memoryReading
	loadEnd   string
	reads     int    // the ERP reads of one three-way match
	profile   string // what -profile wrote; "" without it
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "brownout" {
		return runBrownout(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "invoice" {
		return runInvoice(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "mcp" {
		return runMCP(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "writes" {
		return runWrites(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "decisions" {
		return runDecisions(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "traces" {
		return runTraces(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "quota" {
		return runQuota(ctx, args[1:], stdout, stderr)
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, machine: readMachine()}
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, "loadbench: "+format+"\n", a...) }
	raiseOpenFiles()

	dir, err := os.MkdirTemp("", "loadbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The ERP is a process of its own, as it is in production: in this
	// one, the load generator's garbage collection would pause it too.
	erp, err := runERPSim(ctx, dir, progress)
	if err != nil {
		return err
	}
	defer erp.stop()
	erpURL := erp.url

	readPath, err := erpCalls(ctx, erpURL, readInvoice(invoiceID))
	if err != nil {
		return fmt.Errorf("get_invoice against the ERP: %w", err)
	}
	missingPath, err := erpCalls(ctx, erpURL, readMissing)
	if err != nil {
		return fmt.Errorf("get_invoice of a missing invoice against the ERP: %w", err)
	}
	matchPaths, err := erpCalls(ctx, erpURL, threeWayMatch)
	if err != nil {
		return fmt.Errorf("run_three_way_match against the ERP: %w", err)
	}
	b.reads = len(matchPaths)

	bin, err := erpgateBinary(ctx, cfg.erpgate, dir, progress)
	if err != nil {
		return err
	}
	gw, err := startErpgate(bin, erpURL, dir, "erpgate", cfg.profile != "")
	if err != nil {
		return err
	}
	defer gw.stop()
	gpBin, err := buildGoProxy(ctx, dir)
	if err != nil {
		return err
	}
	gp, err := startGoProxy(gpBin, erpURL, dir)
	if err != nil {
		return err
	}
	defer gp.stop()

	var ngx *child
	if nb := findNginx(cfg.nginx); nb == "" {
		b.nginxNote = "nginx not installed (apt-get install -y nginx): running without the nginx column"
	} else if ngx, err = startNginx(nb, erpURL, dir); err != nil {
		b.nginxNote = fmt.Sprintf("nginx did not start (%v): running without the nginx column", err)
	} else {
		defer ngx.stop()
		b.nginxName = nginxVersion(nb)
	}

	odata := http.Header{"Accept": {"application/json"}}
	targets := func(op string) []target {
		var ts []target
		add := func(name, base string) {
			switch op {
			case opGetInvoice:
				ts = append(ts, target{name: name, method: http.MethodGet, base: base, path: readPath[0], header: odata, want: http.StatusOK})
			case opMatch:
				ts = append(ts, target{name: name, base: base, seq: matchPaths, header: odata, want: http.StatusOK})
			case opNotFound:
				ts = append(ts, target{name: name, method: http.MethodGet, base: base, path: missingPath[0], header: odata, want: http.StatusOK})
			}
		}
		add(direct, erpURL)
		if ngx != nil && op != opNotFound {
			add(viaNginx, ngx.url)
		}
		if op != opNotFound {
			add(goProxy, gp.url)
		}
		switch op {
		case opGetInvoice:
			ts = append(ts, target{name: gateway, method: http.MethodGet, base: gw.url, path: "/invoices/" + invoiceID, want: http.StatusOK})
		case opMatch:
			ts = append(ts, target{name: gateway, method: http.MethodPost, base: gw.url, path: "/invoices/" + invoiceID + "/three-way-match", want: http.StatusOK})
		case opNotFound:
			ts = append(ts, target{name: gateway, method: http.MethodGet, base: gw.url, path: "/invoices/" + missingInvoiceID, want: http.StatusNotFound})
		}
		return ts
	}

	loaders := map[*row]*loader{}
	defer func() {
		for _, l := range loaders {
			l.close()
		}
	}()
	for _, op := range []string{opGetInvoice, opMatch, opNotFound} {
		for _, t := range targets(op) {
			r := &row{op: op, target: t}
			switch t.name {
			case viaNginx:
				r.proc, r.tree = ngx, true
			case goProxy:
				r.proc = gp
			case gateway:
				r.proc = gw
			}
			b.rows = append(b.rows, r)
			loaders[r] = newLoader(t, 2*cfg.concurrency)
		}
	}

	// Saturation: a closed loop per target, its first tenth a warm-up, in
	// rounds over the targets like the constant-rate runs below.
	satRounds := b.rounds(satRounds)
	cpu := map[*row]time.Duration{}
	for round := range satRounds {
		for _, r := range b.rows {
			if r.op == opNotFound {
				continue
			}
			d := cfg.sat / time.Duration(satRounds)
			progress("saturation, round %d of %d: %s via %s, %d concurrent, %s", round+1, satRounds, r.op, r.target.name, cfg.concurrency, d)
			var cpu0 time.Duration
			if r.proc != nil {
				cpu0, _ = cpuTime(r.proc.pid(), r.tree)
			}
			s := loaders[r].attack(ctx, 0, cfg.concurrency, d, d/10)
			if r.sat == nil {
				r.sat = &stats{}
			}
			r.sat.add(s)
			if r.proc != nil {
				if cpu1, err := cpuTime(r.proc.pid(), r.tree); err == nil {
					cpu[r] += cpu1 - cpu0
				}
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	rate := map[string]float64{}
	for _, r := range b.rows {
		if r.sat == nil {
			continue
		}
		if n := r.sat.all - r.sat.errors; cpu[r] > 0 && n > 0 {
			r.cpu = cpu[r] / time.Duration(n)
		}
		if v, ok := rate[r.op]; !ok || r.sat.rps() < v {
			rate[r.op] = r.sat.rps()
		}
	}
	rate[opNotFound] = rate[opGetInvoice]
	for op, v := range rate {
		rate[op] = max(v*cfg.share, 1)
	}

	// Latency at a constant rate below the slowest target's saturation.
	rounds := b.rounds(fixedRounds)
	var allocs, allocBytes, counted float64
	for round := range rounds {
		for _, r := range b.rows {
			r.rate = rate[r.op]
			progress("constant rate, round %d of %d: %s via %s, %.0f/s, %s", round+1, rounds, r.op, r.target.name, r.rate, cfg.fixed/time.Duration(rounds))
			var before memCount
			var scrapeErr error
			count := r.op == opGetInvoice && r.target.name == gateway
			if count {
				before, scrapeErr = scrapeCost(ctx, loaders[r].client, gw.url)
			}
			s := loaders[r].attack(ctx, r.rate, 8, cfg.fixed/time.Duration(rounds), 0)
			r.fixed.add(s)
			if count && scrapeErr == nil {
				var after memCount
				if after, scrapeErr = retryScrape(ctx, loaders[r].client, gw.url); scrapeErr == nil {
					allocs += after.mallocs - before.mallocs
					allocBytes += after.bytes - before.bytes
					counted += float64(s.all)
				}
			}
			if scrapeErr != nil {
				b.procErr = scrapeErr
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	if counted > 0 {
		b.procAlloc, b.procBytes = allocs/counted, allocBytes/counted
	} else if b.procErr == nil {
		b.procErr = errors.New("no get_invoice answered while counting")
	}

	if cfg.profile != "" {
		r := b.row(opGetInvoice, gateway)
		d := profileTime
		if cfg.quick {
			d = time.Second
		}
		progress("CPU profile of erpgate: get_invoice at %.0f/s for %s", r.rate, d)
		if err := profileCPU(ctx, gw, loaders[r], r.rate, d, cfg.profile); err != nil {
			return fmt.Errorf("profile erpgate: %w", err)
		}
		b.profile = fmt.Sprintf("%s, %s of get_invoice at %.0f/s (go tool pprof -top %s)", cfg.profile, d, r.rate, cfg.profile)
	}

	progress("allocations per read, in process")
	if b.allocs, err = measureAllocs(ctx, erpURL, readPath[0]); err != nil {
		return err
	}

	progress("memory with %d keep-alive connections", cfg.conns)
	gw.stop()
	fresh, err := startErpgate(bin, erpURL, dir, "erpgate-memory", false)
	if err != nil {
		return err
	}
	b.memGW, err = measureMemory(ctx, fresh.pid(), false, fresh.url, "/invoices/"+invoiceID, cfg.conns)
	fresh.stop()
	if err != nil {
		return fmt.Errorf("erpgate memory: %w", err)
	}
	if ngx != nil {
		m, err := measureMemory(ctx, ngx.pid(), true, ngx.url, readPath[0], cfg.conns)
		if err != nil {
			return fmt.Errorf("nginx memory: %w", err)
		}
		b.memNginx = &m
	}
	b.loadEnd = loadAverage()
	b.report(stdout)
	return nil
}

// rounds is how many turns the runs take: n, or one for a quick run.
func (b *bench) rounds(n int) int {
	if b.cfg.quick {
		return 1
	}
	return n
}

// scrapeCost reads the erpgate process's allocation counters twice and
// returns the second reading less what the first scrape allocated, so that
// a later reading less it counts only the requests in between.
func scrapeCost(ctx context.Context, client *http.Client, url string) (memCount, error) {
	first, err := retryScrape(ctx, client, url)
	if err != nil {
		return memCount{}, err
	}
	second, err := retryScrape(ctx, client, url)
	if err != nil {
		return memCount{}, err
	}
	return memCount{mallocs: second.mallocs + (second.mallocs - first.mallocs), bytes: second.bytes + (second.bytes - first.bytes)}, nil
}

// retryScrape reads the allocation counters, trying up to three times: on a
// machine loaded past its cores a scrape can fail where the load did not.
func retryScrape(ctx context.Context, client *http.Client, url string) (memCount, error) {
	var err error
	for range 3 {
		var c memCount
		if c, err = memCounters(ctx, client, url); err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return memCount{}, err
}

// failures describes the rows whose hits did not all get the expected
// answer.
func (b *bench) failures() []string {
	var out []string
	for _, r := range b.rows {
		for _, s := range []*stats{r.sat, &r.fixed} {
			if s != nil && s.errors > 0 {
				out = append(out, fmt.Sprintf("%s via %s: %d of %d hits failed, first: %s",
					r.op, r.target.name, s.errors, s.hits, s.firstErr))
			}
		}
	}
	return out
}
