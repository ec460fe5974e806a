// Command erpgate runs the gateway. Without an ERP URL it starts a simulated
// S/4HANA in process, seeded with the golden set, so that every operation
// can be tried at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	fmt.Fprintln(os.Stderr, "erpgate:", err)
	// A mistake on the command line exits with 2, as the flag package's do.
	if _, ok := errors.AsType[*usageError](err); ok {
		os.Exit(2)
	}
	os.Exit(1)
}
