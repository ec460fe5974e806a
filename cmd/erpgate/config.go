package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/console"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// config is every setting of the gateway. Each has a flag and an
// environment variable; a flag given on the command line wins.
type config struct {
	addr             string
	tlsCert, tlsKey  string
	shutdownTimeout  time.Duration
	postScope        bool
	protectOps       bool
	open             bool // serve callers without credentials on purpose (checkClientAuth)
	rateLimit        int
	rateWindow       time.Duration
	authFailLimit    int
	trustedProxies   []netip.Prefix
	publicURL        string
	erpURL           string
	erpUser          string
	erpPassword      string
	erpAuth          string // sap.AuthNone, AuthBasic, AuthMTLS, AuthOAuth2, AuthSAMLBearer or AuthTokenExchange
	consoleSecret    []byte
	erpTLS           *tls.Config // client certificate and CAs for the ERP; nil for the defaults
	erpOAuth2        *clientcredentials.Config
	erpSAML          *sap.SAMLBearer
	erpExchange      *sap.TokenExchange
	sapClient        string
	erpTimeout       time.Duration
	retry            retry.Policy
	erpQuota         retry.QuotaSettings
	simAddr          string
	simFaults        []sim.FaultRule
	simSeed          uint64
	autoApproveLimit decimal.Decimal
	tolerance        erp.Tolerance
	maxBodyBytes     int64
	runLimits        runs.Limits
	redisURL         string
	handoverWebhook  string
	approvalWebhook  string
	holdWebhook      string
	dataDir          string
	databaseURL      string
	routing          erp.Routing
	maxKeys          int
	recheckEvery     time.Duration
	recheckInterval  time.Duration
	runReadTTL       time.Duration
	maxRuns          int
	credentials      []api.Credential
	oauth            struct {
		issuer, jwksURL, audience, scopeClaim string
		tokenTypes                            []string
	}
	logLevel  string
	logFormat string
	debugAddr string

	// erpIn holds the ERP credential settings as given; checkERPAuth and
	// checkERPTLS turn them into erpAuth, erpTLS, erpOAuth2, erpSAML and
	// erpExchange.
	erpIn struct {
		clientCert, clientKey, ca        string
		tokenURL, clientID, clientSecret string
		scopes                           string
		samlIssuer, samlAudience         string
		samlCert, samlKey, samlUser      string
		exchangeAudience, exchangeScope  string
		exchangeSubjectType              string
		exchangeKeyCallers               string
	}
	// approvalRules is the file routing was read from; empty, routing is
	// the default bands with autoApproveLimit.
	approvalRules string

	// now is the clock of the gateway and its simulated ERP; nil means
	// time.Now. No flag sets it: tests shift it to run on another date.
	now func() time.Time
	// wrapRecords and wrapERP, when set, wrap the records store and the
	// ERP client, and keyLease shortens the idempotency key lease: tests
	// use them to stop the gateway between two steps of a write. No flag
	// sets them.
	wrapRecords func(records.Store) records.Store
	wrapERP     func(erp.Client) erp.Client
	keyLease    time.Duration
}

// setting describes one flag and its environment variable, and parses its
// value into a config.
type setting struct {
	name, env, def, usage string
	parse                 parser
}

