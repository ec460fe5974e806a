// Package api is erpgate's HTTP surface: the chi router with every route in
// routes.go, the middleware, the pipeline of steps every operation takes
// (pipeline.go, one step_*.go per step: identity, scope, rate limit, body,
// idempotent writes, audit, the guard that stops agent loops), the
// handlers, and the JSON of requests and responses.
package api

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
)

// Options configures a Server. Every zero field takes the default
// documented beside it, except ERP, which is required.
type Options struct {
	// ERP is the ERP the gateway fronts. Required.
	ERP erp.Client
	// Tolerance is the three-way match tolerance. Default erp.DefaultTolerance.
	Tolerance erp.Tolerance
	// Metrics holds the Prometheus collectors. Default: a new NewMetrics().
	Metrics *Metrics
	// Logger receives one line per request and the cause of every INTERNAL.
	// Default: discard.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body. Default 64 KiB.
	MaxBodyBytes int64
	// Credentials are the clients allowed to call the tools. Empty, and
	// without OAuth: the gateway is open, and serves a call without
	// credentials as the agent anonymous, with the scopes read, write and
	// post only.
	Credentials []Credential
	// DemoPeople are, in an open gateway, the people known by their API
	// keys beside the anonymous agent: the console signs them in, and the
	// operations of people take their keys. Ignored beside Credentials or
	// OAuth.
	DemoPeople []Credential
	// OAuth, when set, takes OAuth 2.1 access tokens beside the API keys
	// and serves the protected resource metadata (oauth.go).
	OAuth *OAuth
	// PostScope makes post_invoice need the post scope instead of write,
	// so that an agent can prepare invoices without posting them.
	PostScope bool
	// RateLimit is how many tool calls one client (by API key, or by
	// address without keys) may make per RateWindow; more are
	// RATE_LIMITED. Zero: no limit.
	RateLimit int
	// RateWindow is the window of RateLimit and AuthFailLimit. Default 1m.
	RateWindow time.Duration
	// AuthFailLimit is how many failed authentications (no credentials, an
	// unknown API key, a refused access token) one source address may
	// make per RateWindow; more are RATE_LIMITED instead of
	// UNAUTHENTICATED, with Retry-After. Valid credentials from the address
	// still pass. Zero: no limit.
	AuthFailLimit int
	// SubjectTokens hands a caller's verified access token on to the ERP
	// layer as the subject of a token exchange (erp.WithSubjectToken): set
	// when the ERP adapter exchanges callers' tokens, and only then, since
	// every other adapter leaves it unread.
	SubjectTokens bool
	// SharedCounts, when set, keeps the counts of RateLimit and
	// AuthFailLimit in Redis, shared by every replica of the gateway, so
	// that a client's limit is one limit however many replicas serve it;
	// a count Redis cannot answer within a second refuses the call as over
	// its limit. Nil: in memory, per replica.
	SharedCounts redis.UniversalClient
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the source address of a request, for the limits by address. Empty:
	// the source is the peer's address.
	TrustedProxies []netip.Prefix
	// MaxHeaderBytes bounds a request's line and header fields; a larger
	// header is refused 431 INVALID_REQUEST. Default DefaultMaxHeaderBytes.
	// Serve the handler with an http.Server whose MaxHeaderBytes is larger
	// (ServerMaxHeaderBytes): net/http answers beyond its own limit in
	// plain text before any handler runs.
	MaxHeaderBytes int
	// ProtectOps puts /healthz, /readyz and /metrics behind a valid API
	// key. Default: open, for probes and scrapers.
	ProtectOps bool
	// Runs configures the per-run loop limits.
	Runs runs.Limits
	// RunStore keeps the runs. Default: in memory (runs.NewMemory); share
	// a runs.Redis between replicas.
	RunStore runs.Store
	// MaxRuns bounds the runs the default in-memory RunStore keeps; the
	// run with the oldest last call goes first. Default runs.DefaultMaxRuns.
	MaxRuns int
	// Records keeps the gateway's own records: approvals, holds,
	// handovers, idempotency keys and the audit log. Required; share one
	// PostgreSQL database between replicas.
	Records records.Store
	// Routing decides who approves what. Default erp.DefaultRouting.
	Routing erp.Routing
	// NotifyApprovals and NotifyHandovers queue a webhook delivery in the
	// records' outbox for every approval left pending and every handover;
	// a Deliverer sends them.
	NotifyApprovals, NotifyHandovers bool
	// IdempotencyTTL is how long a write's response is kept for replay.
	// Default 24h.
	IdempotencyTTL time.Duration
	// KeyLease is how long a call holds its idempotency key before a
	// retry may take it over, as after the gateway died. Default
	// DefaultKeyLease (2m).
	KeyLease time.Duration
	// RunReadTTL is how long the invoice one request of an agent run read
	// serves that run's three-way match and approval request, instead of
	// another read (erp.RunReads). Zero: every request reads the ERP.
	RunReadTTL time.Duration
	// WriteWait is how long a write waits for another call in flight with
	// its idempotency key, or for another write of its invoice, before it
	// answers WRITE_IN_PROGRESS; never past the request's deadline.
	// Default DefaultWriteWait (15s).
	WriteWait time.Duration
	// MaxKeysPerClient caps the idempotency keys one client holds at once;
	// a call with a new key beyond it is RATE_LIMITED. Default 10000; a
	// negative value turns the cap off.
	MaxKeysPerClient int
	// ContractJSON and ContractYAML are the agents' contract, served at
	// /openapi.json and /openapi.yaml. Default: 404.
	ContractJSON, ContractYAML []byte
	// PeopleContractJSON and PeopleContractYAML are the people's contract,
	// served at /people/openapi.json and /people/openapi.yaml. Default:
	// 404.
	PeopleContractJSON, PeopleContractYAML []byte
	// ContractSwagger is the Swagger 2.0 copy served at /swagger.json, for
	// platforms that import only Swagger 2.0. Default: 404.
	ContractSwagger []byte
	// Ready reports whether the gateway can serve; nil means always ready.
	Ready func(context.Context) error
	// BreakerStates reports the ERP circuit breakers for /readyz; nil
	// reports none. An open breaker makes /readyz say "degraded" but stay
	// 200: every replica sees the same ERP, and a replica taken out of the
	// load balancer could no longer tell agents ERP_UNAVAILABLE.
	BreakerStates func() map[erp.Service]string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Kick is called after a decision, which may have released a hold and
	// queued webhook deliveries: the gateway makes its Outbox deliver at
	// once (Outbox.Kick). Default: nothing.
	Kick func()
	// Tracer, when set, makes each operation a server span, the child of
	// the request's traceparent (trace.go). Default: no spans; a request's
	// traceparent is still passed on to the ERP as it came.
	Tracer trace.Tracer
}

