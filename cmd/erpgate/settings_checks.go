package main

import (
	"fmt"
	"math"
	"net"
	"strings"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap"
)

// A check is a rule between settings, run in order once every setting is
// parsed. It may complete c from several settings, and returns what is
// wrong, each message naming a setting.
type check struct {
	name string
	run  func(c *config) []error
}

// checks are the rules between settings, named for the tests; the ERP
// credentials are settled before their TLS configuration is read.
var checks = []check{
	{"tls-pair", checkTLSPair},
	{"erp-call-timeout", checkCallTimeout},
	{"erp-rate", checkERPRate},
	{"erp-auth", checkERPAuth},
	{"erp-tls", checkERPTLS},
	{"records-store", checkRecordsStore},
	{"routing", checkRouting},
	{"oauth", checkOAuth},
	{"client-auth", checkClientAuth},
}

// checkClientAuth: the gateway is closed by default. In front of a real
// ERP (-erp-url) and reachable beyond loopback it takes its callers'
// credentials (-api-keys or -oauth-issuer) unless -open says it serves
// every caller without them on purpose; -open beside credentials is a
// contradiction. The embedded simulator and a loopback -addr need neither.
func checkClientAuth(c *config) []error {
	credentials := len(c.credentials) > 0 || c.oauth.issuer != ""
	switch {
	case c.open && credentials:
		return []error{settingError("open", "serves every caller without credentials, but -api-keys or -oauth-issuer is set: drop one or the other")}
	case credentials || c.open || c.erpURL == "" || isLoopback(c.addr):
		return nil
	}
	loopback := "127.0.0.1:8080"
	if _, port, err := net.SplitHostPort(c.addr); err == nil {
		loopback = net.JoinHostPort("127.0.0.1", port)
	}
	return []error{settingError("api-keys", fmt.Sprintf("must be set, or -oauth-issuer (ERPGATE_OAUTH_ISSUER), "+
		"when the gateway fronts a real ERP (-erp-url) and listens beyond loopback (-addr %s); without either, anyone who reaches it could post invoices. "+
		"Set -api-keys to the clients as name:sha256hex:scope+scope, or -oauth-issuer to the issuer of their access tokens "+
		"(cmd/erpgate/README.md, \"Closed by default\"); else listen on loopback only (-addr %s), "+
		"or pass -open true (ERPGATE_OPEN=true) to serve every caller without credentials on purpose",
		c.addr, loopback))}
}

// checkOAuth: the settings of OAuth access tokens need -oauth-issuer.
func checkOAuth(c *config) []error {
	if c.oauth.issuer != "" {
		return nil
	}
	var errs []error
	if c.oauth.jwksURL != "" {
		errs = append(errs, settingError("oauth-jwks-url", "needs -oauth-issuer"))
	}
	if c.oauth.audience != "" {
		errs = append(errs, settingError("oauth-audience", "needs -oauth-issuer"))
	}
	return errs
}

// checkTLSPair: -tls-cert and -tls-key come together or not at all.
func checkTLSPair(c *config) []error {
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return []error{settingError("tls-cert", "needs -tls-key, and -tls-key needs -tls-cert")}
	}
	return nil
}

// checkCallTimeout: the deadline of a call leaves room for its first
// attempt.
func checkCallTimeout(c *config) []error {
	if c.retry.CallTimeout < c.erpTimeout {
		return []error{settingError("erp-call-timeout", "must not be shorter than -erp-timeout")}
	}
	return nil
}

// checkERPRate: with a ceiling of ERP calls per second (-erp-rate), one
// client's own limit (-rate-limit per -rate-window) must not exceed it,
// else one client alone could spend the whole of the ERP's quota and
// leave every other client RATE_LIMITED. The ceiling would still keep
// the ERP safe, so this is a contradiction in the settings rather than a
// danger to the ERP, and the gateway refuses to start on it rather than
// warn: the operator settles which of the two is meant. Every tool call
// makes at least one ERP call, so a client within its limit may still
// reach the ceiling of a service its calls share with others.
func checkERPRate(c *config) []error {
	if c.erpQuota.Rate <= 0 {
		return nil
	}
	if c.rateLimit == 0 {
		return []error{settingError("rate-limit", fmt.Sprintf(
			"must be set (not 0) with -erp-rate %g: a client without a limit could spend the whole of the ERP's quota", c.erpQuota.Rate))}
	}
	// The ERP sees whole requests: a ceiling of 2.5 a second lets at most
	// 2 into any second.
	ceiling, kept := c.erpQuota.PerSecond(), ""
	if ceiling != c.erpQuota.Rate {
		kept = fmt.Sprintf(" (at most %g in any second)", ceiling)
	}
	perSecond := float64(c.rateLimit) / c.rateWindow.Seconds()
	if perSecond <= ceiling {
		return nil
	}
	fits := int(math.Floor(ceiling * c.rateWindow.Seconds()))
	return []error{settingError("rate-limit", fmt.Sprintf(
		"%d calls per %v is %.3g a second for one client, above -erp-rate %g%s, the ERP's quota for all of them: lower it to at most %d per %v, or raise -erp-rate",
		c.rateLimit, c.rateWindow, perSecond, c.erpQuota.Rate, kept, fits, c.rateWindow))}
}