// settings are every setting of the gateway, each with the parser of its
// value (settings.go); what depends on more than one setting is in checks.
var settings = []setting{
	{"config", "ERPGATE_CONFIG", "", "file of ERPGATE_*=value lines applied under the environment and the flags",
		readFirst},
	{"addr", "ERPGATE_ADDR", ":8080", "listen address; port 0 picks a free port and prints it",
		addrSetting(":8080 or 127.0.0.1:0", func(c *config, v string) { c.addr = v })},
	{"tls-cert", "ERPGATE_TLS_CERT", "", "PEM certificate file; with -tls-key the gateway serves HTTPS only",
		fileSetting(func(c *config, v string) { c.tlsCert = v })},
	{"tls-key", "ERPGATE_TLS_KEY", "", "PEM private key file for -tls-cert",
		fileSetting(func(c *config, v string) { c.tlsKey = v })},
	{"shutdown-timeout", "ERPGATE_SHUTDOWN_TIMEOUT", "50s", "how long a shutdown waits for calls in flight; above -post-timeout, so that a posting under way answers its agent before the process ends",
		durationSetting(0, "must be a duration such as 20s", func(c *config, d time.Duration) { c.shutdownTimeout = d })},
	{"public-url", "ERPGATE_PUBLIC_URL", "", "absolute URL clients reach the gateway at, written into the served contract; an https URL makes the web console's cookies Secure, also behind a TLS-terminating proxy (default: http://localhost:<port>)",
		httpURLSetting(func(c *config, v string) { c.publicURL = v })},
	{"erp-url", "ERPGATE_ERP_URL", "", "base URL of the S/4HANA system (OData services below /sap/opu/odata/sap/); empty starts the simulated ERP in process",
		parseERPURL},
	{"erp-user", "ERPGATE_ERP_USER", "", "ERP basic-auth user",
		textSetting(func(c *config, v string) { c.erpUser = v })},
	{"erp-password", "ERPGATE_ERP_PASSWORD", "", "ERP basic-auth password (prefer the environment variable)",
		secretSetting(func(c *config, v string) { c.erpPassword = v })},
	{"erp-auth", "ERPGATE_ERP_AUTH", "", "how the gateway authenticates to the ERP: basic, mtls, oauth2, saml-bearer, token-exchange or none (default: basic with -erp-user, else none)",
		optional(enumSetting(func(c *config, v string) { c.erpAuth = v }, sap.AuthBasic, sap.AuthMTLS, sap.AuthOAuth2, sap.AuthSAMLBearer,
			sap.AuthTokenExchange, sap.AuthNone))},
	{"erp-client-cert", "ERPGATE_ERP_CLIENT_CERT", "", "PEM client certificate file for -erp-auth mtls (X.509 authentication)",
		textSetting(func(c *config, v string) { c.erpIn.clientCert = v })},
	{"erp-client-key", "ERPGATE_ERP_CLIENT_KEY", "", "PEM private key file of -erp-client-cert",
		textSetting(func(c *config, v string) { c.erpIn.clientKey = v })},
	{"erp-ca", "ERPGATE_ERP_CA", "", "PEM bundle of the CAs the ERP's certificate is checked against, for a private CA; empty: the system's roots",
		parseERPCA},
	{"erp-token-url", "ERPGATE_ERP_TOKEN_URL", "", "OAuth 2.0 token endpoint for -erp-auth oauth2 (client credentials grant), saml-bearer (SAML 2.0 bearer assertion grant) and token-exchange (RFC 8693 token exchange)",
		textSetting(func(c *config, v string) { c.erpIn.tokenURL = v })},
	{"erp-client-id", "ERPGATE_ERP_CLIENT_ID", "", "OAuth 2.0 client id for -erp-auth oauth2, saml-bearer and token-exchange",
		textSetting(func(c *config, v string) { c.erpIn.clientID = v })},
	{"erp-client-secret", "ERPGATE_ERP_CLIENT_SECRET", "", "OAuth 2.0 client secret for -erp-auth oauth2, saml-bearer and token-exchange (prefer the environment variable)",
		secretSetting(func(c *config, v string) { c.erpIn.clientSecret = v })},
	{"erp-scopes", "ERPGATE_ERP_SCOPES", "", "OAuth 2.0 scopes to ask for, separated by commas or spaces (with token-exchange, for the gateway's own calls); empty: the client's default scopes",
		textSetting(func(c *config, v string) { c.erpIn.scopes = v })},
	{"erp-saml-issuer", "ERPGATE_ERP_SAML_ISSUER", "", "for -erp-auth saml-bearer: the gateway's issuer (entity id) as the ERP trusts it as an identity provider",
		textSetting(func(c *config, v string) { c.erpIn.samlIssuer = v })},
	{"erp-saml-audience", "ERPGATE_ERP_SAML_AUDIENCE", "", "for -erp-auth saml-bearer: the audience the ERP's OAuth server expects (its SAML service provider name)",
		textSetting(func(c *config, v string) { c.erpIn.samlAudience = v })},
	{"erp-saml-cert", "ERPGATE_ERP_SAML_CERT", "", "for -erp-auth saml-bearer: PEM certificate signing the assertions, the identity provider's certificate the ERP trusts",
		textSetting(func(c *config, v string) { c.erpIn.samlCert = v })},
	{"erp-saml-key", "ERPGATE_ERP_SAML_KEY", "", "PEM RSA private key of -erp-saml-cert",
		textSetting(func(c *config, v string) { c.erpIn.samlKey = v })},
	{"erp-saml-user", "ERPGATE_ERP_SAML_USER", "", "for -erp-auth saml-bearer: the user asserted for ERP calls made for no caller (start-up checks, re-checks); a caller's own calls assert its name",
		textSetting(func(c *config, v string) { c.erpIn.samlUser = v })},
	{"erp-exchange-audience", "ERPGATE_ERP_EXCHANGE_AUDIENCE", "", "for -erp-auth token-exchange: the audience asked for at -erp-token-url, the ERP as the identity provider names it (a client id or an audience URI)",
		textSetting(func(c *config, v string) { c.erpIn.exchangeAudience = v })},
	{"erp-exchange-scope", "ERPGATE_ERP_EXCHANGE_SCOPE", sap.DefaultExchangeScope, "for -erp-auth token-exchange: the scope asked for a tool's ERP token, scopes separated by spaces, {operation} the tool's name (get_invoice), {service} the SAP OData service; must name {operation}",
		textSetting(func(c *config, v string) { c.erpIn.exchangeScope = v })},
	{"erp-exchange-subject-type", "ERPGATE_ERP_EXCHANGE_SUBJECT_TYPE", "access_token", "for -erp-auth token-exchange: the subject_token_type the caller's token is sent as, access_token or jwt",
		enumSetting(func(c *config, v string) { c.erpIn.exchangeSubjectType = v }, "access_token", "jwt")},
	{"erp-exchange-key-callers", "ERPGATE_ERP_EXCHANGE_KEY_CALLERS", "refuse", "for -erp-auth token-exchange: what a caller known by an API key (a person in the console, an agent with a key) gets toward the ERP, which has no token to exchange: refuse (UNAUTHENTICATED) or gateway (the gateway's own token, the caller named only in X-Erpgate-Caller)",
		enumSetting(func(c *config, v string) { c.erpIn.exchangeKeyCallers = v }, "refuse", "gateway")},
	{"sap-client", "ERPGATE_SAP_CLIENT", "", "SAP client (three digits, e.g. 100) sent with every ERP call as the sap-client parameter; empty: the system's default client",
		parseSAPClient},
	{"erp-timeout", "ERPGATE_ERP_TIMEOUT", "3s", "timeout of one ERP call attempt",
		durationSetting(time.Nanosecond, "must be a positive duration such as 3s", func(c *config, d time.Duration) { c.erpTimeout, c.retry.AttemptTimeout = d, d })},
	{"erp-attempts", "ERPGATE_ERP_ATTEMPTS", "3", "most attempts of one ERP call (1 turns retries off)",
		intSetting(1, 10, "must be a whole number from 1 to 10", func(c *config, n int) { c.retry.MaxAttempts = n })},
	{"erp-call-timeout", "ERPGATE_ERP_CALL_TIMEOUT", "10s", "deadline of one ERP call, retries and waits included",
		durationSetting(time.Nanosecond, positiveDuration, func(c *config, d time.Duration) { c.retry.CallTimeout = d })},
	{"post-timeout", "ERPGATE_POST_TIMEOUT", "45s", "timeout of one Post (the posting) at the ERP, which goes on posting after the gateway gives up: a Post is never sent again while one may still run, and the call's deadline is -erp-call-timeout on top",
		durationSetting(time.Nanosecond, positiveDuration, func(c *config, d time.Duration) { c.retry.WriteTimeout = d })},
	{"erp-backoff", "ERPGATE_ERP_BACKOFF", "200ms", "first backoff before a retry (exponential, full jitter)",
		durationSetting(time.Nanosecond, positiveDuration, func(c *config, d time.Duration) { c.retry.InitialInterval = d })},
	{"erp-backoff-max", "ERPGATE_ERP_BACKOFF_MAX", "2s", "longest backoff before a retry",
		durationSetting(time.Nanosecond, positiveDuration, func(c *config, d time.Duration) { c.retry.MaxInterval = d })},
	{"breaker-open-for", "ERPGATE_BREAKER_OPEN_FOR", "5s", "how long an ERP service's circuit breaker stays open before a probe",
		durationSetting(time.Nanosecond, positiveDuration, func(c *config, d time.Duration) { c.retry.Breaker.OpenFor = d })},
	{"retry-budget", "ERPGATE_RETRY_BUDGET", "0.23", "retries allowed per ERP call in the long run, per service (token bucket; 0 turns the budget off)",
		parseRetryBudget},
	{"erp-rate", "ERPGATE_ERP_RATE", "0", "most ERP calls per second toward each ERP service, retries included, shared by every client and, with -redis-url, by every replica: SAP's quota; above it a call is RATE_LIMITED (reason erp_quota); 0 for no ceiling",
		floatSetting("must be a number of calls per second, 0 for no ceiling", func(c *config, f float64) { c.erpQuota.Rate = f })},
	{"erp-in-flight", "ERPGATE_ERP_IN_FLIGHT", "0", "most ERP calls running at once toward each ERP service, shared like -erp-rate; 0 for no ceiling",
		intSetting(0, math.MaxInt32, "must be a whole number, 0 for no ceiling", func(c *config, n int) { c.erpQuota.InFlight = n })},
	{"sim-addr", "ERPGATE_SIM_ADDR", "127.0.0.1:8090", "listen address of the in-process simulated ERP (only without -erp-url)",
		addrSetting("127.0.0.1:8090 or 127.0.0.1:0", func(c *config, v string) { c.simAddr = v })},
	{"sim-faults", "ERPGATE_SIM_FAULTS", "", "simulated ERP: faults to inject, e.g. purchase_order:status=503,p=0.3 (grammar in erp/sim/README.md)",
		parseSimFaults},
	{"sim-seed", "ERPGATE_SIM_SEED", "1", "simulated ERP: seed of the fault probabilities",
		parseSimSeed},
	{"auto-approve-limit", "ERPGATE_AUTO_APPROVE_LIMIT", "10000", "approval routing without -approval-rules: amounts up to this are approved at once",
		decimalSetting("must be a non-negative amount", func(c *config, d decimal.Decimal) { c.autoApproveLimit = d })},
	{"approval-rules", "ERPGATE_APPROVAL_RULES", "", "JSON file of approval routing rules per company code (auto-approve limit, amount bands to approver groups); empty: the default bands",
		parseApprovalRules},
	{"approval-webhook", "ERPGATE_APPROVAL_WEBHOOK", "", "URL told of every approval left pending for a person (JSON POST through the outbox, retried); empty for none",
		httpURLSetting(func(c *config, v string) { c.approvalWebhook = v })},
	{"data-dir", "ERPGATE_DATA_DIR", "erpgate-data", "directory of the embedded SQLite database of the gateway's records (one replica only); unused with -database-url",
		textSetting(func(c *config, v string) { c.dataDir = v })},
	{"database-url", "ERPGATE_DATABASE_URL", "", "PostgreSQL for the gateway's records shared by replicas, e.g. postgres://erpgate@db:5432/erpgate (prefer the environment variable); empty: SQLite in -data-dir",
		urlSetting("must be a postgres:// URL", []string{"postgres", "postgresql"}, func(c *config, v string) { c.databaseURL = v })},
	{"max-keys-per-client", "ERPGATE_MAX_KEYS_PER_CLIENT", "10000", "idempotency keys one client may hold at once (0 for no cap)",
		intSetting(0, math.MaxInt, "must be a whole number, 0 for no cap", func(c *config, n int) { c.maxKeys = n })},
	{"tolerance-percent", "ERPGATE_TOLERANCE_PERCENT", "2", "three-way match tolerance in percent",
		decimalSetting("must be a non-negative number", func(c *config, d decimal.Decimal) { c.tolerance.Percent = d })},
	{"tolerance-absolute", "ERPGATE_TOLERANCE_ABSOLUTE", "50", "three-way match tolerance as an amount in the document currency",
		decimalSetting("must be a non-negative amount", func(c *config, d decimal.Decimal) { c.tolerance.Absolute = d })},
	{"max-body-bytes", "ERPGATE_MAX_BODY_BYTES", "65536", "largest request body accepted",
		intSetting(1024, 16<<20, "must be a whole number from 1024 to 16777216", func(c *config, n int64) { c.maxBodyBytes = n })},
	{"run-limits", "ERPGATE_RUN_LIMITS", "true", "enforce the per-run loop limits on calls that carry X-Run-Id",
		boolSetting(func(c *config, on bool) { c.runLimits.Disabled = !on })},
	{"run-budget", "ERPGATE_RUN_BUDGET", "20", "tool calls a run may make per invoice",
		intSetting(1, math.MaxInt, "must be a whole number of at least 1", func(c *config, n int) { c.runLimits.Budget = n })},
	{"invoice-calls", "ERPGATE_INVOICE_CALLS", strconv.Itoa(runs.DefaultInvoiceCalls), "tool calls one invoice may have across all runs, counted in its case; beyond it the invoice goes to a person",
		intSetting(1, math.MaxInt, "must be a whole number of at least 1", func(c *config, n int) { c.runLimits.InvoiceCalls = n })},
	{"invoice-runs", "ERPGATE_INVOICE_RUNS", strconv.Itoa(runs.DefaultInvoiceRuns), "runs that may take one invoice up in turn (a resumption is a run taking it from another), counted in its case",
		intSetting(1, math.MaxInt, "must be a whole number of at least 1", func(c *config, n int) { c.runLimits.InvoiceRuns = n })},
	{"run-ttl", "ERPGATE_RUN_TTL", "24h", "how long a run is kept after its last call",
		durationSetting(time.Minute, "must be a duration of at least 1m", func(c *config, d time.Duration) { c.runLimits.TTL = d })},
	{"run-strict", "ERPGATE_RUN_STRICT", "false", "refuse tool calls that carry no run id (X-Run-Id or run_id)",
		boolSetting(func(c *config, on bool) { c.runLimits.Strict = on })},
	{"max-runs", "ERPGATE_MAX_RUNS", strconv.Itoa(runs.DefaultMaxRuns), "runs kept in memory without -redis-url; beyond it the run with the oldest last call is forgotten",
		intSetting(1, math.MaxInt, "must be a whole number of at least 1", func(c *config, n int) { c.maxRuns = n })},
	{"run-read-ttl", "ERPGATE_RUN_READ_TTL", api.DefaultRunReadTTL.String(), "how long the invoice a run's request read serves the same run's three-way match and approval request instead of another ERP read (0: every request reads the ERP; a posting always does)",
		durationSetting(0, "must be a duration such as 30s, or 0", func(c *config, d time.Duration) { c.runReadTTL = d })},
	{"run-fail-open", "ERPGATE_RUN_FAIL_OPEN", "false", "let calls through without limits when Redis cannot be reached (default: refuse them)",
		boolSetting(func(c *config, on bool) { c.runLimits.FailOpen = on })},
	{"recheck-every", "ERPGATE_RECHECK_EVERY", "1h", "how often a held invoice's goods receipt is checked again while it is missing",
		durationSetting(time.Second, atLeastASecond, func(c *config, d time.Duration) { c.recheckEvery = d })},
	{"recheck-interval", "ERPGATE_RECHECK_INTERVAL", "30s", "how often the gateway looks for holds due for their re-check",
		durationSetting(time.Second, atLeastASecond, func(c *config, d time.Duration) { c.recheckInterval = d })},
	{"handover-webhook", "ERPGATE_HANDOVER_WEBHOOK", "", "URL told of every stored handover (JSON POST through the outbox, retried); empty for none",
		httpURLSetting(func(c *config, v string) { c.handoverWebhook = v })},
	{"hold-webhook", "ERPGATE_HOLD_WEBHOOK", "", "URL of the agent's platform, told of every hold released and every approval decided (JSON POST through the outbox, retried), so that the run waiting on the invoice goes on; empty for none",
		httpURLSetting(func(c *config, v string) { c.holdWebhook = v })},
	{"redis-url", "ERPGATE_REDIS_URL", "", "Redis for what replicas share (run state, the per-client rate limit and failed-authentication counts, the ERP quota), e.g. redis://redis:6379/0; empty keeps it in memory",
		parseRedisURL},
	{"api-keys", "ERPGATE_API_KEYS", "", "clients as name:sha256hex:scope+scope (scopes read, write, post, approve, review, audit), comma separated; empty: a call without a key is the agent anonymous (read, write, post), and on the simulated ERP demonstration people get keys printed at start",
		parseAPIKeys},
	{"oauth-issuer", "ERPGATE_OAUTH_ISSUER", "", "issuer URL of the OAuth authorization server whose JWT access tokens the gateway takes beside API keys; empty: API keys only",
		httpURLSetting(func(c *config, v string) { c.oauth.issuer = v })},
	{"oauth-jwks-url", "ERPGATE_OAUTH_JWKS_URL", "", "JWKS URL of -oauth-issuer's signing keys (default: found by OpenID Connect or RFC 8414 discovery)",
		httpURLSetting(func(c *config, v string) { c.oauth.jwksURL = v })},
	{"oauth-audience", "ERPGATE_OAUTH_AUDIENCE", "", "audience an access token's aud must hold (default: -public-url)",
		textSetting(func(c *config, v string) { c.oauth.audience = v })},
	{"oauth-scope-claim", "ERPGATE_OAUTH_SCOPE_CLAIM", "scope", "claim of an access token holding its scopes, space separated or an array; scp is read too",
		textSetting(func(c *config, v string) { c.oauth.scopeClaim = v })},
	{"oauth-token-types", "ERPGATE_OAUTH_TOKEN_TYPES", "at+jwt", "JWT typ values an access token may have, comma separated (at+jwt, RFC 9068: never an ID token); * takes any",
		textSetting(func(c *config, v string) {
			c.oauth.tokenTypes = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
		})},
	{"open", "ERPGATE_OPEN", "false", "serve every caller without credentials although -erp-url names an ERP and -addr is not loopback only (without it the gateway refuses to start so); it warns at start and /readyz says \"auth\":\"open\"",
		boolSetting(func(c *config, on bool) { c.open = on })},
	{"console-secret", "ERPGATE_CONSOLE_SECRET", "", "at least 32 characters that sign the web console's sessions and CSRF tokens; replicas need the same (default: random at start, sessions end with the process; prefer the environment variable)",
		optional(func(v string, c *config) error {
			if len(v) < console.MinSecretBytes {
				return fmt.Errorf("must be at least %d characters", console.MinSecretBytes)
			}
			c.consoleSecret = []byte(v)
			return nil
		})},
	{"post-scope", "ERPGATE_POST_SCOPE", "false", "post_invoice needs the post scope instead of write",
		boolSetting(func(c *config, on bool) { c.postScope = on })},
	{"protect-ops", "ERPGATE_PROTECT_OPS", "false", "/healthz, /readyz and /metrics need a valid API key too",
		boolSetting(func(c *config, on bool) { c.protectOps = on })},
	{"rate-limit", "ERPGATE_RATE_LIMIT", "600", "tool calls a client may make per -rate-window (0 turns the limit off)",
		intSetting(0, math.MaxInt, "must be a whole number, 0 for no limit", func(c *config, n int) { c.rateLimit = n })},
	{"rate-window", "ERPGATE_RATE_WINDOW", "1m", "window of -rate-limit",
		durationSetting(time.Second, atLeastASecond, func(c *config, d time.Duration) { c.rateWindow = d })},
	{"auth-fail-limit", "ERPGATE_AUTH_FAIL_LIMIT", "20", "failed authentications one source address may make per -rate-window before its calls without valid credentials are RATE_LIMITED (0 turns the limit off)",
		intSetting(0, math.MaxInt, "must be a whole number, 0 for no limit", func(c *config, n int) { c.authFailLimit = n })},
	{"trusted-proxies", "ERPGATE_TRUSTED_PROXIES", "", "networks of the reverse proxies whose X-Forwarded-For names the source address, and whose X-Forwarded-Proto: https makes the web console's cookies Secure, comma separated CIDRs such as 10.0.0.0/8; empty: the peer's address",
		parseTrustedProxies},
	{"log-level", "ERPGATE_LOG_LEVEL", "info", "debug, info, warn or error",
		enumSetting(func(c *config, v string) { c.logLevel = v }, "debug", "info", "warn", "error")},
	{"log-format", "ERPGATE_LOG_FORMAT", "json", "json or text",
		enumSetting(func(c *config, v string) { c.logFormat = v }, "json", "text")},
	{"debug-addr", "ERPGATE_DEBUG_ADDR", "", "loopback address serving CPU, heap and goroutine profiles (net/http/pprof) apart from the API, e.g. 127.0.0.1:6060; empty for none",
		parseDebugAddr},
}

