package main

import (
	"context"
	"io"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
)

// settle is how long the ERP's listener lets requests in progress finish
// when a run ends.
const settle = time.Second

// scenario is what the ERP suffers while a client works.
type scenario struct {
	name  string
	fault sim.FaultRule
	// warmup: healthy requests first; the fault starts at t0, after them.
	warmup bool
}

// scenarios are the three scenarios, in the table's order.
func scenarios() []scenario {
	brownOut := func(p float64) sim.FaultRule {
		return sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 503, Probability: p}
	}
	return []scenario{
		{name: "brown-out-30%", fault: brownOut(0.3)},
		{name: "brown-out-60%", fault: brownOut(0.6)},
		{name: "outage", warmup: true,
			fault: sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 503, Count: -1}},
	}
}

// run runs every scenario with every client against one simulated ERP and
// prints the settings, the table and the goals to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	b := &bench{cfg: cfg, erp: sim.New(sim.Options{Seed: cfg.seed})}
	printHeader(stdout, cfg)
	var rows []row
	for _, sc := range scenarios() {
		for _, ct := range contenders() {
			r, err := b.measure(ctx, sc, ct)
			if err != nil {
				return err
			}
			rows = append(rows, r)
		}
	}
	printTable(stdout, rows)
	printGoals(stdout, rows, cfg.quota)
	return nil
}

// bench is one simulated ERP and the settings of the runs against it.
type bench struct {
	cfg config
	erp *sim.Server
}

// measure runs one client through one scenario. The ERP gets a loopback
// listener of its own for the run, so that its calls are counted exactly
// and no connection outlives the run.
func (b *bench) measure(ctx context.Context, sc scenario, ct contender) (row, error) {
	b.erp.ClearFaults()
	defer b.erp.ClearFaults()
	counter := &callCounter{next: b.erp}
	erpSrv, err := serveLoopback(counter)
	if err != nil {
		return row{}, err
	}
	cl, err := ct.start(erpSrv.url, b.cfg.c, b.cfg.quota)
	if err != nil {
		erpSrv.shutdown(settle)
		return row{}, err
	}
	if sc.warmup {
		drive(ctx, b.cfg.warmup, b.cfg.c, cl.get)
	}
	before := counter.calls.Load()
	t0 := time.Now()
	if err := b.erp.InjectFaults(sc.fault); err != nil {
		cl.close()
		erpSrv.shutdown(settle)
		return row{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, b.cfg.cap)
	samples := drive(runCtx, b.cfg.n, b.cfg.c, cl.get)
	cancel()
	// While the outage lasts, one client alone measures what a refused
	// call costs the gateway, without the queueing of the loaded run.
	var probe []sample
	if _, hasBreaker := cl.openings(); sc.warmup && hasBreaker {
		// Within the cap too: with a ceiling of the ERP's quota, the calls
		// that reach the ERP take its turns.
		probeCtx, cancel := context.WithTimeout(ctx, b.cfg.cap)
		probe = drive(probeCtx, probeRequests, 1, cl.get)
		cancel()
	}
	cl.close()
	erpSrv.shutdown(settle)
	if err := ctx.Err(); err != nil {
		return row{}, err
	}
	openings, hasBreaker := cl.openings()
	r := summarize(samples).withBreaker(openings, hasBreaker, t0)
	r.probe = summarize(probe).refused
	r.scenario, r.client = sc.name, ct.name
	r.erpCalls = counter.calls.Load() - before
	r.busiest = counter.busiest(t0)
	return r, nil
}

// probeRequests is how many calls the single client sends while the
// breaker is open.
const probeRequests = 200
