package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/erpgate/erpgate/api"
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
	rateLimit        int
	rateWindow       time.Duration
	publicURL        string
	erpURL           string
	erpUser          string
	erpPassword      string
	erpAuth          string      // sap.AuthNone, AuthBasic, AuthMTLS or AuthOAuth2
	erpTLS           *tls.Config // client certificate and CAs for the ERP; nil for the defaults
	erpOAuth2        *clientcredentials.Config
	sapClient        string
	erpTimeout       time.Duration
	retry            retry.Policy
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
	dataDir          string
	databaseURL      string
	routing          erp.Routing
	maxKeys          int
	recheckEvery     time.Duration
	recheckInterval  time.Duration
	credentials      []api.Credential
	logLevel         string
	logFormat        string
	debugAddr        string

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

// setting describes one flag and its environment variable.
type setting struct {
	name, env, def, usage string
}

var settings = []setting{
	{"config", "ERPGATE_CONFIG", "", "file of ERPGATE_*=value lines applied under the environment and the flags"},
	{"addr", "ERPGATE_ADDR", ":8080", "listen address; port 0 picks a free port and prints it"},
	{"tls-cert", "ERPGATE_TLS_CERT", "", "PEM certificate file; with -tls-key the gateway serves HTTPS only"},
	{"tls-key", "ERPGATE_TLS_KEY", "", "PEM private key file for -tls-cert"},
	{"shutdown-timeout", "ERPGATE_SHUTDOWN_TIMEOUT", "20s", "how long a shutdown waits for calls in flight"},
	{"public-url", "ERPGATE_PUBLIC_URL", "", "absolute URL clients reach the gateway at, written into the served contract (default: http://localhost:<port>)"},
	{"erp-url", "ERPGATE_ERP_URL", "", "base URL of the S/4HANA system (OData services below /sap/opu/odata/sap/); empty starts the simulated ERP in process"},
	{"erp-user", "ERPGATE_ERP_USER", "", "ERP basic-auth user"},
	{"erp-password", "ERPGATE_ERP_PASSWORD", "", "ERP basic-auth password (prefer the environment variable)"},
	{"erp-auth", "ERPGATE_ERP_AUTH", "", "how the gateway authenticates to the ERP: basic, mtls, oauth2 or none (default: basic with -erp-user, else none)"},
	{"erp-client-cert", "ERPGATE_ERP_CLIENT_CERT", "", "PEM client certificate file for -erp-auth mtls (X.509 authentication)"},
	{"erp-client-key", "ERPGATE_ERP_CLIENT_KEY", "", "PEM private key file of -erp-client-cert"},
	{"erp-ca", "ERPGATE_ERP_CA", "", "PEM bundle of the CAs the ERP's certificate is checked against, for a private CA; empty: the system's roots"},
	{"erp-token-url", "ERPGATE_ERP_TOKEN_URL", "", "OAuth 2.0 token endpoint for -erp-auth oauth2 (client credentials grant)"},
	{"erp-client-id", "ERPGATE_ERP_CLIENT_ID", "", "OAuth 2.0 client id for -erp-auth oauth2"},
	{"erp-client-secret", "ERPGATE_ERP_CLIENT_SECRET", "", "OAuth 2.0 client secret for -erp-auth oauth2 (prefer the environment variable)"},
	{"erp-scopes", "ERPGATE_ERP_SCOPES", "", "OAuth 2.0 scopes to ask for, separated by commas or spaces; empty: the client's default scopes"},
	{"sap-client", "ERPGATE_SAP_CLIENT", "", "SAP client (three digits, e.g. 100) sent with every ERP call as the sap-client parameter; empty: the system's default client"},
	{"erp-timeout", "ERPGATE_ERP_TIMEOUT", "3s", "timeout of one ERP call attempt"},
	{"erp-attempts", "ERPGATE_ERP_ATTEMPTS", "3", "most attempts of one ERP call (1 turns retries off)"},
	{"erp-call-timeout", "ERPGATE_ERP_CALL_TIMEOUT", "10s", "deadline of one ERP call, retries and waits included"},
	{"erp-backoff", "ERPGATE_ERP_BACKOFF", "200ms", "first backoff before a retry (exponential, full jitter)"},
	{"erp-backoff-max", "ERPGATE_ERP_BACKOFF_MAX", "2s", "longest backoff before a retry"},
	{"breaker-open-for", "ERPGATE_BREAKER_OPEN_FOR", "5s", "how long an ERP service's circuit breaker stays open before a probe"},
	{"retry-budget", "ERPGATE_RETRY_BUDGET", "0.1", "retries allowed per ERP call in the long run, per service (token bucket; 0 turns the budget off)"},
	{"sim-addr", "ERPGATE_SIM_ADDR", "127.0.0.1:8090", "listen address of the in-process simulated ERP (only without -erp-url)"},
	{"sim-faults", "ERPGATE_SIM_FAULTS", "", "simulated ERP: faults to inject, e.g. purchase_order:status=503,p=0.3 (grammar in the README)"},
	{"sim-seed", "ERPGATE_SIM_SEED", "1", "simulated ERP: seed of the fault probabilities"},
	{"auto-approve-limit", "ERPGATE_AUTO_APPROVE_LIMIT", "10000", "approval routing without -approval-rules: amounts up to this are approved at once"},
	{"approval-rules", "ERPGATE_APPROVAL_RULES", "", "JSON file of approval routing rules per company code (auto-approve limit, amount bands to approver groups); empty: the default bands"},
	{"approval-webhook", "ERPGATE_APPROVAL_WEBHOOK", "", "URL told of every approval left pending for a person (JSON POST through the outbox, retried); empty for none"},
	{"data-dir", "ERPGATE_DATA_DIR", "erpgate-data", "directory of the embedded SQLite database of the gateway's records (one replica only); unused with -database-url"},
	{"database-url", "ERPGATE_DATABASE_URL", "", "PostgreSQL for the gateway's records shared by replicas, e.g. postgres://erpgate@db:5432/erpgate (prefer the environment variable); empty: SQLite in -data-dir"},
	{"max-keys-per-client", "ERPGATE_MAX_KEYS_PER_CLIENT", "10000", "idempotency keys one client may hold at once (0 for no cap)"},
	{"tolerance-percent", "ERPGATE_TOLERANCE_PERCENT", "2", "three-way match tolerance in percent"},
	{"tolerance-absolute", "ERPGATE_TOLERANCE_ABSOLUTE", "50", "three-way match tolerance as an amount in the document currency"},
	{"max-body-bytes", "ERPGATE_MAX_BODY_BYTES", "65536", "largest request body accepted"},
	{"run-limits", "ERPGATE_RUN_LIMITS", "true", "enforce the per-run loop limits on calls that carry X-Run-Id"},
	{"run-budget", "ERPGATE_RUN_BUDGET", "20", "tool calls a run may make per invoice"},
	{"run-ttl", "ERPGATE_RUN_TTL", "24h", "how long a run is kept after its last call"},
	{"run-strict", "ERPGATE_RUN_STRICT", "false", "refuse tool calls that carry no run id (X-Run-Id or run_id)"},
	{"run-fail-open", "ERPGATE_RUN_FAIL_OPEN", "false", "let calls through without limits when Redis cannot be reached (default: refuse them)"},
	{"recheck-every", "ERPGATE_RECHECK_EVERY", "1h", "how often a held invoice's goods receipt is checked again while it is missing"},
	{"recheck-interval", "ERPGATE_RECHECK_INTERVAL", "30s", "how often the gateway looks for holds due for their re-check"},
	{"handover-webhook", "ERPGATE_HANDOVER_WEBHOOK", "", "URL told of every stored handover (JSON POST through the outbox, retried); empty for none"},
	{"redis-url", "ERPGATE_REDIS_URL", "", "Redis for run state shared by replicas, e.g. redis://redis:6379/0; empty keeps it in memory"},
	{"api-keys", "ERPGATE_API_KEYS", "", "clients as name:sha256hex:scope+scope (scopes read, write, post), comma separated; empty means no authentication"},
	{"post-scope", "ERPGATE_POST_SCOPE", "false", "post_invoice needs the post scope instead of write"},
	{"protect-ops", "ERPGATE_PROTECT_OPS", "false", "/healthz, /readyz and /metrics need a valid API key too"},
	{"rate-limit", "ERPGATE_RATE_LIMIT", "600", "tool calls a client may make per -rate-window (0 turns the limit off)"},
	{"rate-window", "ERPGATE_RATE_WINDOW", "1m", "window of -rate-limit"},
	{"log-level", "ERPGATE_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"log-format", "ERPGATE_LOG_FORMAT", "json", "json or text"},
	{"debug-addr", "ERPGATE_DEBUG_ADDR", "", "loopback address serving CPU, heap and goroutine profiles (net/http/pprof) apart from the API, e.g. 127.0.0.1:6060; empty for none"},
}

// parseConfig reads flags over environment over defaults, and validates
// every setting, naming each one that is wrong. A mistake of syntax (an
// unknown flag, a flag without its value) comes back as one *usageError;
// -h prints the usage to stderr and returns flag.ErrHelp.
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
	v := func(name string) string { return strings.TrimSpace(*values[name]) }

	var c config
	var errs []error
	bad := func(name, why string) { errs = append(errs, fmt.Errorf("-%s (%s): %s", name, envOf(name), why)) }

	c.addr = v("addr")
	if !validAddr(c.addr) {
		bad("addr", "must be host:port with a port from 0 to 65535, such as :8080 or 127.0.0.1:0")
	}
	c.tlsCert, c.tlsKey = v("tls-cert"), v("tls-key")
	if (c.tlsCert == "") != (c.tlsKey == "") {
		bad("tls-cert", "needs -tls-key, and -tls-key needs -tls-cert")
	}
	for _, f := range []string{"tls-cert", "tls-key"} {
		if p := v(f); p != "" {
			if _, err := os.Stat(p); err != nil {
				bad(f, "cannot read the file")
			}
		}
	}
	if c.shutdownTimeout, err = time.ParseDuration(v("shutdown-timeout")); err != nil || c.shutdownTimeout < 0 {
		bad("shutdown-timeout", "must be a duration such as 20s")
	}
	if c.postScope, err = strconv.ParseBool(v("post-scope")); err != nil {
		bad("post-scope", "must be true or false")
	}
	if c.protectOps, err = strconv.ParseBool(v("protect-ops")); err != nil {
		bad("protect-ops", "must be true or false")
	}
	if c.rateLimit, err = strconv.Atoi(v("rate-limit")); err != nil || c.rateLimit < 0 {
		bad("rate-limit", "must be a whole number, 0 for no limit")
	}
	if c.rateWindow, err = time.ParseDuration(v("rate-window")); err != nil || c.rateWindow < time.Second {
		bad("rate-window", "must be a duration of at least 1s")
	}
	c.publicURL = v("public-url")
	if c.publicURL != "" {
		if u, err := url.Parse(c.publicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("public-url", "must be an absolute http(s) URL")
		}
	}
	c.erpURL = strings.TrimRight(v("erp-url"), "/")
	if c.erpURL != "" {
		if u, err := url.Parse(c.erpURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("erp-url", "must be an absolute http(s) URL")
		}
	}
	c.erpUser, c.erpPassword = v("erp-user"), *values["erp-password"]
	errs = append(errs, c.parseERPAuth(v, *values["erp-client-secret"])...)
	if c.erpTimeout, err = time.ParseDuration(v("erp-timeout")); err != nil || c.erpTimeout <= 0 {
		bad("erp-timeout", "must be a positive duration such as 3s")
	}
	c.retry.AttemptTimeout = c.erpTimeout
	if c.retry.MaxAttempts, err = strconv.Atoi(v("erp-attempts")); err != nil || c.retry.MaxAttempts < 1 || c.retry.MaxAttempts > 10 {
		bad("erp-attempts", "must be a whole number from 1 to 10")
	}
	durations := []struct {
		name string
		dst  *time.Duration
	}{
		{"erp-call-timeout", &c.retry.CallTimeout}, {"erp-backoff", &c.retry.InitialInterval},
		{"erp-backoff-max", &c.retry.MaxInterval}, {"breaker-open-for", &c.retry.Breaker.OpenFor},
	}
	for _, d := range durations {
		if *d.dst, err = time.ParseDuration(v(d.name)); err != nil || *d.dst <= 0 {
			bad(d.name, "must be a positive duration such as 2s")
		}
	}
	if c.retry.CallTimeout < c.erpTimeout {
		bad("erp-call-timeout", "must not be shorter than -erp-timeout")
	}
	if ratio, err := strconv.ParseFloat(v("retry-budget"), 64); err != nil || ratio < 0 || ratio > 1 {
		bad("retry-budget", "must be a number from 0 to 1")
	} else if ratio == 0 {
		c.retry.Budget.Disabled = true
	} else {
		c.retry.Budget.Deposit = ratio
	}
	c.simAddr = v("sim-addr")
	if !validAddr(c.simAddr) {
		bad("sim-addr", "must be host:port with a port from 0 to 65535, such as 127.0.0.1:8090 or 127.0.0.1:0")
	}
	if c.simFaults, err = sim.ParseFaults(v("sim-faults")); err != nil {
		bad("sim-faults", err.Error())
	}
	if c.simSeed, err = strconv.ParseUint(v("sim-seed"), 10, 64); err != nil {
		bad("sim-seed", "must be a whole number")
	}
	if c.autoApproveLimit, err = decimal.NewFromString(v("auto-approve-limit")); err != nil || c.autoApproveLimit.IsNegative() {
		bad("auto-approve-limit", "must be a non-negative amount")
	}
	if c.tolerance.Percent, err = decimal.NewFromString(v("tolerance-percent")); err != nil || c.tolerance.Percent.IsNegative() {
		bad("tolerance-percent", "must be a non-negative number")
	}
	if c.tolerance.Absolute, err = decimal.NewFromString(v("tolerance-absolute")); err != nil || c.tolerance.Absolute.IsNegative() {
		bad("tolerance-absolute", "must be a non-negative amount")
	}
	if c.maxBodyBytes, err = strconv.ParseInt(v("max-body-bytes"), 10, 64); err != nil || c.maxBodyBytes < 1024 || c.maxBodyBytes > 16<<20 {
		bad("max-body-bytes", "must be a whole number from 1024 to 16777216")
	}
	if on, err := strconv.ParseBool(v("run-limits")); err != nil {
		bad("run-limits", "must be true or false")
	} else {
		c.runLimits.Disabled = !on
	}
	if c.runLimits.Budget, err = strconv.Atoi(v("run-budget")); err != nil || c.runLimits.Budget < 1 {
		bad("run-budget", "must be a whole number of at least 1")
	}
	if c.runLimits.TTL, err = time.ParseDuration(v("run-ttl")); err != nil || c.runLimits.TTL < time.Minute {
		bad("run-ttl", "must be a duration of at least 1m")
	}
	if c.runLimits.Strict, err = strconv.ParseBool(v("run-strict")); err != nil {
		bad("run-strict", "must be true or false")
	}
	if c.runLimits.FailOpen, err = strconv.ParseBool(v("run-fail-open")); err != nil {
		bad("run-fail-open", "must be true or false")
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"recheck-every", &c.recheckEvery}, {"recheck-interval", &c.recheckInterval}} {
		if *d.dst, err = time.ParseDuration(v(d.name)); err != nil || *d.dst < time.Second {
			bad(d.name, "must be a duration of at least 1s")
		}
	}
	c.handoverWebhook, c.approvalWebhook = v("handover-webhook"), v("approval-webhook")
	for name, hook := range map[string]string{"handover-webhook": c.handoverWebhook, "approval-webhook": c.approvalWebhook} {
		if hook != "" {
			if u, err := url.Parse(hook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(name, "must be an absolute http(s) URL")
			}
		}
	}
	c.dataDir, c.databaseURL = v("data-dir"), v("database-url")
	if c.databaseURL == "" && c.dataDir == "" {
		bad("data-dir", "must name a directory when -database-url is empty")
	}
	if c.databaseURL != "" {
		if u, err := url.Parse(c.databaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			bad("database-url", "must be a postgres:// URL")
		}
	}
	if c.maxKeys, err = strconv.Atoi(v("max-keys-per-client")); err != nil || c.maxKeys < 0 {
		bad("max-keys-per-client", "must be a whole number, 0 for no cap")
	}
	c.routing = erp.DefaultRouting
	c.routing.Default.AutoApproveLimit = c.autoApproveLimit
	if path := v("approval-rules"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			bad("approval-rules", "cannot read the file")
		} else if c.routing, err = erp.ParseRouting(data); err != nil {
			bad("approval-rules", err.Error())
		}
	} else if err := c.routing.Validate(); err != nil {
		bad("auto-approve-limit", "must be below the first band (50000)")
	}
	c.redisURL = v("redis-url")
	if c.redisURL != "" {
		if _, err := redis.ParseURL(c.redisURL); err != nil {
			bad("redis-url", "must be a redis:// or rediss:// URL")
		}
	}
	if keys := v("api-keys"); keys != "" {
		for _, k := range strings.Split(keys, ",") {
			cred, err := api.ParseCredential(k)
			if err != nil {
				bad("api-keys", err.Error())
				continue
			}
			c.credentials = append(c.credentials, cred)
		}
	}
	c.logLevel = v("log-level")
	switch c.logLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log-level", "must be debug, info, warn or error")
	}
	c.debugAddr = v("debug-addr")
	if c.debugAddr != "" && (!validAddr(c.debugAddr) || !isLoopback(c.debugAddr)) {
		bad("debug-addr", "must be a loopback address with a port from 0 to 65535, such as 127.0.0.1:6060")
	}
	c.logFormat = v("log-format")
	if c.logFormat != "json" && c.logFormat != "text" {
		bad("log-format", "must be json or text")
	}
	return c, errors.Join(errs...)
}

