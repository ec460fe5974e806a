// Command loadbench measures what erpgate costs in front of an ERP. On
// loopback it starts the simulated S/4HANA (cmd/erpsim), nginx as a plain
// reverse proxy to it, the standard library's reverse proxy alone
// (cmd/loadbench/goproxy, the floor of any Go gateway on net/http) and
// erpgate, each as a process of its own, and drives each with
// github.com/tsenart/vegeta/v12 for two operations, get_invoice and
// run_three_way_match. For the ERP directly and through nginx, a
// three-way match is the OData reads the gateway makes for it, sent one
// after the other by the load client as a client without the gateway would
// (the gateway itself makes the reads after the invoice at once), so that
// every target is compared per business operation.
//
// It measures throughput at saturation (a closed loop of -c concurrent
// requests), p50 and p99 at a constant rate below the slowest target's
// saturation, the latency each proxy adds to the direct call, the
// INVOICE_NOT_FOUND path at the same rate, allocations per read, and
// erpgate's resident memory with -conns keep-alive connections open. It
// prints the machine, a table and a PASS or MISS line per goal.
//
// Without nginx (apt-get install -y nginx) it runs without the nginx
// column and says so. Run it from the repository: it builds erpgate with
// the go command unless -erpgate names a binary.
//
// loadbench brownout runs another bench: the gateway, with its simulated
// ERP in process, under brown-outs of 10, 20 and 30 % transient failures
// (503 at once or after 50 ms) with 20, 50 and 200 concurrent callers, and
// an outage. It prints, per cell, the calls, the share answered 200,
// whether the circuit breaker opened, the ERP attempts per call and a
// PASS or MISS against the goals.
//
// loadbench invoice decides the two golden invoices, the clean one and
// the one over tolerance that a person approves, through erpgate with
// every OData call of its simulated ERP taking -latency, and beside it a
// client that makes the same OData calls itself one after the other. It
// prints, per invoice and step, the ERP calls, the sequential round trips
// and the wall time, and a PASS or MISS against the goals.
//
// loadbench decisions approves, as a person, approvals that an invoice's
// hold waits for, through erpgate with its outbox running, on SQLite and
// on PostgreSQL, and prints when after each decision the hold was
// released: the decision's answer, get_hold, and hold.released at a
// webhook receiver, with a PASS or MISS against the goal of a second.
//
// loadbench traces runs get_invoice, over REST and as tools/call on /mcp,
// through two gateways alike but for tracing: off, and on with every span
// exported to an OTLP/HTTP receiver in the bench that discards them. It
// prints each path's CPU time per call and what tracing costs of it, with
// a PASS or MISS against the goal of at most 10 microseconds per read.
//
// loadbench quota measures the ERP's quota from outside: erpgate as a
// process, then two replicas sharing a Redis, with -erp-rate, in front of
// a simulated ERP that notes when each request arrives, read by -callers
// callers each from a loopback address of its own. It prints the busiest
// 1 s window of requests at the ERP against the ceiling, with a PASS or
// MISS.
//
// Usage:
//
//	loadbench [-quick] [-c 64] [-sat 10s] [-fixed 14s] [-share 0.5] [-conns 1000] [-nginx path] [-erpgate path] [-profile file]
//	loadbench brownout [-cell 4s] [-seed 1]
//	loadbench invoice [-latency 50ms] [-rounds 3]
//	loadbench decisions [-n 100] [-database-url url]
//	loadbench traces [-c 16] [-d 8s] [-rounds 3]
//	loadbench quota [-erp-rate 20] [-erp-in-flight 0] [-callers 200] [-d 3s] [-redis-url url] [-erpgate path]
//	loadbench writes [-n 400] [-c 2] [-database-url url] [-runs 100000] [-keys 20000] [-memc 64] [-erpgate path]
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
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}