// parseConfig reads flags over environment over configuration file over
// defaults, parses every setting, then runs the checks between settings,
// naming each setting that is wrong. A mistake of syntax (an unknown flag,
// a flag without its value) comes back as one *usageError; -h prints the
// usage to stderr and returns flag.ErrHelp.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	file, err := loadConfigFile(configPath(args, getenv))
	if err != nil {
		return config{}, err
	}
	fs, values := gatewayFlags(file, getenv, stderr)
	if err := parseFlags(fs, args, "erpgate -h"); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, &usageError{Err: fmt.Errorf("unexpected argument %q", fs.Arg(0)), Hint: "run erpgate -h for usage"}
	}
	var c config
	var errs []error
	for _, s := range settings {
		errs = append(errs, s.apply(*values[s.name], &c)...)
	}
	for _, k := range checks {
		errs = append(errs, k.run(&c)...)
	}
	return c, errors.Join(errs...)
}

// gatewayFlags defines a flag for every setting, its default taken from
// the environment, else from the configuration file, else the setting's
// own. fs.Usage prints the synopsis and the flags to usageOut.
func gatewayFlags(file map[string]string, getenv func(string) string, usageOut io.Writer) (*flag.FlagSet, map[string]*string) {
	fs := flag.NewFlagSet("erpgate", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() {
		fmt.Fprint(usageOut, synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			if env := envOf(f.Name); env != "" {
				fmt.Fprintf(usageOut, "  -%s (env %s, default %q)\n    \t%s\n", f.Name, env, f.DefValue, f.Usage)
			}
		})
	}
	values := map[string]*string{}
	for _, s := range settings {
		def := s.def
		if v, ok := file[s.env]; ok {
			def = v
		}
		if v := getenv(s.env); v != "" {
			def = v
		}
		values[s.name] = fs.String(s.name, def, s.usage)
	}
	return fs, values
}

func envOf(name string) string {
	for _, s := range settings {
		if s.name == name {
			return s.env
		}
	}
	return ""
}

// configPath finds the configuration file: -config on the command line,
// else ERPGATE_CONFIG.
func configPath(args []string, getenv func(string) string) string {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return getenv("ERPGATE_CONFIG")
}

// loadConfigFile reads a file of ERPGATE_*=value lines; blank lines and
// lines starting with # are skipped. A key that is no setting is an error,
// so a typo cannot go unnoticed.
func loadConfigFile(path string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-config (ERPGATE_CONFIG): %w", err)
	}
	known := map[string]bool{}
	for _, s := range settings {
		known[s.env] = true
	}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		switch {
		case !ok:
			return nil, fmt.Errorf("%s:%d: want KEY=value", path, n+1)
		case !known[key] || key == "ERPGATE_CONFIG":
			return nil, fmt.Errorf("%s:%d: %s is not a setting", path, n+1, key)
		}
		out[key] = strings.Trim(strings.TrimSpace(value), `"`)
	}
	return out, nil
}
