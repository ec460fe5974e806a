package sap

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/beevik/etree"
	lru "github.com/hashicorp/golang-lru/v2"
	dsig "github.com/russellhaering/goxmldsig"
	"golang.org/x/oauth2"

	"github.com/erpgate/erpgate/erp"
)

// SAMLBearer configures the OAuth 2.0 SAML 2.0 bearer assertion grant
// (RFC 7522): for every identity the gateway calls the ERP for, it signs an
// assertion naming that identity and exchanges it at the token endpoint for
// an access token of the user SAP maps the name to.
type SAMLBearer struct {
	// TokenURL is the token endpoint; the assertion's Recipient too.
	TokenURL string
	// ClientID and ClientSecret authenticate the gateway to the token
	// endpoint, as HTTP basic authentication.
	ClientID, ClientSecret string
	// Scopes are asked for when not empty.
	Scopes []string
	// Issuer is the gateway's entity id as the ERP trusts it.
	Issuer string
	// Audience is the entity id of the ERP's OAuth server (its SAML
	// service provider name).
	Audience string
	// Certificate signs the assertions: an RSA key and its certificate,
	// the one the ERP trusts for Issuer (see LoadSAMLCertificate).
	Certificate tls.Certificate
	// User is the name asserted for a call with no identity of its own
	// (erp.PrincipalFrom is empty): start-up checks, scheduled re-checks.
	User string
}

// samlGrantType is RFC 7522's grant type.
const samlGrantType = "urn:ietf:params:oauth:grant-type:saml2-bearer"

// samlLifetime is how long an assertion is valid: long enough for clocks a
// little apart, short enough that a captured one is soon worthless.
const samlLifetime = 5 * time.Minute

// samlIdentities bounds the identities whose tokens are kept.
const samlIdentities = 1000

// tokenMargin is how long before its expiry a token is fetched anew, so
// that it does not expire on the way to the ERP.
const tokenMargin = time.Minute

// LoadSAMLCertificate reads the PEM certificate and RSA private key that
// sign the assertions of SAMLBearer.
func LoadSAMLCertificate(certFile, keyFile string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sap: SAML signing certificate: %w", err)
	}
	if err := checkSAMLCertificate(pair); err != nil {
		return tls.Certificate{}, err
	}
	return pair, nil
}

func checkSAMLCertificate(pair tls.Certificate) error {
	if len(pair.Certificate) == 0 {
		return errors.New("sap: SAML signing certificate: none given")
	}
	if _, ok := pair.PrivateKey.(*rsa.PrivateKey); !ok {
		return errors.New("sap: SAML signing certificate: the key must be RSA (the assertion is signed RSA-SHA256)")
	}
	return nil
}

// samlTokens gets and keeps the access tokens of the identities.
type samlTokens struct {
	cfg    SAMLBearer
	http   *http.Client
	sign   *dsig.SigningContext
	now    func() time.Time
	mu     sync.Mutex // creating entries
	tokens *lru.Cache[string, *samlToken]
}

// samlToken is one identity's token; its lock is held while the token is
// fetched, so that concurrent calls of an identity make one request.
type samlToken struct {
	mu  sync.Mutex
	tok *oauth2.Token
}

func (c *Client) samlTokens(cfg *SAMLBearer) (*samlTokens, error) {
	if cfg.TokenURL == "" || cfg.Issuer == "" || cfg.Audience == "" || cfg.User == "" {
		return nil, errors.New("sap: Options.SAML needs TokenURL, Issuer, Audience and User")
	}
	if err := checkSAMLCertificate(cfg.Certificate); err != nil {
		return nil, err
	}
	sign, err := dsig.NewSigningContext(cfg.Certificate.PrivateKey.(*rsa.PrivateKey), cfg.Certificate.Certificate[:1])
	if err != nil {
		return nil, fmt.Errorf("sap: SAML signing: %w", err)
	}
	sign.Canonicalizer = dsig.MakeC14N10ExclusiveCanonicalizerWithPrefixList("")
	sign.Prefix = "ds"
	cache, _ := lru.New[string, *samlToken](samlIdentities) // fails only for a size below 1
	return &samlTokens{
		cfg: *cfg,
		// As the client credentials tokens are fetched (tokenSource).
		http: &http.Client{
			Transport:     userAgentTransport{rt: c.http.Transport, ua: c.userAgent},
			CheckRedirect: noRedirect,
			Timeout:       c.runner.Policy().AttemptTimeout,
		},
		sign:   sign,
		now:    time.Now,
		tokens: cache,
	}, nil
}

// identity is the SAP user a call of ctx signs in as: the caller's
// identity, else SAMLBearer.User.
func (s *samlTokens) identity(ctx context.Context) string {
	if name := erp.PrincipalFrom(ctx); name != "" {
		return name
	}
	return s.cfg.User
}

// Token returns the access token of the identity ctx names, else of
// SAMLBearer.User, fetching it when none is kept or the kept one is about
// to expire. A refusal by the token endpoint is an *oauth2.RetrieveError
// with the answer, classified as the client credentials flow's is.
func (s *samlTokens) Token(ctx context.Context) (*oauth2.Token, error) {
	name := s.identity(ctx)
	s.mu.Lock()
	e, ok := s.tokens.Get(name)
	if !ok {
		e = &samlToken{}
		s.tokens.Add(name, e)
	}
	s.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tok != nil && (e.tok.Expiry.IsZero() || s.now().Add(tokenMargin).Before(e.tok.Expiry)) {
		return e.tok, nil
	}
	tok, err := s.fetch(name)
	if err != nil {
		return nil, err
	}
	e.tok = tok
	return tok, nil
}