// checkERPAuth settles -erp-auth (basic with -erp-user, else none, when
// not given) and checks the credential settings against it: those of the
// chosen way must be there, those of another way are refused, so that a
// typo in -erp-auth cannot silently send no credentials. For oauth2 it
// sets c.erpOAuth2, for saml-bearer c.erpSAML.
func checkERPAuth(c *config) []error {
	var errs []error
	bad := func(name, why string) { errs = append(errs, settingError(name, why)) }
	if c.erpAuth == "" {
		c.erpAuth = sap.AuthNone
		if c.erpUser != "" {
			c.erpAuth = sap.AuthBasic
		}
	}
	in := c.erpIn
	given := map[string]bool{
		"erp-user": c.erpUser != "", "erp-client-cert": in.clientCert != "", "erp-client-key": in.clientKey != "",
		"erp-token-url": in.tokenURL != "", "erp-client-id": in.clientID != "", "erp-client-secret": in.clientSecret != "",
		"erp-scopes":      in.scopes != "",
		"erp-saml-issuer": in.samlIssuer != "", "erp-saml-audience": in.samlAudience != "", "erp-saml-cert": in.samlCert != "",
		"erp-saml-key": in.samlKey != "", "erp-saml-user": in.samlUser != "",
		"erp-exchange-audience": in.exchangeAudience != "", "erp-exchange-key-callers": in.exchangeKeyCallers == "gateway",
	}
	refuse := func(why string, names ...string) {
		for _, n := range names {
			if given[n] {
				bad(n, why)
			}
		}
	}
	need := func(why string, names ...string) {
		for _, n := range names {
			if !given[n] {
				bad(n, why)
			}
		}
	}
	mtls := []string{"erp-client-cert", "erp-client-key"}
	oauth := []string{"erp-token-url", "erp-client-id", "erp-client-secret", "erp-scopes"}
	saml := []string{"erp-saml-issuer", "erp-saml-audience", "erp-saml-cert", "erp-saml-key", "erp-saml-user"}
	scopes := strings.FieldsFunc(in.scopes, func(r rune) bool { return r == ',' || r == ' ' })
	if c.erpAuth != sap.AuthTokenExchange {
		refuse("needs -erp-auth token-exchange", "erp-exchange-audience", "erp-exchange-key-callers")
	}
	switch c.erpAuth {
	case sap.AuthNone:
		refuse("needs -erp-auth basic", "erp-user")
		refuse("needs -erp-auth mtls", mtls...)
		refuse("needs -erp-auth oauth2, saml-bearer or token-exchange", oauth...)
		refuse("needs -erp-auth saml-bearer", saml...)
	case sap.AuthBasic:
		need("must be set for -erp-auth basic", "erp-user")
		refuse("needs -erp-auth mtls", mtls...)
		refuse("needs -erp-auth oauth2, saml-bearer or token-exchange", oauth...)
		refuse("needs -erp-auth saml-bearer", saml...)
	case sap.AuthMTLS:
		refuse("is for -erp-auth basic, not mtls", "erp-user")
		refuse("needs -erp-auth oauth2, saml-bearer or token-exchange", oauth...)
		refuse("needs -erp-auth saml-bearer", saml...)
		need("must be set for -erp-auth mtls", mtls...)
		if !strings.HasPrefix(c.erpURL, "https://") {
			bad("erp-auth", "mtls needs an https -erp-url")
		}
	case sap.AuthOAuth2:
		refuse("is for -erp-auth basic, not oauth2", "erp-user")
		refuse("needs -erp-auth mtls", mtls...)
		refuse("needs -erp-auth saml-bearer", saml...)
		need("must be set for -erp-auth oauth2", "erp-token-url", "erp-client-id", "erp-client-secret")
		if in.tokenURL != "" && !absoluteURL(in.tokenURL, "http", "https") {
			bad("erp-token-url", absoluteHTTPURL)
		}
		c.erpOAuth2 = &clientcredentials.Config{ClientID: in.clientID, ClientSecret: in.clientSecret, TokenURL: in.tokenURL,
			Scopes: scopes}
	case sap.AuthSAMLBearer:
		refuse("is for -erp-auth basic, not saml-bearer", "erp-user")
		refuse("needs -erp-auth mtls", mtls...)
		need("must be set for -erp-auth saml-bearer", "erp-token-url", "erp-client-id", "erp-client-secret")
		need("must be set for -erp-auth saml-bearer", saml...)
		if in.tokenURL != "" && !absoluteURL(in.tokenURL, "http", "https") {
			bad("erp-token-url", absoluteHTTPURL)
		}
		if in.samlCert == "" || in.samlKey == "" {
			break
		}
		pair, err := sap.LoadSAMLCertificate(in.samlCert, in.samlKey)
		if err != nil {
			bad("erp-saml-cert", "with -erp-saml-key: "+strings.TrimPrefix(err.Error(), "sap: "))
			break
		}
		c.erpSAML = &sap.SAMLBearer{TokenURL: in.tokenURL, ClientID: in.clientID, ClientSecret: in.clientSecret,
			Scopes: scopes, Issuer: in.samlIssuer, Audience: in.samlAudience, Certificate: pair, User: in.samlUser}
	case sap.AuthTokenExchange:
		checkTokenExchange(c, scopes, bad, refuse, need)
	default:
		// refused by the parser of -erp-auth
	}
	return errs
}

