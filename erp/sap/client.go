// Package sap is the production erp.Client for SAP S/4HANA. It speaks SAP's
// published OData v2 APIs API_SUPPLIERINVOICE_PROCESS_SRV,
// API_PURCHASEORDER_PROCESS_SRV, API_MATERIAL_DOCUMENT_SRV and
// API_BUSINESS_PARTNER, and nothing else.
//
// Every HTTP attempt runs through a retry.Runner, told by Classify which
// failures are worth another attempt. Failures come back as
// *erp.NotFoundError or *erp.UpstreamError, the latter usually inside the
// runner's *retry.Error (attempts made, write unconfirmed, breaker open);
// the ERP's own wording only ever lands in UpstreamError.Text and
// UpstreamError.Err.
package sap

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// Options configures a Client. The zero value is usable: every zero field
// takes the default documented beside it.
type Options struct {
	// HTTPClient sends the requests: its Transport (http.DefaultTransport
	// when nil), its Jar and its Timeout. Redirects are never followed,
	// whatever its CheckRedirect says: from an OData API a redirect is a
	// login page or a wrong path, never data. Default: a client with a
	// cookie jar (the CSRF token is bound to the session cookie) and dial
	// and TLS handshake timeouts. A client without a jar works too: the
	// session cookies of the token fetch are then sent by hand.
	HTTPClient *http.Client
	// Runner runs every HTTP attempt. Default: retry.New(retry.Policy{}, nil).
	Runner *retry.Runner
	// User and Password are sent as basic authentication when User is not
	// empty. Default: no authentication header.
	User     string
	Password string
	// TLS is the TLS configuration of the default HTTP client: a client
	// certificate for X.509 authentication (see ClientTLS), the CAs the
	// ERP's certificate is checked against. Default: the system's roots, no
	// client certificate. It cannot be combined with HTTPClient, whose
	// transport holds its own.
	TLS *tls.Config
	// OAuth2, when set, authenticates every request with a bearer token of
	// the OAuth 2.0 client credentials flow instead of basic
	// authentication. Tokens are fetched through the HTTP client's
	// transport, cached, and fetched again shortly before they expire.
	OAuth2 *clientcredentials.Config
	// SAML, when set, authenticates every request with a bearer token of
	// the OAuth 2.0 SAML 2.0 bearer assertion grant, for the identity the
	// request's context names (erp.WithPrincipal), else SAML.User. Each
	// identity's token is cached, for up to 1,000 identities, and fetched
	// again shortly before it expires.
	SAML *SAMLBearer
	// TokenExchange, when set, authenticates every request with a bearer
	// token of the OAuth 2.0 token exchange (RFC 8693): the caller's own
	// access token (erp.WithSubjectToken) exchanged at the identity
	// provider for a token of the ERP narrowed to the call's operation, or
	// for a call of the gateway's own, a client credentials token of the
	// gateway's client; a caller without a token is refused (see
	// TokenExchange). Exchanged tokens are cached per caller's token,
	// scope and audience, for up to 4,096, until shortly before they or
	// the caller's token expire.
	TokenExchange *TokenExchange
	// Client is sent as the sap-client query parameter when not empty.
	// Default: none, so the system's default client answers.
	Client string
	// MaxPages bounds how many pages of one list are read by following the
	// ERP's __next links; a longer list is an ERP fault, never a silent
	// cut. Default 20.
	MaxPages int
	// Logger receives one debug record per attempt. Default: discard.
	Logger *slog.Logger
	// Version is the gateway's release, e.g. "v1.2.3": every request to
	// the ERP, the OAuth 2.0 token requests included, names the gateway
	// as User-Agent: erpgate/<Version>. It must be an HTTP token. Default:
	// the version of the module github.com/erpgate/erpgate in the binary's
	// build information, or "devel".
	Version string
}

// DefaultMaxPages is the bound on the pages of one list when Options
// leaves MaxPages zero.
const DefaultMaxPages = 20

// Client is an erp.Client that talks to SAP S/4HANA over OData v2. It is
// safe for concurrent use.
type Client struct {
	base     string // scheme://host[:port][/prefix], without a trailing slash
	basePath string // base's /prefix, escaped; "" for none
	http     *http.Client
	runner   *retry.Runner
	// basicAuth is the Authorization header of Options.User and
	// Options.Password, made once; nil without a user.
	basicAuth []string
	// readHeader is the whole header of a read that sends nothing of its
	// own, shared by those reads and never changed; nil with OAuth 2.0,
	// whose token is a request's own.
	readHeader http.Header
	userAgent  []string // the User-Agent header's one value, shared
	sapClient  string
	tokens     oauth2.TokenSource // nil without OAuth 2.0 client credentials
	saml       *samlTokens        // nil without the SAML bearer grant
	exchange   *exchangeTokens    // nil without the token exchange
	// csrfPerIdentity keeps a CSRF token (and its session cookies) per
	// service and identity (erp.PrincipalFrom; with the token exchange,
	// the caller's token), as the SAML bearer grant and the token
	// exchange sign calls in as the caller.
	csrfPerIdentity bool
	maxPages        int
	log             *slog.Logger
	csrf            csrfCache
	meta            metadataCache
}