// fetch exchanges a fresh assertion for name at the token endpoint.
func (s *samlTokens) fetch(name string) (*oauth2.Token, error) {
	assertion, err := s.assertion(name, s.now())
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type": {samlGrantType},
		"assertion":  {base64.RawURLEncoding.EncodeToString(assertion)},
	}
	if len(s.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(s.cfg.Scopes, " "))
	}
	req, err := http.NewRequest(http.MethodPost, s.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("sap: token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749, section 2.3.1: form-encoded before they are joined.
	req.SetBasicAuth(url.QueryEscape(s.cfg.ClientID), url.QueryEscape(s.cfg.ClientSecret))
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth2: cannot fetch token: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("oauth2: cannot fetch token: %w", err)
	}
	var answer struct {
		AccessToken      string          `json:"access_token"`
		TokenType        string          `json:"token_type"`
		ExpiresIn        json.RawMessage `json:"expires_in"`
		Error            string          `json:"error"`
		ErrorDescription string          `json:"error_description"`
		ErrorURI         string          `json:"error_uri"`
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	jsonErr := json.Unmarshal(body, &answer)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &oauth2.RetrieveError{Response: resp, Body: body,
			ErrorCode: answer.Error, ErrorDescription: answer.ErrorDescription, ErrorURI: answer.ErrorURI}
	}
	if jsonErr != nil || answer.AccessToken == "" {
		return nil, fmt.Errorf("oauth2: server response (%s) holds no access token", ct)
	}
	tok := &oauth2.Token{AccessToken: answer.AccessToken, TokenType: answer.TokenType}
	if secs := expiresIn(answer.ExpiresIn); secs > 0 {
		tok.Expiry = s.now().Add(time.Duration(secs) * time.Second)
	}
	return tok, nil
}

// expiresIn reads expires_in, a number or, from some servers, a string of
// one; 0 when it is missing or neither.
func expiresIn(raw json.RawMessage) int64 {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		n = json.Number(s)
	}
	v, err := n.Int64()
	if err != nil {
		return 0
	}
	return v
}

// SAML 2.0 namespaces and identifiers.
const (
	samlNS           = "urn:oasis:names:tc:SAML:2.0:assertion"
	samlNameIDFormat = "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified"
	samlBearer       = "urn:oasis:names:tc:SAML:2.0:cm:bearer"
	samlAuthnContext = "urn:oasis:names:tc:SAML:2.0:ac:classes:PreviousSession"
)

// assertion is the signed SAML 2.0 assertion naming name, made at now.
func (s *samlTokens) assertion(name string, now time.Time) ([]byte, error) {
	var idBytes [16]byte
	_, _ = rand.Read(idBytes[:])
	id := "_" + hex.EncodeToString(idBytes[:])
	now = now.UTC()
	issued := samlTime(now)
	notBefore := samlTime(now.Add(-time.Minute))
	notOnOrAfter := samlTime(now.Add(samlLifetime))

	doc := etree.NewDocument()
	a := doc.CreateElement("saml2:Assertion")
	a.CreateAttr("xmlns:saml2", samlNS)
	a.CreateAttr("ID", id)
	a.CreateAttr("IssueInstant", issued)
	a.CreateAttr("Version", "2.0")
	a.CreateElement("saml2:Issuer").SetText(s.cfg.Issuer)

	subject := a.CreateElement("saml2:Subject")
	nameID := subject.CreateElement("saml2:NameID")
	nameID.CreateAttr("Format", samlNameIDFormat)
	nameID.SetText(name)
	confirmation := subject.CreateElement("saml2:SubjectConfirmation")
	confirmation.CreateAttr("Method", samlBearer)
	data := confirmation.CreateElement("saml2:SubjectConfirmationData")
	data.CreateAttr("NotOnOrAfter", notOnOrAfter)
	data.CreateAttr("Recipient", s.cfg.TokenURL)

	conditions := a.CreateElement("saml2:Conditions")
	conditions.CreateAttr("NotBefore", notBefore)
	conditions.CreateAttr("NotOnOrAfter", notOnOrAfter)
	conditions.CreateElement("saml2:AudienceRestriction").CreateElement("saml2:Audience").SetText(s.cfg.Audience)

	authn := a.CreateElement("saml2:AuthnStatement")
	authn.CreateAttr("AuthnInstant", issued)
	authn.CreateAttr("SessionIndex", id)
	authn.CreateElement("saml2:AuthnContext").CreateElement("saml2:AuthnContextClassRef").SetText(samlAuthnContext)

	sig, err := s.sign.ConstructSignature(a, true)
	if err != nil {
		return nil, fmt.Errorf("sap: sign SAML assertion: %w", err)
	}
	// The schema puts the signature right after the Issuer; the enveloped
	// transform leaves it out of the digest wherever it is.
	a.InsertChildAt(1, sig)
	return doc.WriteToBytes()
}

func samlTime(t time.Time) string { return t.Format("2006-01-02T15:04:05.000Z") }

// samlAuthorize is authorize for the SAML bearer grant: the token of the
// request's identity.
func (c *Client) samlAuthorize(req *http.Request) error {
	tok, err := c.saml.Token(req.Context())
	if err != nil {
		return err
	}
	req.Header["Authorization"] = []string{"Bearer " + tok.AccessToken}
	return nil
}
