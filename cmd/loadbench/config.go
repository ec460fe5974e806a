package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// errUsage marks a command line the flag package has already complained
// about.
var errUsage = errors.New("usage")

// config is what the command line asks for.
type config struct {
	concurrency int           // closed-loop requests in flight at saturation
	sat         time.Duration // one saturation run, warm-up included
	fixed       time.Duration // one constant-rate run
	share       float64       // constant rate as a share of the slowest saturation
	conns       int           // keep-alive connections for the memory reading
	nginx       string        // nginx binary; "" looks it up
	erpgate     string        // erpgate binary; "" builds one
	profile     string        // file for erpgate's CPU profile; "" for none
	quick       bool
}

// Defaults of the command line; -quick makes a run of a few seconds that
// only shows the shape of the output.
const (
	defaultConcurrency = 64
	defaultSat         = 10 * time.Second
	defaultFixed       = 14 * time.Second
	defaultShare       = 0.5
	defaultConns       = 1000
	quickSat           = 400 * time.Millisecond
	quickFixed         = 400 * time.Millisecond
	quickConns         = 100
)

func parseConfig(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.concurrency, "c", defaultConcurrency, "concurrent requests of the closed loop that finds saturation")
	fs.DurationVar(&cfg.sat, "sat", defaultSat, "length of each saturation run, its 10 % warm-up included (400ms with -quick)")
	fs.DurationVar(&cfg.fixed, "fixed", defaultFixed, "length of each constant-rate run (400ms with -quick)")
	fs.Float64Var(&cfg.share, "share", defaultShare, "constant rate as a share of the slowest target's saturation throughput")
	fs.IntVar(&cfg.conns, "conns", defaultConns, "keep-alive connections held open for the memory reading (100 with -quick)")
	fs.StringVar(&cfg.nginx, "nginx", "", "nginx binary (default: nginx on PATH or /usr/sbin/nginx)")
	fs.StringVar(&cfg.erpgate, "erpgate", "", "erpgate binary (default: built from this repository with go build)")
	fs.StringVar(&cfg.profile, "profile", "", "write a CPU profile of erpgate under get_invoice at the constant rate to this file (go tool pprof)")
	fs.BoolVar(&cfg.quick, "quick", false, "run of a few seconds that only shows the shape of the output")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loadbench: unexpected arguments %q\n", fs.Args())
		return config{}, fmt.Errorf("%w: unexpected arguments", errUsage)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.quick {
		if !set["sat"] {
			cfg.sat = quickSat
		}
		if !set["fixed"] {
			cfg.fixed = quickFixed
		}
		if !set["conns"] {
			cfg.conns = quickConns
		}
	}
	var msg string
	switch {
	case cfg.concurrency < 1:
		msg = "-c must be at least 1"
	case cfg.sat <= 0 || cfg.fixed <= 0:
		msg = "-sat and -fixed must be positive"
	case cfg.share <= 0 || cfg.share > 1:
		msg = "-share must be in (0, 1]"
	case cfg.conns < 1:
		msg = "-conns must be at least 1"
	}
	if msg != "" {
		fmt.Fprintln(stderr, "loadbench:", msg)
		return config{}, fmt.Errorf("%w: %s", errUsage, msg)
	}
	return cfg, nil
}