var _ erp.Client = (*Client)(nil)

// New returns a Client for the system at baseURL, e.g.
// "https://s4.example.com:44300"; the OData service paths
// (/sap/opu/odata/sap/...) are appended to it.
func New(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("sap: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("sap: base URL must be http or https")
	}
	if u.Host == "" {
		return nil, errors.New("sap: base URL has no host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("sap: base URL must not have a query or fragment")
	}
	if opts.HTTPClient != nil && opts.TLS != nil {
		return nil, errors.New("sap: Options.TLS needs the default HTTP client: set the TLS configuration on Options.HTTPClient's transport instead")
	}
	if opts.OAuth2 != nil && opts.User != "" {
		return nil, errors.New("sap: Options.OAuth2 and Options.User exclude each other")
	}
	if opts.SAML != nil && (opts.OAuth2 != nil || opts.User != "") {
		return nil, errors.New("sap: Options.SAML excludes Options.OAuth2 and Options.User")
	}
	if opts.TokenExchange != nil && (opts.SAML != nil || opts.OAuth2 != nil || opts.User != "") {
		return nil, errors.New("sap: Options.TokenExchange excludes Options.SAML, Options.OAuth2 and Options.User")
	}
	ua, err := userAgent(opts.Version)
	if err != nil {
		return nil, err
	}
	c := &Client{
		base:      strings.TrimRight(u.String(), "/"),
		basePath:  strings.TrimRight(u.EscapedPath(), "/"),
		http:      opts.HTTPClient,
		runner:    opts.Runner,
		sapClient: opts.Client,
		maxPages:  opts.MaxPages,
		log:       opts.Logger,
		userAgent: ua,
	}
	if c.http == nil {
		c.http = defaultHTTPClient(opts.TLS)
	} else {
		hc := *c.http // a copy: the caller's client is left as it is
		hc.CheckRedirect = noRedirect
		c.http = &hc
	}
	if c.runner == nil {
		c.runner = retry.New(retry.Policy{}, nil)
	}
	if c.maxPages <= 0 {
		c.maxPages = DefaultMaxPages
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if opts.OAuth2 != nil {
		c.tokens = c.tokenSource(opts.OAuth2)
	}
	if opts.SAML != nil || opts.TokenExchange != nil {
		// Each identity (the SAML bearer grant's user, or the caller whose
		// token is exchanged) has a session of its own at SAP: a shared
		// cookie jar would send one user's session cookie with another's
		// token, and SAP may take the call for the session's user. The
		// session cookies travel with each identity's CSRF token instead.
		hc := *c.http
		hc.Jar = nil
		c.http = &hc
		c.csrfPerIdentity = true
	}
	if opts.SAML != nil {
		if c.saml, err = c.samlTokens(opts.SAML); err != nil {
			return nil, err
		}
	}
	if opts.TokenExchange != nil {
		if c.exchange, err = c.exchangeTokens(opts.TokenExchange); err != nil {
			return nil, err
		}
	}
	if opts.User != "" {
		// As http.Request.SetBasicAuth writes it.
		c.basicAuth = []string{"Basic " + base64.StdEncoding.EncodeToString([]byte(opts.User+":"+opts.Password))}
	}
	if c.tokens == nil && c.saml == nil && c.exchange == nil {
		c.readHeader = http.Header{"Accept": mediaJSON, "Accept-Encoding": encodingGzip, "User-Agent": c.userAgent}
		if c.basicAuth != nil {
			c.readHeader["Authorization"] = c.basicAuth
		}
	}
	return c, nil
}

func defaultHTTPClient(tlsConfig *tls.Config) *http.Client {
	jar, _ := cookiejar.New(nil) // never fails without options
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 5 * time.Second
	// No ResponseHeaderTimeout: every request has a deadline already, an
	// attempt's from the runner (retry.Policy.AttemptTimeout, never
	// unset), a token's from its client's Timeout and the $metadata
	// read's from its context, and the transport's own bound would cost
	// a timer on every request.
	// Every call to the ERP goes to one host, so the idle pool is sized
	// for the gateway's peak of concurrent calls: a connection given back
	// to a full pool is closed, and the next burst dials it again.
	tr.MaxIdleConns = 128
	tr.MaxIdleConnsPerHost = 128
	tr.IdleConnTimeout = 90 * time.Second
	if tlsConfig != nil {
		tr.TLSClientConfig = tlsConfig.Clone()
		if tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
			tr.TLSClientConfig.MinVersion = tls.VersionTLS12
		}
	}
	return &http.Client{
		Jar:           jar,
		Transport:     tr,
		CheckRedirect: noRedirect,
	}
}

// noRedirect stops at a redirect: from an OData API or a token endpoint it
// is a login page or a misconfigured path, never data; and following it
// would turn a POST into a GET.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
