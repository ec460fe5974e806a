// Package gateway builds the whole erpgate stack from one Config: the ERP
// (a real S/4HANA or the simulated one in process), the SAP client and its
// retry runner, the records store, the run store, the REST API with the MCP
// endpoint at /mcp, and the background work (holds' re-checks, webhook
// outbox, expired idempotency keys). The erpgate command, its eval and
// conformance tests and the benchmarks all build the gateway with New.
package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/console"
	"github.com/erpgate/erpgate/api/mcp"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/cmd/internal/telemetry"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/recheck"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

// KeySweepInterval is how often Run deletes expired idempotency keys.
const KeySweepInterval = 10 * time.Minute

// Config is everything the gateway is built from, as plain values. The
// zero Config is a working gateway: a simulated ERP on a free loopback
// port, records in a temporary directory removed at Close, run state in
// memory, the defaults of api.Options and retry.Policy, no logging.
type Config struct {
	// ERPURL is the base URL of the S/4HANA system (OData services below
	// /sap/opu/odata/sap/). Empty starts the simulated ERP in process.
	ERPURL string
	// ERPAuth is how the gateway authenticates to the ERP: sap.AuthNone,
	// AuthBasic, AuthMTLS, AuthOAuth2, AuthSAMLBearer or AuthTokenExchange. Empty is basic when ERPUser is
	// set, else none.
	ERPAuth string
	// ERPUser and ERPPassword are the basic-auth credentials.
	ERPUser, ERPPassword string
	// ERPTLS holds the client certificate and the CAs for the ERP; nil for
	// the defaults.
	ERPTLS *tls.Config
	// ERPOAuth2 is the client credentials flow of ERPAuth oauth2.
	ERPOAuth2 *clientcredentials.Config
	// ERPSAML is the SAML 2.0 bearer assertion grant of ERPAuth
	// saml-bearer: each caller's ERP calls are made as the user its name
	// maps to in the ERP.
	ERPSAML *sap.SAMLBearer
	// ERPTokenExchange is the token exchange (RFC 8693) of ERPAuth
	// token-exchange: each caller's access token is exchanged at the
	// identity provider for an ERP token narrowed to the tool it calls.
	ERPTokenExchange *sap.TokenExchange
	// SAPClient is sent as the sap-client parameter when not empty.
	SAPClient string
	// ERPHTTPClient, when set, sends the ERP requests instead of the SAP
	// client's default one (it then carries its own TLS settings): for
	// benchmarks that record or replay the ERP's answers.
	ERPHTTPClient *http.Client
	// SkipMetadata leaves out the read of every ERP service's $metadata at
	// start; /readyz still reads it. For benchmarks whose ERP answers are
	// canned.
	SkipMetadata bool

	// Retry is the policy of every ERP call.
	Retry retry.Policy
	// ERPQuota is the ceiling of ERP calls per second and in flight toward
	// each service, shared by every client and, with RedisURL, by every
	// replica (retry.RedisQuota). Zero: no ceiling.
	ERPQuota retry.QuotaSettings
	// RetryObserver is told of every ERP attempt, retry and breaker change.
	// Nil: Metrics. An observer of its own should pass its calls on to
	// Metrics so that /metrics still counts them.
	RetryObserver retry.Observer

	// SimAddr is the listen address of the simulated ERP (only without
	// ERPURL). Empty: a free loopback port.
	SimAddr string
	// SimFaults are the faults the simulated ERP injects, SimSeed the seed
	// of their probabilities.
	SimFaults []sim.FaultRule
	SimSeed   uint64

	// DatabaseURL is the PostgreSQL database of the gateway's records.
	// Empty: SQLite in DataDir, or, without DataDir either, in a
	// temporary directory removed at Close.
	DatabaseURL string
	DataDir     string
	// RedisURL keeps the run state in Redis, shared by replicas (already
	// validated: a URL redis.ParseURL refuses is an error of New). Empty
	// keeps it in memory.
	RedisURL string

	// PublicURL is the absolute URL clients reach the gateway at, written
	// into the agents' contract served at /openapi.json, /openapi.yaml and
	// /swagger.json and the people's at /people/openapi.json and
	// /people/openapi.yaml. Empty serves no contract. The agents'
	// contract's security says what Credentials and OAuthIssuer make the
	// gateway require: with neither, nothing.
	PublicURL string

	// The settings of the API, as in api.Options: zero values take its
	// defaults.
	Routing          erp.Routing
	Tolerance        erp.Tolerance
	MaxBodyBytes     int64
	Runs             runs.Limits
	Credentials      []api.Credential
	DemoPeople       []api.Credential
	PostScope        bool
	ProtectOps       bool
	RateLimit        int
	RateWindow       time.Duration
	MaxKeysPerClient int // negative: no cap
	AuthFailLimit    int
	TrustedProxies   []netip.Prefix

	// OAuthIssuer, when set, takes the JWT access tokens of this OAuth
	// authorization server beside the API keys (api.OAuth), with
	// PublicURL as the resource. OAuthJWKSURL is where its keys are
	// (empty: discovered), OAuthAudience what a token's aud must hold
	// (empty: PublicURL), OAuthScopeClaim the claim of its scopes (empty:
	// scope).
	OAuthIssuer, OAuthJWKSURL, OAuthAudience, OAuthScopeClaim string
	// OAuthTokenTypes are the JWT typ values an access token may have
	// (api.OAuth.TokenTypes); empty: at+jwt.
	OAuthTokenTypes []string

	// HandoverWebhook and ApprovalWebhook are told, through the outbox, of
	// every handover and every approval left pending; HoldWebhook, the
	// agent's platform, of every hold released and approval decided, so
	// that the run waiting on the invoice goes on. Empty for none.
	HandoverWebhook, ApprovalWebhook, HoldWebhook string

	// ConsoleSecret signs the web console's session cookies and CSRF
	// tokens (console.Options.Secret): replicas need the same one. Empty:
	// random at start, sessions held by this process only.
	ConsoleSecret []byte

	// RecheckEvery and RecheckInterval pace the re-checks of holds waiting
	// for a goods receipt; zero takes recheck's defaults.
	RecheckEvery, RecheckInterval time.Duration
	// RunReadTTL is api.Options.RunReadTTL: how long a run's invoice read
	// serves its match and approval request. Zero: not at all.
	RunReadTTL time.Duration
	// MaxRuns is api.Options.MaxRuns: the most runs kept in memory
	// without Redis. Zero: runs.DefaultMaxRuns.
	MaxRuns int

	// Now is the clock of the gateway and its simulated ERP; nil is
	// time.Now.
	Now func() time.Time
	// Logger receives the gateway's log; nil discards it.
	Logger *slog.Logger
	// Metrics holds the Prometheus collectors served at /metrics; nil
	// makes new ones.
	Metrics *api.Metrics
	// Tracer, when set, makes the spans of the gateway's traces: an
	// operation's, a tool call's, an ERP attempt's and a records write's
	// (telemetry.Records). Nil: tracing off.
	Tracer trace.Tracer

	// WrapRecords and WrapERP, for tests, wrap the records store and the
	// ERP client the API works with, and KeyLease, for tests, shortens the
	// idempotency key lease: tests use them to stop the gateway between two
	// steps of a write.
	WrapRecords func(records.Store) records.Store
	WrapERP     func(erp.Client) erp.Client
	KeyLease    time.Duration
}

