package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// run starts the gateway (and, without an ERP URL, the simulated ERP) and
// serves until ctx ends. It prints the address it listens on to stdout.
// "erpgate eval" plays the reference agent over the golden set instead, and
// "erpgate conformance" checks an MCP connector of the gateway.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if handled, err := dispatch(ctx, args, getenv, stdout, stderr); handled {
		return err
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stdout, stderr)
}

// serve runs the gateway cfg describes until ctx ends.
func serve(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	logger := newLogger(cfg, stderr)

	erpURL, erpName := cfg.erpURL, "S/4HANA"
	if erpURL == "" {
		simulator := sim.New(sim.Options{Faults: cfg.simFaults, Seed: cfg.simSeed,
			Now: cfg.now, Logger: logger.With("component", "sim")})
		url, shutdown, err := simulator.Start(cfg.simAddr)
		if err != nil {
			return fmt.Errorf("start the simulated ERP on %s: %w", cfg.simAddr, err)
		}
		defer shutdown(context.Background())
		erpURL, erpName = url, "simulated S/4HANA"
	}

	metrics := api.NewMetrics()
	runner := retry.New(cfg.retry, metrics)
	erpOpts := sap.Options{Runner: runner, Client: cfg.sapClient, TLS: cfg.erpTLS, Logger: logger.With("component", "erp")}
	switch cfg.erpAuth {
	case sap.AuthBasic, "":
		erpOpts.User, erpOpts.Password = cfg.erpUser, cfg.erpPassword
	case sap.AuthOAuth2:
		erpOpts.OAuth2 = cfg.erpOAuth2
	}
	client, err := sap.New(erpURL, erpOpts)
	if err != nil {
		return err
	}
	readERPServices(ctx, client, cfg, logger)

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	public := cfg.publicURL
	if public == "" {
		public = fmt.Sprintf("http://localhost:%d", port)
	}
	contractJSON, err := openapi.JSON(public)
	if err != nil {
		ln.Close()
		return fmt.Errorf("load the contract: %w", err)
	}
	contractYAML, err := openapi.YAMLFor(public)
	if err != nil {
		ln.Close()
		return fmt.Errorf("load the contract: %w", err)
	}
	contractSwagger, err := openapi.Swagger(public)
	if err != nil {
		ln.Close()
		return fmt.Errorf("convert the contract to Swagger 2.0: %w", err)
	}

	store, storeName, err := openRecords(ctx, cfg, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer store.Close()
	var erpClient erp.Client = client
	if cfg.wrapRecords != nil {
		store = cfg.wrapRecords(store)
	}
	if cfg.wrapERP != nil {
		erpClient = cfg.wrapERP(client)
	}

	var runStore runs.Store
	if cfg.redisURL != "" {
		opts, _ := redis.ParseURL(cfg.redisURL) // validated by parseConfig
		rc := redis.NewClient(opts)
		defer rc.Close()
		runStore = runs.NewRedis(rc, "erpgate:", cfg.now)
	}

	handler, err := api.NewServer(api.Options{
		ERP: erpClient, Records: store, Routing: cfg.routing, KeyLease: cfg.keyLease, Tolerance: cfg.tolerance, Metrics: metrics, Logger: logger, Now: cfg.now,
		MaxBodyBytes: cfg.maxBodyBytes, Credentials: cfg.credentials, Runs: cfg.runLimits, RunStore: runStore,
		PostScope: cfg.postScope, ProtectOps: cfg.protectOps, RateLimit: cfg.rateLimit, RateWindow: cfg.rateWindow,
		NotifyApprovals: cfg.approvalWebhook != "", NotifyHandovers: cfg.handoverWebhook != "", MaxKeysPerClient: keyCap(cfg.maxKeys),
		ContractJSON: contractJSON, ContractYAML: contractYAML, ContractSwagger: contractSwagger, BreakerStates: runner.BreakerStates,
	})
	if err != nil {
		ln.Close()
		return err
	}
	scheduler := recheck.New(recheck.Options{Invoices: erpClient, Receipts: handler.Process(), Holds: store,
		Every: cfg.recheckEvery, Interval: cfg.recheckInterval, Now: cfg.now, Observer: metrics,
		Logger: logger.With("component", "recheck")})
	outbox := &api.Outbox{Records: store, HandoverURL: cfg.handoverWebhook, ApprovalURL: cfg.approvalWebhook,
		Now: cfg.now, Logger: logger.With("component", "outbox")}
	doc, err := openapi.Load()
	if err != nil {
		ln.Close()
		return fmt.Errorf("load the contract: %w", err)
	}
	mcpServer, err := mcp.New(handler, doc, mcp.Options{Logger: logger.With("component", "mcp"), Allowed: handler.Allows})
	if err != nil {
		ln.Close()
		return err
	}
	// /mcp serves the same operations as MCP tools; everything else is the
	// REST API.
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpServer.Handler())
	mux.Handle("/", handler)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if cfg.tlsCert != "" {
		scheme = "https"
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	var debug *http.Server
	var debugLn net.Listener
	if cfg.debugAddr != "" {
		if debug, debugLn, err = listenDebug(cfg.debugAddr); err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s for profiles: %w", cfg.debugAddr, err)
		}
		defer debug.Close()
		go func() { _ = debug.Serve(debugLn) }()
	}
	fmt.Fprintf(stdout, "erpgate listening on %s://%s (contract %s/openapi.json; ERP: %s at %s)\n",
		scheme, hostPort(ln.Addr()), public, erpName, redactURL(erpURL))
	if debug != nil {
		fmt.Fprintf(stdout, "erpgate profiles on http://%s/debug/pprof/\n", debugLn.Addr())
	}
	fmt.Fprintf(stdout, "erpgate records in %s\n", storeName)

	errc := make(chan error, 1)
	go func() {
		if cfg.tlsCert != "" {
			errc <- srv.ServeTLS(ln, cfg.tlsCert, cfg.tlsKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	schedCtx, stopScheduler := context.WithCancel(ctx)
	defer stopScheduler()
	go scheduler.Run(schedCtx)
	go outbox.Run(schedCtx)
	go api.SweepKeys(schedCtx, store, 10*time.Minute, nowOf(cfg), logger.With("component", "keys"))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Calls in flight finish their current ERP attempt but make no more;
	// new connections are refused while they drain.
	logger.Info("shutting down", "timeout", cfg.shutdownTimeout.String())
	runner.Drain()
	stopScheduler()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// readERPServices reads the $metadata of every ERP service once and logs
// what it found. A read that fails does not stop the start, as the ERP may
// only be down for now: /readyz reports each service's state, and reads
// again while one is not ok.
func readERPServices(ctx context.Context, client *sap.Client, cfg config, logger *slog.Logger) {
	infos, err := client.ReadMetadata(ctx)
	attrs := []any{"auth", cmp.Or(cfg.erpAuth, sap.AuthNone), "sap_client", cmp.Or(cfg.sapClient, "(system default)")}
	for _, svc := range erp.Services {
		attrs = append(attrs, string(svc), infos[svc].Status)
	}
	attrs = append(attrs, "post_function", infos[erp.ServiceSupplierInvoice].Declares("Post"))
	if err != nil {
		logger.Warn("erp services: not every service is usable; the gateway serves, /readyz reports them",
			append(attrs, "error", err.Error())...)
		return
	}
	logger.Info("erp services", attrs...)
}

// hostPort names the listen address the way a person would dial it.
func hostPort(a net.Addr) string {
	tcp := a.(*net.TCPAddr)
	if tcp.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", tcp.Port)
	}
	return tcp.String()
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(cfg.logLevel)))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.logFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// openRecords opens the gateway's records: PostgreSQL with -database-url,
// else SQLite in -data-dir. It returns the store and where it is, without
// any password.
func openRecords(ctx context.Context, cfg config, logger *slog.Logger) (records.Store, string, error) {
	opts := records.Options{Logger: logger.With("component", "records")}
	if cfg.databaseURL != "" {
		store, err := records.Open(ctx, cfg.databaseURL, opts)
		if err != nil {
			return nil, "", fmt.Errorf("open the records database %s: %w", redactURL(cfg.databaseURL), err)
		}
		return store, "PostgreSQL at " + redactURL(cfg.databaseURL), nil
	}
	store, err := records.OpenDir(ctx, cfg.dataDir, opts)
	if err != nil {
		return nil, "", fmt.Errorf("open the records in %s: %w", cfg.dataDir, err)
	}
	return store, "SQLite at " + filepath.Join(cfg.dataDir, "erpgate.db"), nil
}

// keyCap turns the -max-keys-per-client setting (0: no cap) into
// api.Options' form (negative: no cap).
func keyCap(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func nowOf(cfg config) func() time.Time {
	if cfg.now != nil {
		return cfg.now
	}
	return time.Now
}

// redactURL drops any user and password from a URL before it is printed.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}