// DefaultMaxBodyBytes is the request body limit when Options leaves it zero.
const DefaultMaxBodyBytes = 64 << 10

// DefaultMaxHeaderBytes is the request header limit when Options leaves it
// zero.
const DefaultMaxHeaderBytes = 32 << 10

// ServerMaxHeaderBytes is the http.Server MaxHeaderBytes to serve the
// gateway with: twice its own header limit, so that a header up to twice
// the limit reaches the gateway and gets its five-field 431; only a larger
// one gets the plain-text 431 that net/http writes itself.
const ServerMaxHeaderBytes = 2 * DefaultMaxHeaderBytes

// DefaultRunReadTTL is the gateway's default -run-read-ttl: how long a
// run's invoice read serves its match and approval request (Options.
// RunReadTTL, whose zero value is off).
const DefaultRunReadTTL = 30 * time.Second

// DefaultMaxKeysPerClient is the idempotency key cap when Options leaves it
// zero.
const DefaultMaxKeysPerClient = 10000

// Server is the gateway's HTTP handler.
type Server struct {
	erp erp.Client
	// invoices is erp, or erp sharing invoice reads within a run
	// (erp.RunReads): the client the operations read through.
	invoices erp.Client
	records  records.Store
	// ap runs the accounts-payable steps that take more than one ERP
	// call: the handlers of match, approval, posting, hold and handover.
	ap *erp.Process
	// tolerance is the three-way match's, which the evidence read judges
	// by too.
	tolerance       erp.Tolerance
	metrics         *Metrics
	log             *slog.Logger
	maxBody         int64
	maxHeader       int
	creds           []Credential
	open            bool // no Credentials, no OAuth: a call without a key is anonymous
	oauth           *resourceServer
	subjectTokens   bool
	postScope       bool
	protectOps      bool
	limiter         *httprate.RateLimiter
	authFails       *httprate.RateLimiter
	trustedProxies  []netip.Prefix
	runs            *runs.Guard
	idem            *idempotencyStore
	contractJSON    []byte
	contractYAML    []byte
	contractSwagger []byte
	peopleJSON      []byte
	peopleYAML      []byte
	ready           func(context.Context) error
	breakers        func() map[erp.Service]string
	now             func() time.Time
	kick            func()
	tracer          trace.Tracer
	router          *chi.Mux
	// oversize answers a request whose header or announced body is over
	// its limit, before the router.
	oversize http.Handler
	// mcp serves /mcp once MountMCP has set it.
	mcp http.Handler
}