// Gateway is a built gateway. Handler serves it; Run does its background
// work; Close releases what New opened.
type Gateway struct {
	handler     http.Handler
	api         *api.Server
	runner      *retry.Runner
	erp         erp.Client
	store       records.Store
	metrics     *api.Metrics
	erpURL      string
	simulated   bool
	recordsName string
	scheduler   *recheck.Scheduler
	outbox      *api.Outbox
	now         func() time.Time
	logger      *slog.Logger
	closers     []func() error
	closeOnce   sync.Once
	closeErr    error
}

// New builds the gateway cfg describes. Without cfg.ERPURL it starts the
// simulated ERP, which serves until Close. Unless cfg.SkipMetadata, it
// reads every ERP service's $metadata once and logs what it found; a read
// that fails does not fail New, as the ERP may only be down for now.
func New(ctx context.Context, cfg Config) (_ *Gateway, err error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{erpURL: cfg.ERPURL, now: cfg.Now, logger: logger}
	if g.now == nil {
		g.now = time.Now
	}
	defer func() {
		if err != nil {
			_ = g.Close()
		}
	}()

	if g.erpURL == "" {
		addr := cmp.Or(cfg.SimAddr, "127.0.0.1:0")
		simulator := sim.New(sim.Options{Faults: cfg.SimFaults, Seed: cfg.SimSeed,
			Now: cfg.Now, Logger: logger.With("component", "sim")})
		u, shutdown, err := simulator.Start(addr)
		if err != nil {
			return nil, fmt.Errorf("start the simulated ERP on %s: %w", addr, err)
		}
		g.closers = append(g.closers, func() error { return shutdown(context.Background()) })
		g.erpURL, g.simulated = u, true
	}

	g.metrics = cfg.Metrics
	if g.metrics == nil {
		g.metrics = api.NewMetrics()
	}
	var observer retry.Observer = g.metrics
	if cfg.RetryObserver != nil {
		observer = cfg.RetryObserver
	}
	var rc *redis.Client
	if cfg.RedisURL != "" {
		opts, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("redis URL: %w", err)
		}
		rc = redis.NewClient(opts)
		g.closers = append(g.closers, rc.Close)
	}
	policy := cfg.Retry
	policy.Tracer = cfg.Tracer
	switch {
	case !cfg.ERPQuota.Enabled():
	case rc != nil:
		policy.Quota = retry.NewRedisQuota(rc, "erpgate:", cfg.ERPQuota)
	default:
		policy.Quota = retry.NewLocalQuota(cfg.ERPQuota)
	}
	if policy.Quota != nil {
		logger.Info("erp quota per service", "calls_per_second", cfg.ERPQuota.Rate, "in_flight", cfg.ERPQuota.InFlight,
			"shared_by_replicas", rc != nil)
	}
	g.runner = retry.New(policy, observer)
	erpOpts := sap.Options{Runner: g.runner, Client: cfg.SAPClient, TLS: cfg.ERPTLS,
		HTTPClient: cfg.ERPHTTPClient, Logger: logger.With("component", "erp")}
	switch cfg.ERPAuth {
	case sap.AuthBasic, "":
		erpOpts.User, erpOpts.Password = cfg.ERPUser, cfg.ERPPassword
	case sap.AuthOAuth2:
		erpOpts.OAuth2 = cfg.ERPOAuth2
	case sap.AuthSAMLBearer:
		erpOpts.SAML = cfg.ERPSAML
	case sap.AuthTokenExchange:
		erpOpts.TokenExchange = cfg.ERPTokenExchange
	}
	client, err := sap.New(g.erpURL, erpOpts)
	if err != nil {
		return nil, err
	}
	if !cfg.SkipMetadata {
		readERPServices(ctx, client, cfg, logger)
	}

	// The served contracts' security says what the gateway takes.
	var contract, people openapi.Documents
	if cfg.PublicURL != "" {
		if contract, err = openapi.Serve(cfg.PublicURL, contractAuth(cfg)); err != nil {
			return nil, fmt.Errorf("load the contract: %w", err)
		}
		if people, err = openapi.ServePeople(cfg.PublicURL, peopleAuth(cfg)); err != nil {
			return nil, fmt.Errorf("load the people's contract: %w", err)
		}
	}

	// The outbox is made first: the API kicks it after a decision.
	g.outbox = &api.Outbox{HandoverURL: cfg.HandoverWebhook, ApprovalURL: cfg.ApprovalWebhook, HoldURL: cfg.HoldWebhook,
		Now: cfg.Now, Logger: logger.With("component", "outbox")}
	store, name, err := openRecords(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	g.closers = append(g.closers, store.Close)
	g.recordsName = name
	g.erp = client
	if cfg.WrapRecords != nil {
		store = cfg.WrapRecords(store)
	}
	if cfg.Tracer != nil {
		store = telemetry.Records(store, cfg.Tracer)
	}
	if cfg.WrapERP != nil {
		g.erp = cfg.WrapERP(client)
	}
	g.store = store
	g.outbox.Records = store

	var runStore runs.Store
	if rc != nil {
		runStore = runs.NewRedis(rc, "erpgate:", cfg.Now)
	}

	var oauth *api.OAuth
	if cfg.OAuthIssuer != "" {
		if cfg.PublicURL == "" {
			return nil, errors.New("OAuth needs the gateway's public URL, its resource")
		}
		oauth = &api.OAuth{Issuer: cfg.OAuthIssuer, JWKSURL: cfg.OAuthJWKSURL, Resource: cfg.PublicURL,
			Audience: cfg.OAuthAudience, ScopeClaim: cfg.OAuthScopeClaim, TokenTypes: cfg.OAuthTokenTypes}
	}
	g.api, err = api.NewServer(api.Options{
		OAuth: oauth,
		ERP:   g.erp, Records: store, Routing: cfg.Routing, KeyLease: cfg.KeyLease, Tolerance: cfg.Tolerance,
		Metrics: g.metrics, Logger: logger, Now: cfg.Now,
		MaxBodyBytes: cfg.MaxBodyBytes, Credentials: cfg.Credentials, DemoPeople: cfg.DemoPeople, Runs: cfg.Runs, RunStore: runStore,
		PostScope: cfg.PostScope, ProtectOps: cfg.ProtectOps, RateLimit: cfg.RateLimit, RateWindow: cfg.RateWindow,
		NotifyApprovals: cfg.ApprovalWebhook != "", NotifyHandovers: cfg.HandoverWebhook != "",
		Kick:             func() { g.outbox.Kick() },
		MaxKeysPerClient: cfg.MaxKeysPerClient, RunReadTTL: cfg.RunReadTTL, MaxRuns: cfg.MaxRuns,
		AuthFailLimit: cfg.AuthFailLimit, TrustedProxies: cfg.TrustedProxies,
		SharedCounts: sharedCounts(rc), SubjectTokens: cfg.ERPTokenExchange != nil,
		ContractJSON: contract.JSON, ContractYAML: contract.YAML, ContractSwagger: contract.Swagger,
		PeopleContractJSON: people.JSON, PeopleContractYAML: people.YAML,
		BreakerStates: g.runner.BreakerStates,
		Tracer:        cfg.Tracer,
	})
	if err != nil {
		return nil, err
	}
	g.scheduler = recheck.New(recheck.Options{Invoices: g.erp, Receipts: g.api.Process(), Holds: store,
		Every: cfg.RecheckEvery, Interval: cfg.RecheckInterval, Now: cfg.Now,
		Observer: kickOnRelease{g.metrics, g.outbox}, Logger: logger.With("component", "recheck")})

	doc, err := openapi.Load()
	if err != nil {
		return nil, fmt.Errorf("load the contract: %w", err)
	}
	mcpServer, err := mcp.New(g.api, doc, mcp.Options{Logger: logger.With("component", "mcp"), Allowed: g.api.Allows,
		Tracer: cfg.Tracer})
	if err != nil {
		return nil, err
	}
	// /mcp serves the same operations as MCP tools; with OAuth a request
	// without valid credentials is refused before it reaches them.
	g.api.MountMCP(g.api.RequireCredentials(mcpServer.Handler()))
	// http.ServeMux in front of the API cleans paths: a request for an
	// unclean one (//healthz, /a/../audit) is redirected to its clean form.
	mux := http.NewServeMux()
	mux.Handle("/", g.api)
	// The person's side beside it: the landing page, /docs and /console.
	ui, err := console.New(console.Options{Gateway: g.api, Records: store, Metrics: g.metrics.Registry(),
		Secret: cfg.ConsoleSecret, Logger: logger.With("component", "console"), Now: cfg.Now,
		PublicURL: cfg.PublicURL, TrustedProxies: cfg.TrustedProxies})
	if err != nil {
		return nil, err
	}
	ui.Mount(mux)
	g.handler = apiFirst{api: g.api, mux: mux}
	return g, nil
}

