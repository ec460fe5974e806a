package sap

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// samlIdP is the gateway's signing key and self-signed certificate, as the
// ERP's OAuth server trusts them.
type samlIdP struct {
	cert     *x509.Certificate
	pair     tls.Certificate
	certFile string
	keyFile  string
}

func newSAMLIdP(t *testing.T) *samlIdP {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "erpgate SAML IdP"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	idp := &samlIdP{}
	if idp.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	idp.certFile, idp.keyFile = filepath.Join(dir, "idp.pem"), filepath.Join(dir, "idp-key.pem")
	if err := os.WriteFile(idp.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	kb := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(idp.keyFile, kb, 0o600); err != nil {
		t.Fatal(err)
	}
	if idp.pair, err = LoadSAMLCertificate(idp.certFile, idp.keyFile); err != nil {
		t.Fatal(err)
	}
	return idp
}

const (
	samlIssuer   = "erpgate-idp"
	samlAudience = "SAP_OAUTH_SP_100"
)

// samlTokenServer is the ERP's OAuth server: it checks the assertion as SAP
// does and issues a token naming the asserted user.
type samlTokenServer struct {
	t      *testing.T
	srv    *httptest.Server
	idp    *samlIdP
	refuse bool

	mu       sync.Mutex
	issued   []string
	problems []string
	agents   []string
	scopes   []string
}

func newSAMLTokenServer(t *testing.T, idp *samlIdP) *samlTokenServer {
	ts := &samlTokenServer{t: t, idp: idp}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *samlTokenServer) tokenURL() string { return ts.srv.URL + "/sap/bc/sec/oauth2/token" }

func (ts *samlTokenServer) serve(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.agents = append(ts.agents, r.Header.Get("User-Agent"))
	fail := func(why string) {
		ts.problems = append(ts.problems, why)
		writeJSON(w, http.StatusBadRequest, `{"error":"invalid_grant","error_description":"`+why+`"}`)
	}
	id, secret, ok := r.BasicAuth()
	if ts.refuse || !ok || id != "ERPGATE_CLIENT" || secret != "client-s3cret" {
		writeJSON(w, http.StatusUnauthorized, `{"error":"invalid_client"}`)
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:saml2-bearer" {
		fail("grant_type")
		return
	}
	raw, err := base64.RawURLEncoding.DecodeString(r.PostForm.Get("assertion"))
	if err != nil {
		fail("assertion is not base64url")
		return
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		fail("assertion is not XML")
		return
	}
	vc := dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: []*x509.Certificate{ts.idp.cert}})
	a, err := vc.Validate(doc.Root())
	if err != nil {
		fail("signature: " + err.Error())
		return
	}
	text := func(path string) string {
		if el := a.FindElement(path); el != nil {
			return el.Text()
		}
		return ""
	}
	attr := func(path, name string) string {
		if el := a.FindElement(path); el != nil {
			return el.SelectAttrValue(name, "")
		}
		return ""
	}
	now := time.Now()
	timeOK := func(v string, before bool) bool {
		tm, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return false
		}
		if before {
			return !tm.After(now)
		}
		return tm.After(now) && tm.Before(now.Add(10*time.Minute))
	}
	switch {
	case a.Tag != "Assertion" || a.NamespaceURI() != "urn:oasis:names:tc:SAML:2.0:assertion":
		fail("not an assertion")
	case text("./Issuer") != samlIssuer:
		fail("issuer " + text("./Issuer"))
	case text("./Conditions/AudienceRestriction/Audience") != samlAudience:
		fail("audience")
	case attr("./Subject/SubjectConfirmation", "Method") != "urn:oasis:names:tc:SAML:2.0:cm:bearer":
		fail("confirmation method")
	case attr("./Subject/SubjectConfirmation/SubjectConfirmationData", "Recipient") != ts.tokenURL():
		fail("recipient")
	case !timeOK(attr("./Subject/SubjectConfirmation/SubjectConfirmationData", "NotOnOrAfter"), false),
		!timeOK(attr("./Conditions", "NotOnOrAfter"), false), !timeOK(attr("./Conditions", "NotBefore"), true),
		!timeOK(a.SelectAttrValue("IssueInstant", ""), true):
		fail("time bounds")
	case a.SelectAttrValue("ID", "") == "" || a.FindElement("./AuthnStatement") == nil:
		fail("ID or AuthnStatement")
	case text("./Subject/NameID") == "":
		fail("no NameID")
	default:
		tok := fmt.Sprintf("tok-%d-%s", len(ts.issued)+1, text("./Subject/NameID"))
		ts.issued = append(ts.issued, tok)
		ts.scopes = append(ts.scopes, r.PostForm.Get("scope"))
		body, _ := json.Marshal(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
		writeJSON(w, http.StatusOK, string(body))
	}
}

