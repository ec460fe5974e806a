package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/cmd/internal/telemetry"
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
	traces, err := telemetry.FromEnv(getenv)
	if err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	return serveTraced(ctx, cfg, traces, stdout, stderr)
}

// serve runs the gateway cfg describes until ctx ends, without traces.
func serve(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	return serveTraced(ctx, cfg, telemetry.Settings{}, stdout, stderr)
}

// serveTraced runs the gateway cfg describes until ctx ends, with traces
// as the OTEL_* variables set them (telemetry.FromEnv).
func serveTraced(ctx context.Context, cfg config, traces telemetry.Settings, stdout, stderr io.Writer) error {
	// The log is buffered (logbuf.go) and written out when serve returns,
	// after the last request and the gateway's own shutdown lines.
	logw := newLogWriter(stderr, logFlushEvery)
	defer logw.Close()
	logger := newLogger(cfg, logw)
	var tracing *telemetry.Tracing
	if traces.Enabled() {
		var err error
		if tracing, err = telemetry.Start(traces, logger.With("component", "traces")); err != nil {
			return err
		}
		logger.Info("traces on", "endpoint", gateway.RedactURL(traces.Endpoint), "sampler", traces.SamplerName)
		// Runs after the server's shutdown: the spans of the last
		// requests are sent before the process ends.
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
			defer cancel()
			if err := tracing.Shutdown(fctx); err != nil {
				logger.Warn("spans not all sent", "error", err)
			}
		}()
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	defer ln.Close()
	public := cfg.publicURL
	if public == "" {
		public = fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	}
	gc := gatewayConfig(cfg, public, logger)
	gc.Tracer = tracing.Tracer()
	demo, err := newDemoPeople(cfg, rand.Reader) // demo.go
	if err != nil {
		return err
	}
	gc.DemoPeople = demo.credentials()
	gw, err := gateway.New(ctx, gc)
	if err != nil {
		return err
	}
	defer gw.Close()
	warnIfOpen(cfg, logger)
	if err := demo.announce(logger, logw, public); err != nil {
		return err
	}
	// Out before the start line, which a reader (or a script) waits for.
	_ = logw.Flush()

	srv := &http.Server{
		Handler:           gw.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      writeTimeout(cfg.retry),
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    api.ServerMaxHeaderBytes,
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
			return fmt.Errorf("listen on %s for profiles: %w", cfg.debugAddr, err)
		}
		defer debug.Close()
		go func() { _ = debug.Serve(debugLn) }()
	}
	fmt.Fprintf(stdout, "erpgate listening on %s://%s (contract %s/openapi.json; ERP: %s at %s)\n",
		scheme, hostPort(ln.Addr()), public, gw.ERPName(), gateway.RedactURL(gw.ERPURL()))
	if debug != nil {
		fmt.Fprintf(stdout, "erpgate profiles on http://%s/debug/pprof/\n", debugLn.Addr())
	}
	fmt.Fprintf(stdout, "erpgate records in %s\n", gw.RecordsName())

	errc := make(chan error, 1)
	go func() {
		if cfg.tlsCert != "" {
			errc <- srv.ServeTLS(ln, cfg.tlsCert, cfg.tlsKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	bgCtx, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		gw.Run(bgCtx)
	}()
	defer func() { stopBackground(); <-bgDone }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Calls in flight finish their current ERP attempt but make no more;
	// new connections are refused while they drain.
	logger.Info("shutting down", "timeout", cfg.shutdownTimeout.String())
	gw.Drain()
	stopBackground()
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

// warnIfOpen warns at start that the gateway serves its callers without
// credentials: with -open, or in front of a real ERP on loopback only
// (checkClientAuth lets nothing else through). /readyz then says
// "auth":"open" and the served contract requires no credentials.
func warnIfOpen(cfg config, logger *slog.Logger) {
	if len(cfg.credentials) > 0 || cfg.oauth.issuer != "" {
		return
	}
	switch {
	case cfg.open:
		logger.Warn("no authentication (-open): every caller that reaches the gateway may call every tool, post_invoice included; "+
			"set -api-keys or -oauth-issuer to close it", "addr", cfg.addr, "auth", api.AuthOpen)
	case cfg.erpURL != "":
		logger.Warn("no authentication: the gateway listens on loopback only, and every caller on this host may call every tool, "+
			"post_invoice included; set -api-keys or -oauth-issuer to close it", "addr", cfg.addr, "auth", api.AuthOpen)
	}
}

// gatewayConfig is the gateway's configuration from the command's, with
// the contract written for public and the log going to logger.
func gatewayConfig(cfg config, public string, logger *slog.Logger) gateway.Config {
	return gateway.Config{
		ERPURL: cfg.erpURL, ERPAuth: cfg.erpAuth, ERPUser: cfg.erpUser, ERPPassword: cfg.erpPassword,
		ERPTLS: cfg.erpTLS, ERPOAuth2: cfg.erpOAuth2, ERPSAML: cfg.erpSAML, ERPTokenExchange: cfg.erpExchange,
		SAPClient: cfg.sapClient, Retry: cfg.retry, ERPQuota: cfg.erpQuota,
		SimAddr: cfg.simAddr, SimFaults: cfg.simFaults, SimSeed: cfg.simSeed,
		DatabaseURL: cfg.databaseURL, DataDir: cfg.dataDir, RedisURL: cfg.redisURL,
		PublicURL: public,
		Routing:   cfg.routing, Tolerance: cfg.tolerance, MaxBodyBytes: cfg.maxBodyBytes, Runs: cfg.runLimits,
		Credentials: cfg.credentials, PostScope: cfg.postScope, ProtectOps: cfg.protectOps,
		OAuthIssuer: cfg.oauth.issuer, OAuthJWKSURL: cfg.oauth.jwksURL, OAuthAudience: cfg.oauth.audience,
		OAuthScopeClaim: cfg.oauth.scopeClaim, OAuthTokenTypes: cfg.oauth.tokenTypes,
		RateLimit: cfg.rateLimit, RateWindow: cfg.rateWindow, MaxKeysPerClient: keyCap(cfg.maxKeys),
		AuthFailLimit: cfg.authFailLimit, TrustedProxies: cfg.trustedProxies,
		HandoverWebhook: cfg.handoverWebhook, ApprovalWebhook: cfg.approvalWebhook, HoldWebhook: cfg.holdWebhook,
		ConsoleSecret: cfg.consoleSecret,
		RecheckEvery:  cfg.recheckEvery, RecheckInterval: cfg.recheckInterval, RunReadTTL: cfg.runReadTTL, MaxRuns: cfg.maxRuns,
		Now: cfg.now, Logger: logger,
		WrapRecords: cfg.wrapRecords, WrapERP: cfg.wrapERP, KeyLease: cfg.keyLease,
	}
}

// hostPort names the listen address the way a person would dial it.
func hostPort(a net.Addr) string {
	tcp := a.(*net.TCPAddr)
	if tcp.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", tcp.Port)
	}
	return tcp.String()
}

// newLogger is the gateway's logger: every line logged inside a trace
// names its trace_id and span_id (telemetry.LogHandler).
func newLogger(cfg config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToUpper(cfg.logLevel)))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.logFormat == "text" {
		return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts)))
	}
	return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts)))
}

// traceFlushTimeout bounds the sending of the last spans at shutdown.
const traceFlushTimeout = 5 * time.Second

// keyCap turns the -max-keys-per-client setting (0: no cap) into
// api.Options' form (negative: no cap).
func keyCap(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// writeTimeout is how long the server lets a handler take to answer: at
// least a minute, and long enough for a posting's whole call (the Post's
// own timeout on top of the call's), so that the answer of a slow posting
// is not cut off.
func writeTimeout(p retry.Policy) time.Duration {
	post := cmp.Or(p.WriteTimeout, retry.DefaultWriteTimeout) + cmp.Or(p.CallTimeout, retry.DefaultCallTimeout)
	return max(time.Minute, post+5*time.Second)
}
