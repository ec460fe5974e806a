package sap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/erpgate/erpgate/erp"
)

// The ways the gateway authenticates to the ERP. The client itself knows
// only what Options hold; these name the choice for configuration.
const (
	AuthNone   = "none"   // no credentials
	AuthBasic  = "basic"  // Options.User and Options.Password
	AuthMTLS   = "mtls"   // an X.509 client certificate in Options.TLS
	AuthOAuth2 = "oauth2" // Options.OAuth2, the client credentials flow
	// Options.SAML, the SAML 2.0 bearer assertion grant
	AuthSAMLBearer = "saml-bearer"
	// Options.TokenExchange, the caller's token exchanged (RFC 8693)
	AuthTokenExchange = "token-exchange"
)

// ClientTLS reads a TLS configuration for the ERP from PEM files: the
// client certificate and its private key for X.509 authentication (both or
// neither), and caFile, when not empty, a bundle of the CAs the ERP's
// certificate is checked against instead of the system's roots (for a
// private CA).
func ClientTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("sap: a client certificate needs its key, and a key its certificate")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("sap: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("sap: CA bundle: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("sap: CA bundle %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// tokenSource returns the cached source of OAuth 2.0 tokens. Tokens are
// fetched with the ERP client's transport (its proxy, TLS and pool
// settings) and User-Agent, without its cookie jar, without following
// redirects, and each fetch within the attempt timeout.
func (c *Client) tokenSource(cfg *clientcredentials.Config) oauth2.TokenSource {
	hc := &http.Client{
		Transport:     userAgentTransport{rt: c.http.Transport, ua: c.userAgent},
		CheckRedirect: noRedirect,
		Timeout:       c.runner.Policy().AttemptTimeout,
	}
	// The context only carries the HTTP client: the source outlives every
	// request, and a token fetch is bounded by the client's timeout.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	// clientcredentials' source caches the token and fetches a new one
	// shortly before it expires.
	return cfg.TokenSource(ctx)
}

// authorize puts the gateway's own credentials on a request to the ERP for
// svc: a bearer token with OAuth 2.0 (with the SAML bearer grant, the token
// of the identity the request's context names; with the token exchange,
// the exchange of the caller's token for the call's operation), else basic
// authentication when a user is set. Whatever Authorization header the
// request had is replaced, so nothing of the agent's credentials can reach
// the ERP.
func (c *Client) authorize(req *http.Request, svc erp.Service) error {
	req.Header.Del("Authorization")
	switch {
	case c.exchange != nil:
		return c.exchangeAuthorize(req, svc)
	case c.saml != nil:
		return c.samlAuthorize(req)
	case c.tokens != nil:
		tok, err := c.tokens.Token()
		if err != nil {
			return err
		}
		tok.SetAuthHeader(req)
	case c.basicAuth != nil:
		// Shared: a request's header is only ever Set, never appended
		// to in place.
		req.Header["Authorization"] = c.basicAuth
	}
	return nil
}

// authError classifies a failure to get a token: a refusal by the token
// endpoint is a fault of configuration, a network failure or a 5xx of the
// endpoint is transient, like the same failure of the ERP.
func (r request) authError(ctx, actx context.Context, err error) *erp.UpstreamError {
	up := r.transportError(ctx, actx, err)
	markConfigTransport(ctx, up, err)
	if up.Err == err {
		up.Text = "token request: " + up.Text
	}
	return up
}

// checkToken gets a token before a call is run, so that a token endpoint
// that refuses the gateway's credentials ends the call at once instead of
// through every retry, and a caller whose credentials cannot reach the ERP
// (erp.CallerCredentialError) is refused before any request. A transient
// failure is left to the call's attempts.
func (c *Client) checkToken(ctx context.Context, r request) error {
	var err error
	switch {
	case c.exchange != nil:
		_, err = c.exchange.Token(ctx, r.call.Service)
		if caller, ok := errors.AsType[*erp.CallerCredentialError](err); ok {
			return caller
		}
	case c.saml != nil:
		_, err = c.saml.Token(ctx)
	case c.tokens != nil:
		_, err = c.tokens.Token()
	default:
		return nil
	}
	if err != nil && configTransport(err) {
		up := r.authError(ctx, ctx, err)
		up.Attempts = 1
		return up
	}
	return nil
}

// markConfigTransport marks a failure to get any answer as a fault of
// configuration when it is one: the ERP's certificate cannot be verified,
// the ERP refused the TLS handshake (a client certificate missing or not
// accepted), the URL's port does not speak TLS, or the token endpoint
// refused the client. Such a failure is not transient.
func markConfigTransport(ctx context.Context, up *erp.UpstreamError, err error) {
	if ctx.Err() != nil || !configTransport(err) {
		return
	}
	up.Config = true
	up.Transient = false
	up.Timeout = false
	up.Text = err.Error()
	up.Err = err
}

// configTransport reports whether err is one of the failures
// markConfigTransport names.
func configTransport(err error) bool {
	var (
		retrieve *oauth2.RetrieveError
		answer   *exchangeAnswerError
		caller   *erp.CallerCredentialError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		alert    tls.AlertError
		record   tls.RecordHeaderError
		op       *net.OpError
	)
	switch {
	case errors.As(err, &caller):
		// The caller's to mend, and no retry mends it either.
		return true
	case errors.As(err, &answer):
		return true
	case errors.As(err, &retrieve):
		if retrieve.Response == nil {
			return false
		}
		st := retrieve.Response.StatusCode
		return st >= 400 && st < 500 && st != http.StatusTooManyRequests && st != http.StatusRequestTimeout
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		return true
	case errors.As(err, &alert), errors.As(err, &record):
		return true
	case errors.As(err, &op) && op.Op == "remote error":
		// crypto/tls reports an alert from the server so: the server broke
		// off the TLS session, as it does for a client certificate that is
		// missing or refused, or no protocol or cipher in common.
		return true
	}
	return false
}
