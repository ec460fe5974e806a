// Command resbench measures how erpgate shields an ERP in trouble and the
// agents in front of it. Against one simulated S/4HANA on loopback it runs
// three scenarios (a 30 % and a 60 % brown-out of the purchase order API and
// a full outage) and, in each, the same load through two clients: the
// gateway with its retry runner, breakers and retry budget, and a naive
// client that calls the ERP directly with go-retryablehttp's defaults. It
// prints a table of ERP calls, amplification, failures, latencies and
// breaker timings, and a PASS or MISS line per resilience goal. With
// -erp-rate the gateway keeps that ceiling of the ERP's quota, and a goal
// line holds the busiest 1 s window of requests at the ERP to it.
//
// Usage:
//
//	resbench [-n 400] [-c 20] [-cap 30s] [-warmup 50] [-seed 1] [-quick] [-erp-rate 0] [-erp-in-flight 0]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "resbench:", err)
		os.Exit(1)
	}
}
