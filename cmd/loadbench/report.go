package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// machine is what the figures were measured on.
type machine struct {
	cpus      int
	model     string
	goVersion string
	load      string // load average at the start
}

func readMachine() machine {
	m := machine{cpus: runtime.NumCPU(), model: "unknown CPU", load: loadAverage(),
		goVersion: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.model = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadAverage returns the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Goals, as ratios.
const (
	goalAddedP50   = 2.0  // erpgate's added p50 at most twice nginx's
	goalAddedP99   = 3.0  // erpgate's added p99 at most three times nginx's
	goalThroughput = 0.5  // erpgate's saturation throughput at least half nginx's
	goalAllocs     = 50.0 // allocations per read in the gateway's code

	// At Go's own floor: erpgate's CPU per read and added p50 beyond
	// go-proxy's, and the whole process's allocations per read at half the
	// 178 measured before the hot path was worked over.
	goalFloorCPU    = 25 * time.Microsecond
	goalFloorP50    = 30 * time.Microsecond
	goalProcAllocs  = 89.0
	baseProcAllocs  = 178.0
	baseProcBytesKB = 15.9
)

// report prints the machine, the table and the goals.
func (b *bench) report(w io.Writer) {
	m, cfg := b.machine, b.cfg
	fmt.Fprintf(w, "machine: nproc %d, %s, %s, GOMAXPROCS %d; load average %s at start, %s at end\n",
		m.cpus, m.model, m.goVersion, runtime.GOMAXPROCS(0), m.load, b.loadEnd)
	if b.nginxNote != "" {
		fmt.Fprintf(w, "nginx: %s\n", b.nginxNote)
	} else {
		fmt.Fprintf(w, "nginx: %s, worker_processes auto (one per CPU, like erpgate's GOMAXPROCS), upstream keepalive %d per worker, access log on\n",
			b.nginxName, nginxKeepalive)
	}
	fmt.Fprintf(w, "go-proxy: net/http/httputil.ReverseProxy alone (cmd/loadbench/goproxy), separate process, 128 idle upstream connections: the floor of a Go gateway on net/http\n")
	fmt.Fprintf(w, "erpgate: separate process (own scheduler and GC, as nginx has its own workers), production defaults but -rate-limit 0; run limits on, no run id sent; JSON access log at info\n")
	fmt.Fprintf(w, "direct, nginx and go-proxy: %s is the %d OData reads the gateway makes for it, sent one after the other by the client (erpgate makes those after the invoice at once)\n", opMatch, b.reads)
	fmt.Fprintf(w, "saturation: closed loop of %d, %s per target in %d rounds over all targets (first 10%% of each a warm-up), cpu/req = the proxy's CPU time per answer; "+
		"latency: constant rate %.0f%% of the slowest target's saturation, %s per target in %d rounds\n\n",
		cfg.concurrency, cfg.sat, b.rounds(satRounds), cfg.share*100, cfg.fixed, b.rounds(fixedRounds))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "operation\ttarget\tsat-rps\tcpu/req\trate\tp50\tp99\tadded-p50\tadded-p99\terrors")
	for _, r := range b.rows {
		sat := "-"
		errs := r.fixed.errors
		if r.sat != nil {
			sat = fmt.Sprintf("%.0f", r.sat.rps())
			errs += r.sat.errors
		}
		addP50, addP99 := "-", "-"
		if d := b.row(r.op, direct); d != nil && r.target.name != direct {
			addP50 = signed(r.fixed.quantile(0.5) - d.fixed.quantile(0.5))
			addP99 = signed(r.fixed.quantile(0.99) - d.fixed.quantile(0.99))
		}
		cpu := "-"
		if r.cpu > 0 {
			cpu = dur(r.cpu)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%d\n", r.op, r.target.name, sat, cpu, r.rate,
			dur(r.fixed.quantile(0.5)), dur(r.fixed.quantile(0.99)), addP50, addP99, errs)
	}
	tw.Flush()
	for _, f := range b.failures() {
		fmt.Fprintf(w, "warning: %s\n", f)
	}

	proc := "unknown"
	if b.procAlloc > 0 {
		proc = fmt.Sprintf("%.0f (%.1f KB)", b.procAlloc, b.procBytes/1000)
	}
	fmt.Fprintf(w, "\nallocs per get_invoice: %.0f in the gateway's code (router, middleware, operation, encoding; = api BenchmarkGetInvoice), "+
		"%.0f with the SAP client and decoding (= BenchmarkProxiedRead), %s for the whole erpgate process under load (net/http included)\n",
		b.allocs.gateway, b.allocs.proxied, proc)
	fmt.Fprintf(w, "memory: erpgate RSS %s after one request, %s with %d keep-alive connections (%s per connection, %d open files)",
		mib(b.memGW.idle), mib(b.memGW.loaded), b.memGW.conns, kib(b.memGW.perConn()), b.memGW.fds)
	if b.memNginx != nil {
		fmt.Fprintf(w, "; nginx master and workers %s, %s with %d", mib(b.memNginx.idle), mib(b.memNginx.loaded), b.memNginx.conns)
	}
	fmt.Fprintln(w)
	if b.profile != "" {
		fmt.Fprintf(w, "profile: erpgate CPU in %s\n", b.profile)
	}
	fmt.Fprintln(w)

	gw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, op := range []string{opGetInvoice, opMatch} {
		d, n, g := b.row(op, direct), b.row(op, viaNginx), b.row(op, gateway)
		for _, q := range []struct {
			name  string
			q     float64
			limit float64
		}{{"p50", 0.5, goalAddedP50}, {"p99", 0.99, goalAddedP99}} {
			name := fmt.Sprintf("%s: erpgate added %s <= %.0fx nginx's", op, q.name, q.limit)
			if n == nil {
				goal(gw, name, "no nginx", "n/a")
				continue
			}
			ga := g.fixed.quantile(q.q) - d.fixed.quantile(q.q)
			na := n.fixed.quantile(q.q) - d.fixed.quantile(q.q)
			goal(gw, name, fmt.Sprintf("%s vs %s = %s", signed(ga), signed(na), ratio(ga, na)),
				verdict(ga <= 0 || (na > 0 && float64(ga) <= q.limit*float64(na))))
		}
		name := fmt.Sprintf("%s: erpgate throughput >= %.0f%% of nginx's", op, goalThroughput*100)
		if n == nil {
			goal(gw, name, "no nginx", "n/a")
			continue
		}
		gr, nr := g.sat.rps(), n.sat.rps()
		goal(gw, name, fmt.Sprintf("%.0f vs %.0f rps = %.0f%%", gr, nr, 100*gr/max(nr, 1)), verdict(gr >= goalThroughput*nr))
	}
	ok, nf := b.row(opGetInvoice, gateway), b.row(opNotFound, gateway)
	okP50, okP99 := ok.fixed.quantile(0.5), ok.fixed.quantile(0.99)
	nfP50, nfP99 := nf.fixed.quantile(0.5), nf.fixed.quantile(0.99)
	goal(gw, "error path (INVOICE_NOT_FOUND) no slower than success (erpgate p50, p99)",
		fmt.Sprintf("%s, %s vs %s, %s", dur(nfP50), dur(nfP99), dur(okP50), dur(okP99)), verdict(nfP50 <= okP50 && nfP99 <= okP99))
	goal(gw, fmt.Sprintf("allocs per proxied read <= %.0f (gateway's code)", goalAllocs),
		fmt.Sprintf("%.0f", b.allocs.gateway), verdict(b.allocs.gateway <= goalAllocs))
	b.perCall(gw)
	for _, op := range []string{opGetInvoice, opMatch} {
		b.floor(gw, op)
	}
	gw.Flush()
}

// floor prints, for op, what the standard library's reverse proxy adds
// against nginx, and what erpgate adds beyond it: how much of erpgate's
// added p50 is net/http itself.
func (b *bench) floor(w io.Writer, op string) {
	d, n, p, g := b.row(op, direct), b.row(op, viaNginx), b.row(op, goProxy), b.row(op, gateway)
	if d == nil || p == nil || g == nil {
		return
	}
	pa := p.fixed.quantile(0.5) - d.fixed.quantile(0.5)
	if n != nil {
		na := n.fixed.quantile(0.5) - d.fixed.quantile(0.5)
		fmt.Fprintf(w, "floor\t%s: go-proxy added p50 against nginx's\t%s vs %s = %s\t\n", op, signed(pa), signed(na), ratio(pa, na))
	}
	fmt.Fprintf(w, "floor\t%s: erpgate added p50 beyond go-proxy's\t%s\t\n", op, signed(g.fixed.quantile(0.5)-p.fixed.quantile(0.5)))
}

// perCall prints the goals of a read at Go's own floor: erpgate's CPU per
// read and added p50 against go-proxy's in this run, and the whole
// process's allocations per read against the 178 (15.9 KB) before.
func (b *bench) perCall(w io.Writer) {
	p, g := b.row(opGetInvoice, goProxy), b.row(opGetInvoice, gateway)
	if p == nil || g == nil {
		return
	}
	name := fmt.Sprintf("get_invoice: erpgate cpu/req <= go-proxy's + %s", dur(goalFloorCPU))
	if p.cpu > 0 && g.cpu > 0 {
		goal(w, name, fmt.Sprintf("%s vs %s = %s", dur(g.cpu), dur(p.cpu), signed(g.cpu-p.cpu)), verdict(g.cpu-p.cpu <= goalFloorCPU))
	} else {
		goal(w, name, "cpu unknown", "n/a")
	}
	gp := g.fixed.quantile(0.5) - p.fixed.quantile(0.5)
	goal(w, fmt.Sprintf("get_invoice: erpgate added p50 <= go-proxy's + %s", dur(goalFloorP50)), signed(gp), verdict(gp <= goalFloorP50))
	name = fmt.Sprintf("get_invoice: allocs per read, whole erpgate process <= %.0f (half of %.0f, %.1f KB)", goalProcAllocs, baseProcAllocs, baseProcBytesKB)
	if b.procAlloc > 0 {
		goal(w, name, fmt.Sprintf("%.0f, %.1f KB", b.procAlloc, b.procBytes/1000), verdict(b.procAlloc <= goalProcAllocs))
	} else {
		goal(w, name, fmt.Sprintf("unknown (%v)", b.procErr), "n/a")
	}
}

// row returns the row of op through the named target, or nil.
func (b *bench) row(op, name string) *row {
	for _, r := range b.rows {
		if r.op == op && r.target.name == name {
			return r
		}
	}
	return nil
}

func goal(w io.Writer, name, value, verdict string) {
	fmt.Fprintf(w, "goal\t%s\t%s\t%s\n", name, value, verdict)
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// ratio prints a/b, or what stands for it when b is not positive.
func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a (nginx adds nothing measurable)"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// dur prints a latency with three significant digits.
func dur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + dur(-d)
	case d < time.Millisecond:
		return fmt.Sprintf("%dus", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + dur(d)
	}
	return dur(d)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)) }