// NewServer returns the gateway's handler over opts.ERP.
func NewServer(opts Options) (*Server, error) {
	if opts.ERP == nil || opts.Records == nil {
		return nil, errors.New("api: Options.ERP and Options.Records are required")
	}
	if opts.Tolerance == (erp.Tolerance{}) {
		opts.Tolerance = erp.DefaultTolerance
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RunStore == nil {
		opts.RunStore = runs.NewMemory(opts.Now, opts.MaxRuns)
	}
	if opts.Kick == nil {
		opts.Kick = func() {}
	}
	if opts.IdempotencyTTL <= 0 {
		opts.IdempotencyTTL = 24 * time.Hour
	}
	switch {
	case opts.MaxKeysPerClient == 0:
		opts.MaxKeysPerClient = DefaultMaxKeysPerClient
	case opts.MaxKeysPerClient < 0:
		opts.MaxKeysPerClient = 0
	}
	// The operations read the ERP through invoices, which lets the steps
	// of one run share an invoice read when RunReadTTL allows it; s.erp
	// stays the client itself, for what it says of the ERP's services.
	var invoices erp.Client = opts.ERP
	if opts.RunReadTTL > 0 {
		invoices = erp.NewRunReads(opts.ERP, erp.RunReadsOptions{TTL: opts.RunReadTTL, Now: opts.Now,
			Observe: opts.Metrics.RunRead})
	}
	s := &Server{
		erp:      opts.ERP,
		invoices: invoices,
		records:  opts.Records,
		ap: erp.NewProcess(invoices, erp.ProcessOptions{Records: opts.Records, Tolerance: opts.Tolerance,
			Routing: opts.Routing, NotifyApprovals: opts.NotifyApprovals, NotifyHandovers: opts.NotifyHandovers,
			Now: opts.Now}),
		tolerance:  opts.Tolerance,
		metrics:    opts.Metrics,
		log:        opts.Logger,
		maxBody:    opts.MaxBodyBytes,
		maxHeader:  opts.MaxHeaderBytes,
		creds:      opts.Credentials,
		open:       len(opts.Credentials) == 0 && opts.OAuth == nil,
		postScope:  opts.PostScope,
		protectOps: opts.ProtectOps,
		runs:       runs.NewGuard(opts.RunStore, opts.Runs, opts.Now, opts.Metrics),
		idem: &idempotencyStore{records: opts.Records, ttl: opts.IdempotencyTTL, lease: cmp.Or(opts.KeyLease, DefaultKeyLease),
			wait: cmp.Or(opts.WriteWait, DefaultWriteWait), maxPerClient: opts.MaxKeysPerClient, now: opts.Now, log: opts.Logger},
		contractJSON:    opts.ContractJSON,
		contractYAML:    opts.ContractYAML,
		contractSwagger: opts.ContractSwagger,
		peopleJSON:      opts.PeopleContractJSON,
		peopleYAML:      opts.PeopleContractYAML,
		ready:           opts.Ready,
		breakers:        opts.BreakerStates,
		now:             opts.Now,
		kick:            opts.Kick,
		tracer:          opts.Tracer,
		router:          chi.NewRouter(),
		trustedProxies:  opts.TrustedProxies,
	}
	if opts.OAuth != nil {
		var err error
		if s.oauth, err = newResourceServer(*opts.OAuth, opts.Now); err != nil {
			return nil, err
		}
	}
	if s.open {
		s.creds = opts.DemoPeople
	}
	window := cmp.Or(opts.RateWindow, time.Minute)
	s.subjectTokens = opts.SubjectTokens
	if opts.RateLimit > 0 {
		var shared []httprate.Option
		if opts.SharedCounts != nil {
			shared = append(shared, httprate.WithLimitCounter(newRedisCounter(opts.SharedCounts, "erpgate:rate:calls:")))
		}
		s.limiter = httprate.NewRateLimiter(opts.RateLimit, window, shared...)
	}
	switch {
	case opts.AuthFailLimit <= 0:
	case opts.SharedCounts != nil:
		s.authFails = httprate.NewRateLimiter(opts.AuthFailLimit, window,
			httprate.WithLimitCounter(newRedisCounter(opts.SharedCounts, "erpgate:rate:authfail:")))
	default:
		s.authFails = newAuthFailLimiter(opts.AuthFailLimit, window, DefaultAuthFailSources)
	}
	s.oversize = s.requestID(s.accessLog(http.HandlerFunc(s.refuseOversize)))
	s.routes(s.router)
	return s, nil
}

// Process is the accounts-payable process the server's operations run,
// for the re-check scheduler to share its rules.
func (s *Server) Process() *erp.Process { return s.ap }

// MountMCP makes h, the MCP endpoint, the handler of /mcp. The endpoint is
// built over the server, whose REST handlers serve its tool calls, so it is
// set after NewServer; call it before serving. Until then /mcp is a 404.
func (s *Server) MountMCP(h http.Handler) { s.mcp = h }

// serveMCP serves /mcp. A tool call comes back to this router as a REST
// request in the MCP request's context: with chi's routing state of /mcp
// taken out of it, the router routes the tool call afresh instead of as a
// part of /mcp. The MCP endpoint writes its refusals as JSON-RPC errors
// with the five fields in their data (api/mcp); a refusal in plain text,
// should one get past it, is written as the five fields (mcpWriter), and a
// 401 counts as a failed authentication of the source address.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	if s.mcp == nil {
		s.router.NotFoundHandler().ServeHTTP(w, r)
		return
	}
	mw := &mcpWriter{ResponseWriter: w, s: s, r: r}
	s.mcp.ServeHTTP(mw, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil))))
}

// ServeHTTP serves a request. A request whose header or announced body is
// over its limit is refused before routing, on every path (an MCP message
// is bounded by the MCP transport, and the REST body of each tool call by
// MaxBodyBytes).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.headerBytes(r) > s.maxHeader || (r.ContentLength > s.maxBody && r.URL.Path != "/mcp") {
		s.oversize.ServeHTTP(w, r)
		return
	}
	s.router.ServeHTTP(w, r)
}

// Routes is the gateway's router, for walking its routes (chi.Walk).
func (s *Server) Routes() chi.Routes { return s.router }
