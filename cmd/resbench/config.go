package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/erpgate/erpgate/retry"
)

// errUsage marks a command line the flag package has already complained
// about.
var errUsage = errors.New("usage")

// Defaults of the command line.
const (
	defaultRequests    = 400
	defaultQuickN      = 100
	defaultConcurrency = 20
	defaultCap         = 30 * time.Second
	defaultQuickCap    = 4 * time.Second
	defaultWarmup      = 50
	defaultSeed        = 1
)

// config is what the command line asks for.
type config struct {
	n      int           // requests per scenario and client
	c      int           // concurrent requests
	cap    time.Duration // wall-clock bound of one scenario's run per client
	warmup int           // healthy requests before the outage starts
	seed   uint64        // the simulator's fault seed
	quick  bool          // short run: smaller defaults for n and cap
	// quota is the gateway's ceiling of ERP calls toward each service
	// (-erp-rate, -erp-in-flight); none by default.
	quota retry.QuotaSettings
}

// parseConfig reads the flags; -quick changes the defaults of -n and -cap
// but not values given explicitly.
func parseConfig(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("resbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.n, "n", defaultRequests, "requests per scenario and client (default 100 with -quick)")
	fs.IntVar(&cfg.c, "c", defaultConcurrency, "concurrent requests")
	fs.DurationVar(&cfg.cap, "cap", defaultCap, "wall-clock bound of each scenario's run per client (default 4s with -quick)")
	fs.IntVar(&cfg.warmup, "warmup", defaultWarmup, "healthy requests per client before the outage starts")
	fs.Uint64Var(&cfg.seed, "seed", defaultSeed, "seed of the simulator's probabilistic faults")
	fs.BoolVar(&cfg.quick, "quick", false, "short run (about 15 s)")
	fs.Float64Var(&cfg.quota.Rate, "erp-rate", 0, "the gateway's -erp-rate: most ERP calls per second toward each service (0: no ceiling)")
	fs.IntVar(&cfg.quota.InFlight, "erp-in-flight", 0, "the gateway's -erp-in-flight: most ERP calls at once toward each service (0: no ceiling)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "resbench: unexpected arguments %q\n", fs.Args())
		return config{}, fmt.Errorf("%w: unexpected arguments", errUsage)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.quick && !set["n"] {
		cfg.n = defaultQuickN
	}
	if cfg.quick && !set["cap"] {
		cfg.cap = defaultQuickCap
	}
	return cfg, cfg.check(stderr)
}

// check rejects values the benchmark cannot run with.
func (cfg config) check(stderr io.Writer) error {
	var msg string
	switch {
	case cfg.n < 1:
		msg = "-n must be at least 1"
	case cfg.c < 1:
		msg = "-c must be at least 1"
	case cfg.cap <= 0:
		msg = "-cap must be positive"
	case cfg.warmup < 0:
		msg = "-warmup must not be negative"
	case cfg.quota.Rate < 0 || cfg.quota.InFlight < 0:
		msg = "-erp-rate and -erp-in-flight must not be negative"
	default:
		return nil
	}
	fmt.Fprintln(stderr, "resbench:", msg)
	return fmt.Errorf("%w: %s", errUsage, msg)
}