// checkTokenExchange is checkERPAuth for -erp-auth token-exchange: the
// callers' access tokens are exchanged, so the gateway must take them
// (-oauth-issuer); it sets c.erpExchange.
func checkTokenExchange(c *config, scopes []string, bad func(name, why string), refuse, need func(why string, names ...string)) {
	in := c.erpIn
	refuse("is for -erp-auth basic, not token-exchange", "erp-user")
	refuse("needs -erp-auth mtls", "erp-client-cert", "erp-client-key")
	refuse("needs -erp-auth saml-bearer", "erp-saml-issuer", "erp-saml-audience", "erp-saml-cert", "erp-saml-key", "erp-saml-user")
	need("must be set for -erp-auth token-exchange", "erp-token-url", "erp-client-id", "erp-client-secret", "erp-exchange-audience")
	if in.tokenURL != "" && !absoluteURL(in.tokenURL, "http", "https") {
		bad("erp-token-url", absoluteHTTPURL)
	}
	if c.oauth.issuer == "" {
		bad("erp-auth", "token-exchange exchanges each caller's OAuth access token for the ERP's, and without -oauth-issuer "+
			"(ERPGATE_OAUTH_ISSUER) the gateway takes none: set it to the issuer of the agents' access tokens")
	}
	if err := sap.CheckExchangeScope(in.exchangeScope); err != nil {
		bad("erp-exchange-scope", strings.TrimPrefix(err.Error(), "sap: "))
	}
	subjectType := sap.TokenTypeAccessToken
	if in.exchangeSubjectType == "jwt" {
		subjectType = sap.TokenTypeJWT
	}
	c.erpExchange = &sap.TokenExchange{TokenURL: in.tokenURL, ClientID: in.clientID, ClientSecret: in.clientSecret,
		Audience: in.exchangeAudience, Scope: in.exchangeScope, SubjectTokenType: subjectType, OwnScopes: scopes,
		KeyCallersAsGateway: in.exchangeKeyCallers == "gateway"}
}

// checkERPTLS reads the client certificate of -erp-auth mtls and the CAs
// of -erp-ca (parsed on their own already) into c.erpTLS; with neither,
// it stays nil, for the defaults.
func checkERPTLS(c *config) []error {
	cert, key := c.erpIn.clientCert, c.erpIn.clientKey
	if c.erpAuth != sap.AuthMTLS || cert == "" || key == "" {
		cert, key = "", "" // what checkERPAuth reports
	}
	if cert != "" {
		if _, err := sap.ClientTLS(cert, key, ""); err != nil {
			return []error{settingError("erp-client-cert", "with -erp-client-key: "+strings.TrimPrefix(err.Error(), "sap: "))}
		}
	}
	if cert != "" || c.erpIn.ca != "" {
		c.erpTLS, _ = sap.ClientTLS(cert, key, c.erpIn.ca) // nil when -erp-ca is wrong, which its parser reports
	}
	return nil
}

// checkRecordsStore: the records go to PostgreSQL at -database-url, else
// to SQLite in -data-dir.
func checkRecordsStore(c *config) []error {
	if c.databaseURL == "" && c.dataDir == "" {
		return []error{settingError("data-dir", "must name a directory when -database-url is empty")}
	}
	return nil
}

// checkRouting: without -approval-rules, approvals are routed by the
// default bands with -auto-approve-limit, which must stay below the first.
func checkRouting(c *config) []error {
	if c.approvalRules != "" {
		return nil // c.routing is the file's, checked by its parser
	}
	c.routing = erp.DefaultRouting
	c.routing.Default.AutoApproveLimit = c.autoApproveLimit
	if err := c.routing.Validate(); err != nil {
		return []error{settingError("auto-approve-limit", "must be below the first band (50000)")}
	}
	return nil
}