// sapClientPattern is an SAP client: three digits.
var sapClientPattern = regexp.MustCompile(`^[0-9]{3}$`)

// parseERPAuth reads the ERP authentication settings and -sap-client into c
// and returns what is wrong with them. c.erpURL and c.erpUser must be set.
// secret is -erp-client-secret as given, not trimmed.
func (c *config) parseERPAuth(v func(string) string, secret string) []error {
	var errs []error
	bad := func(name, why string) { errs = append(errs, fmt.Errorf("-%s (%s): %s", name, envOf(name), why)) }
	c.sapClient = v("sap-client")
	if c.sapClient != "" && !sapClientPattern.MatchString(c.sapClient) {
		bad("sap-client", "must be three digits, such as 100")
	}
	c.erpAuth = v("erp-auth")
	if c.erpAuth == "" {
		c.erpAuth = sap.AuthNone
		if c.erpUser != "" {
			c.erpAuth = sap.AuthBasic
		}
	}
	given := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if v(n) != "" || (n == "erp-client-secret" && secret != "") {
				out = append(out, n)
			}
		}
		return out
	}
	// settings of another way than the chosen one are refused, so that a
	// typo in -erp-auth cannot silently send no credentials.
	refuse := func(why string, names ...string) {
		for _, n := range given(names...) {
			bad(n, why)
		}
	}
	mtls := []string{"erp-client-cert", "erp-client-key"}
	oauth := []string{"erp-token-url", "erp-client-id", "erp-client-secret", "erp-scopes"}
	switch c.erpAuth {
	case sap.AuthNone:
		refuse("needs -erp-auth basic", "erp-user")
		refuse("needs -erp-auth mtls", mtls...)
		refuse("needs -erp-auth oauth2", oauth...)
	case sap.AuthBasic:
		if c.erpUser == "" {
			bad("erp-user", "must be set for -erp-auth basic")
		}
		refuse("needs -erp-auth mtls", mtls...)
		refuse("needs -erp-auth oauth2", oauth...)
	case sap.AuthMTLS:
		refuse("is for -erp-auth basic, not mtls", "erp-user")
		refuse("needs -erp-auth oauth2", oauth...)
		for _, n := range mtls {
			if v(n) == "" {
				bad(n, "must be set for -erp-auth mtls")
			}
		}
		if !strings.HasPrefix(c.erpURL, "https://") {
			bad("erp-auth", "mtls needs an https -erp-url")
		}
	case sap.AuthOAuth2:
		refuse("is for -erp-auth basic, not oauth2", "erp-user")
		refuse("needs -erp-auth mtls", mtls...)
		for _, n := range []string{"erp-token-url", "erp-client-id", "erp-client-secret"} {
			if len(given(n)) == 0 {
				bad(n, "must be set for -erp-auth oauth2")
			}
		}
		tokenURL := v("erp-token-url")
		if u, err := url.Parse(tokenURL); tokenURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			bad("erp-token-url", "must be an absolute http(s) URL")
		}
		c.erpOAuth2 = &clientcredentials.Config{ClientID: v("erp-client-id"), ClientSecret: secret, TokenURL: tokenURL,
			Scopes: strings.FieldsFunc(v("erp-scopes"), func(r rune) bool { return r == ',' || r == ' ' })}
	default:
		bad("erp-auth", "must be basic, mtls, oauth2 or none")
	}
	cert, key, ca := v("erp-client-cert"), v("erp-client-key"), v("erp-ca")
	if c.erpAuth != sap.AuthMTLS || cert == "" || key == "" {
		cert, key = "", ""
	}
	ok := true
	if cert != "" {
		if _, err := sap.ClientTLS(cert, key, ""); err != nil {
			ok = false
			bad("erp-client-cert", "with -erp-client-key: "+strings.TrimPrefix(err.Error(), "sap: "))
		}
	}
	if ca != "" {
		if _, err := sap.ClientTLS("", "", ca); err != nil {
			ok = false
			bad("erp-ca", strings.TrimPrefix(err.Error(), "sap: "))
		}
	}
	if ok && (cert != "" || ca != "") {
		c.erpTLS, _ = sap.ClientTLS(cert, key, ca) // both parts read above
	}
	return errs
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

// validAddr reports whether addr is host:port with a numeric port from 0
// to 65535; the host may be empty, for every interface.
func validAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
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