func (ts *samlTokenServer) config() *SAMLBearer {
	return &SAMLBearer{TokenURL: ts.tokenURL(), ClientID: "ERPGATE_CLIENT", ClientSecret: "client-s3cret",
		Scopes: []string{"ZAPI_SUPPLIERINVOICE_0001"}, Issuer: samlIssuer, Audience: samlAudience,
		Certificate: ts.idp.pair, User: "ERPGATE_TECH"}
}

func pingFor(ctx context.Context, c *Client) error {
	r := request{call: retry.Call{Service: erp.ServiceBusinessPartner, Operation: "read suppliers"}, method: http.MethodGet,
		url: c.url(erp.ServiceBusinessPartner, "A_Supplier")}
	_, err := c.do(ctx, r, nil)
	return err
}

func TestSAMLBearerTokenPerIdentity(t *testing.T) {
	ts := newSAMLTokenServer(t, newSAMLIdP(t))
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{SAML: ts.config(), Version: "v9.8.7"})

	alice := erp.WithPrincipal(context.Background(), "alice@example.com")
	bot := erp.WithPrincipal(context.Background(), "ap-agent")
	for i, ctx := range []context.Context{alice, bot, alice, context.Background()} {
		if err := pingFor(ctx, c); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.problems) > 0 {
		t.Fatalf("the token endpoint refused assertions: %q", ts.problems)
	}
	var got []string
	for _, s := range f.requests {
		got = append(got, s.header.Get("Authorization"))
	}
	want := []string{"Bearer tok-1-alice@example.com", "Bearer tok-2-ap-agent", "Bearer tok-1-alice@example.com", "Bearer tok-3-ERPGATE_TECH"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the ERP saw %q, want %q", got, want)
	}
	if len(ts.issued) != 3 {
		t.Errorf("%d token requests, want 3 (alice's token kept)", len(ts.issued))
	}
	for _, ua := range ts.agents {
		if ua != "erpgate/v9.8.7" {
			t.Errorf("token request User-Agent %q", ua)
		}
	}
	if ts.scopes[0] != "ZAPI_SUPPLIERINVOICE_0001" {
		t.Errorf("scope %q", ts.scopes[0])
	}
}

func TestSAMLBearerTokenRefused(t *testing.T) {
	ts := newSAMLTokenServer(t, newSAMLIdP(t))
	ts.refuse = true
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{SAML: ts.config(), Runner: retry.New(retry.Policy{AttemptTimeout: 2 * time.Second,
		MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }}, nil)})
	err := pingFor(erp.WithPrincipal(context.Background(), "alice"), c)
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Config || up.Transient {
		t.Fatalf("got %v, want a configuration fault", err)
	}
	if e := errmap.Map(err); e.Code != errmap.ERPConfiguration {
		t.Errorf("code %s, want ERP_CONFIGURATION", e.Code)
	}
	if len(f.requests) != 0 {
		t.Errorf("the ERP got %d requests without a token", len(f.requests))
	}
	if len(ts.agents) != 1 {
		t.Errorf("%d token requests, want 1", len(ts.agents))
	}
}