// contractAuth is what the gateway cfg describes takes from its callers,
// as its served contract says: API keys (with OAuth access tokens beside
// them when configured), OAuth access tokens alone, or nothing.
func contractAuth(cfg Config) openapi.Auth {
	switch {
	case len(cfg.Credentials) > 0:
		return openapi.AuthKeys
	case cfg.OAuthIssuer != "":
		return openapi.AuthBearer
	}
	return openapi.AuthOpen
}

// peopleAuth is what the people's operations take, as the people's
// contract says: API keys (the demonstration people's too, in a gateway
// without -api-keys), or OAuth access tokens alone. Every operation of
// people needs a person's credentials.
func peopleAuth(cfg Config) openapi.Auth {
	if len(cfg.Credentials) == 0 && cfg.OAuthIssuer != "" {
		return openapi.AuthBearer
	}
	return openapi.AuthKeys
}

// apiFirst serves a request for a clean path that is not the console's
// (console.Owns) with the API at once, and every other request with mux,
// which cleans, redirects and routes to the console. Through mux the
// first kind would reach the API's "/" as well, but only after mux had
// matched the path against its patterns: five allocations a request.
type apiFirst struct {
	api http.Handler
	mux *http.ServeMux
}

func (h apiFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if r.Method != http.MethodConnect && strings.HasPrefix(p, "/") && cleanPath(p) == p && !console.Owns(p) {
		h.api.ServeHTTP(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// cleanPath is p as http.ServeMux cleans a path: path.Clean, with a
// trailing slash kept. It allocates nothing for a path that is clean.
func cleanPath(p string) string {
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			return p
		}
		return np + "/"
	}
	return np
}

// Handler serves the gateway: the REST API and the MCP endpoint at /mcp.
func (g *Gateway) Handler() http.Handler { return g.handler }

// REST is the API's router itself, without the path cleaning of Handler:
// the handler api's own benchmarks measure.
func (g *Gateway) REST() http.Handler { return g.api }

// Run does the gateway's background work until ctx ends: the re-checks of
// holds, the webhook outbox and the sweep of expired idempotency keys.
func (g *Gateway) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { g.scheduler.Run(ctx) })
	wg.Go(func() { g.outbox.Run(ctx) })
	wg.Go(func() {
		api.SweepKeys(ctx, g.store, KeySweepInterval, g.now, g.logger.With("component", "keys"))
	})
	wg.Wait()
}

