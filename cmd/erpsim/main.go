// Command erpsim runs the simulated SAP S/4HANA system on its own, for
// trying the gateway against it by hand.
//
// Usage:
//
//	erpsim [-addr 127.0.0.1:8090] [-auto-approve-limit 10000] [-envelope v2|v2detail|v4]
//
// Each flag defaults to its environment variable (ERPSIM_ADDR,
// ERPSIM_AUTO_APPROVE_LIMIT, ERPSIM_ENVELOPE) when that is set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shopspring/decimal"

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
	limit := fs.String("auto-approve-limit", envOr(getenv, "ERPSIM_AUTO_APPROVE_LIMIT", sim.DefaultAutoApproveLimit.String()),
		"amount up to which approvals are granted at once (env ERPSIM_AUTO_APPROVE_LIMIT)")
	envelope := fs.String("envelope", envOr(getenv, "ERPSIM_ENVELOPE", sim.EnvelopeV2),
		"error envelope form: v2, v2detail or v4 (env ERPSIM_ENVELOPE)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	autoApprove, err := decimal.NewFromString(*limit)
	if err != nil {
		return fmt.Errorf("invalid -auto-approve-limit %q: %w", *limit, err)
	}
	switch *envelope {
	case sim.EnvelopeV2, sim.EnvelopeV2Detail, sim.EnvelopeV4:
	default:
		return fmt.Errorf("invalid -envelope %q: use v2, v2detail or v4", *envelope)
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := sim.New(sim.Options{AutoApproveLimit: autoApprove, Envelope: *envelope, Logger: logger})
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
