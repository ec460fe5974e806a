// Command erpsim runs the simulated SAP S/4HANA system on its own, for
// trying the gateway against it by hand.
//
// Usage:
//
//	erpsim [-addr 127.0.0.1:8090] [-envelope v2|v2detail|v4] [-faults SPEC] [-seed N]
//
// Each flag defaults to its environment variable (ERPSIM_ADDR,
// ERPSIM_ENVELOPE, ERPSIM_FAULTS, ERPSIM_SEED) when that is set.
//
// -faults puts fault rules in force from the start, in the text form
// sim.ParseFaults documents, for example
//
//	erpsim -seed 7 -faults 'purchase_order:status=503,p=0.3;supplier_invoice:kind=lost,method=POST,path=Release,count=1'
//
// -seed seeds the generator that rules with a probability draw from, so a
// run with the same seed, rules and requests injects the same faults.
// More rules can be added, listed and cleared at /sim/admin/faults.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "erpsim:", err)
		}
		os.Exit(2)
	}
}

// run parses the flags, serves the simulator until ctx is done and then
// shuts it down.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("erpsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", envOr(getenv, "ERPSIM_ADDR", "127.0.0.1:8090"), "listen address (env ERPSIM_ADDR)")
	envelope := fs.String("envelope", envOr(getenv, "ERPSIM_ENVELOPE", sim.EnvelopeV2),
		"error envelope form: v2, v2detail or v4 (env ERPSIM_ENVELOPE)")
	faults := fs.String("faults", getenv("ERPSIM_FAULTS"),
		"fault rules in force from the start, such as 'purchase_order:status=503,p=0.3;*:kind=hang,delay_ms=5000,schedule=..x' (env ERPSIM_FAULTS)")
	seedText := fs.String("seed", envOr(getenv, "ERPSIM_SEED", "1"), "seed for fault rules with a probability (env ERPSIM_SEED)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch *envelope {
	case sim.EnvelopeV2, sim.EnvelopeV2Detail, sim.EnvelopeV4:
	default:
		return fmt.Errorf("invalid -envelope %q: use v2, v2detail or v4", *envelope)
	}
	rules, err := sim.ParseFaults(*faults)
	if err != nil {
		return fmt.Errorf("invalid -faults: %w", err)
	}
	seed, err := strconv.ParseUint(*seedText, 10, 64)
	if err != nil {
		return fmt.Errorf("invalid -seed %q: want an unsigned integer", *seedText)
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := sim.New(sim.Options{Envelope: *envelope, Faults: rules, Seed: seed, Logger: logger})
	for _, r := range srv.Faults() {
		b, _ := json.Marshal(r)
		logger.Info("erpsim: fault rule in force", "rule", string(b))
	}
	url, shutdown, err := srv.Start(*addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "erpsim listening on %s\n", url)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return shutdown(sctx)
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