// Recheck re-checks the holds due now once, as Run does on its schedule.
func (g *Gateway) Recheck(ctx context.Context) (recheck.Report, error) {
	return g.scheduler.RunOnce(ctx)
}

// kickOnRelease counts re-checks in the metrics and makes the outbox tell
// of a released hold at once.
type kickOnRelease struct {
	metrics *api.Metrics
	outbox  *api.Outbox
}

func (k kickOnRelease) Rechecked(released bool) {
	k.metrics.Rechecked(released)
	if released {
		k.outbox.Kick()
	}
}

// Drain makes the ERP calls in flight finish their current attempt without
// making another, and refuses new ones: the first step of a shutdown.
func (g *Gateway) Drain() { g.runner.Drain() }

// ERPURL is the base URL of the ERP the gateway fronts: the one configured,
// or the simulated ERP's.
func (g *Gateway) ERPURL() string { return g.erpURL }

// Simulated reports whether the ERP is the simulated one New started.
func (g *Gateway) Simulated() bool { return g.simulated }

// ERPName names the ERP for people: "S/4HANA" or "simulated S/4HANA".
func (g *Gateway) ERPName() string {
	if g.simulated {
		return "simulated S/4HANA"
	}
	return "S/4HANA"
}

// RecordsName says where the records are, without any password, such as
// "SQLite at erpgate-data/erpgate.db".
func (g *Gateway) RecordsName() string { return g.recordsName }