// TestSAMLBearerWrongCertificate: an assertion signed by a key the ERP
// does not trust is refused there.
func TestSAMLBearerWrongCertificate(t *testing.T) {
	ts := newSAMLTokenServer(t, newSAMLIdP(t))
	cfg := ts.config()
	cfg.Certificate = newSAMLIdP(t).pair
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{SAML: cfg})
	if e := errmap.Map(pingFor(context.Background(), c)); e.Code != errmap.ERPConfiguration {
		t.Errorf("code %s, want ERP_CONFIGURATION", e.Code)
	}
	if len(ts.problems) != 1 || !strings.HasPrefix(ts.problems[0], "signature") {
		t.Errorf("token endpoint found %q, want a bad signature", ts.problems)
	}
}

func TestSAMLBearerOptions(t *testing.T) {
	idp := newSAMLIdP(t)
	good := SAMLBearer{TokenURL: "https://s4.example.com/sap/bc/sec/oauth2/token", Issuer: "i", Audience: "a", User: "u", Certificate: idp.pair}
	if _, err := New("https://s4.example.com", Options{SAML: &good}); err != nil {
		t.Fatal(err)
	}
	noUser := good
	noUser.User = ""
	if _, err := New("https://s4.example.com", Options{SAML: &noUser}); err == nil {
		t.Error("no default user accepted")
	}
	if _, err := New("https://s4.example.com", Options{SAML: &good, User: "u"}); err == nil {
		t.Error("SAML with basic authentication accepted")
	}
	ecdsaIdP := newPKI(t)
	if _, err := LoadSAMLCertificate(ecdsaIdP.clientCertFile, ecdsaIdP.clientKeyFile); err == nil {
		t.Error("an ECDSA key accepted for RSA-SHA256")
	}
}

// TestSAMLBearerSessionPerIdentity: SAP binds a CSRF token to the session
// of the user who fetched it. Signed in as their callers, two identities
// posting keep a token and a session cookie each: no write carries another
// identity's token or cookie, so none is refused for it, and a write is
// never taken for another user's.
func TestSAMLBearerSessionPerIdentity(t *testing.T) {
	ts := newSAMLTokenServer(t, newSAMLIdP(t))
	f := newFake(t, postingSAP("5", ""))
	c := f.client(Options{SAML: ts.config()})
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	alice := erp.WithPrincipal(context.Background(), "alice@example.com")
	bot := erp.WithPrincipal(context.Background(), "ap-agent")
	for i, ctx := range []context.Context{alice, bot, alice} {
		if _, err := c.PostInvoice(ctx, inv, ""); err != nil {
			t.Fatalf("post %d: %v", i+1, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// The fake hands out tok-n on its n-th fetch: whose was it?
	fetchedBy := map[string]string{}
	var writes []seen
	for _, s := range f.requests {
		switch {
		case s.header.Get("X-CSRF-Token") == "Fetch":
			fetchedBy[fmt.Sprintf("tok-%d", len(fetchedBy)+1)] = s.header.Get("Authorization")
		case s.method == http.MethodPost:
			writes = append(writes, s)
		}
	}
	if len(fetchedBy) != 2 || len(writes) != 3 {
		t.Fatalf("%d fetches and %d writes, want a fetch per identity (2) and 3 writes", len(fetchedBy), len(writes))
	}
	for i, w := range writes {
		if tok := w.header.Get("X-CSRF-Token"); fetchedBy[tok] != w.header.Get("Authorization") {
			t.Errorf("write %d as %q carried %s, fetched as %q", i+1, w.header.Get("Authorization"), tok, fetchedBy[tok])
		}
		if n := strings.Count(w.header.Get("Cookie"), sessionCookie); n != 1 {
			t.Errorf("write %d carried %d session cookies: %q", i+1, n, w.header.Get("Cookie"))
		}
	}
}