// Metrics is the gateway's Prometheus collectors.
func (g *Gateway) Metrics() *api.Metrics { return g.metrics }

// ERP is the ERP client the API works with (wrapped by Config.WrapERP
// when set).
func (g *Gateway) ERP() erp.Client { return g.erp }

// Records is the records store the API works with (wrapped by
// Config.WrapRecords when set).
func (g *Gateway) Records() records.Store { return g.store }

// Close closes the run store's connection and the records and stops the
// simulated ERP. It is safe to call more than once.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		var errs []error
		for i := len(g.closers) - 1; i >= 0; i-- {
			errs = append(errs, g.closers[i]())
		}
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}

// readERPServices reads the $metadata of every ERP service once and logs
// what it found. /readyz reports each service's state, and reads again
// while one is not ok.
func readERPServices(ctx context.Context, client *sap.Client, cfg Config, logger *slog.Logger) {
	infos, err := client.ReadMetadata(ctx)
	auth := cfg.ERPAuth
	if auth == "" {
		auth = sap.AuthNone
		if cfg.ERPUser != "" {
			auth = sap.AuthBasic
		}
	}
	attrs := []any{"auth", auth, "sap_client", cmp.Or(cfg.SAPClient, "(system default)")}
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

// openRecords opens the gateway's records: PostgreSQL with DatabaseURL,
// else SQLite in DataDir, else SQLite in a temporary directory. It returns
// the store and where it is, without any password.
func openRecords(ctx context.Context, cfg Config, logger *slog.Logger) (records.Store, string, error) {
	opts := records.Options{Logger: logger.With("component", "records"), HoldEvents: cfg.HoldWebhook != ""}
	switch {
	case cfg.DatabaseURL != "":
		store, err := records.Open(ctx, cfg.DatabaseURL, opts)
		if err != nil {
			return nil, "", fmt.Errorf("open the records database %s: %w", RedactURL(cfg.DatabaseURL), err)
		}
		return store, "PostgreSQL at " + RedactURL(cfg.DatabaseURL), nil
	case cfg.DataDir != "":
		store, err := records.OpenDir(ctx, cfg.DataDir, opts)
		if err != nil {
			return nil, "", fmt.Errorf("open the records in %s: %w", cfg.DataDir, err)
		}
		return store, "SQLite at " + filepath.Join(cfg.DataDir, "erpgate.db"), nil
	}
	store, err := records.OpenTemp(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("open temporary records: %w", err)
	}
	return store, "SQLite in a temporary directory", nil
}

// RedactURL drops any user and password from a URL before it is printed.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

// sharedCounts is the Redis the API keeps its per-client and failed
// authentication counts in, nil without one: a nil *redis.Client must not
// become a non-nil interface.
func sharedCounts(rc *redis.Client) redis.UniversalClient {
	if rc == nil {
		return nil
	}
	return rc
}
