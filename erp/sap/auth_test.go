package sap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// okJSON is the body the test ERPs answer a request they accept with.
const okJSON = `{"d":{"results":[]}}`

// ping reads an entity set of the business partner service, the smallest
// call that carries the client's credentials.
func ping(c *Client) error {
	r := request{call: retry.Call{Service: erp.ServiceBusinessPartner, Operation: "read suppliers"}, method: http.MethodGet,
		url: c.url(erp.ServiceBusinessPartner, "A_Supplier")}
	_, err := c.do(context.Background(), r, nil)
	return err
}

// pingWrite is a write to the supplier invoice service, after a CSRF token
// fetch.
func pingWrite(c *Client) error {
	r := request{call: retry.Call{Service: erp.ServiceSupplierInvoice, Operation: "post invoice", Write: true},
		method: http.MethodPost, url: c.url(erp.ServiceSupplierInvoice, "Post", param{"SupplierInvoice", "'5105600101'"})}
	_, err := c.write(context.Background(), r, nil)
	return err
}

// pki is a CA with a server and a client certificate signed by it, as PEM
// files in a directory.
type pki struct {
	dir                           string
	ca                            *x509.Certificate
	caKey                         *ecdsa.PrivateKey
	caFile                        string
	serverCert                    tls.Certificate
	clientCertFile, clientKeyFile string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.caKey = newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "erpgate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", der)

	serverKey := newKey(t)
	serverDER := p.sign(t, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, serverKey)
	p.serverCert = tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}

	clientKey := newKey(t)
	clientDER := p.sign(t, &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "ERPGATE_COMM_USER"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, clientKey)
	p.clientCertFile = p.write(t, "client.pem", "CERTIFICATE", clientDER)
	kb, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKeyFile = p.write(t, "client-key.pem", "EC PRIVATE KEY", kb)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (p *pki) sign(t *testing.T, tmpl *x509.Certificate, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mtlsServer is an ERP that requires a client certificate of the CA and
// answers with the subject of the certificate it got.
func (p *pki) mtlsServer(t *testing.T) *httptest.Server {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			writeJSON(w, http.StatusUnauthorized, `{}`)
			return
		}
		w.Header().Set("X-Client-Subject", r.TLS.PeerCertificates[0].Subject.CommonName)
		writeJSON(w, http.StatusOK, okJSON)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the test's
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func quickRunner() *retry.Runner { return retry.New(oneAttempt(2*time.Second), nil) }

func TestBasicAuthentication(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ERPGATE_SVC" || p != "s3cret" {
			writeJSON(w, http.StatusUnauthorized, `{}`)
			return
		}
		writeJSON(w, http.StatusOK, okJSON)
	})
	if err := ping(f.client(Options{User: "ERPGATE_SVC", Password: "s3cret"})); err != nil {
		t.Fatalf("with the credentials: %v", err)
	}
	err := ping(f.client(Options{User: "ERPGATE_SVC", Password: "wrong"}))
	var up *erp.UpstreamError
	if !errors.As(err, &up) || up.Status != http.StatusUnauthorized || !up.Config || up.Transient {
		t.Fatalf("with a wrong password: %v, want a non-transient 401 marked as configuration", err)
	}
	// The CSRF fetch carries the credentials too.
	for _, s := range f.requests {
		if s.header.Get("Authorization") == "" {
			t.Errorf("%s %s went without credentials", s.method, s.path)
		}
	}
}

func TestClientCertificate(t *testing.T) {
	p := newPKI(t)
	srv := p.mtlsServer(t)
	cfg, err := ClientTLS(p.clientCertFile, p.clientKeyFile, p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(srv.URL, Options{TLS: cfg, Runner: quickRunner()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(c); err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}

	// Without a client certificate the server refuses the handshake.
	noCert, err := ClientTLS("", "", p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err = New(srv.URL, Options{TLS: noCert, Runner: quickRunner()})
	if err != nil {
		t.Fatal(err)
	}
	err = ping(c)
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Config || up.Transient || up.Status != 0 {
		t.Fatalf("without a client certificate: %v (%+v), want a configuration fault", err, up)
	}

	// Without the private CA the ERP's certificate is not trusted.
	untrusted, err := ClientTLS(p.clientCertFile, p.clientKeyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err = New(srv.URL, Options{TLS: untrusted, Runner: quickRunner()})
	if err != nil {
		t.Fatal(err)
	}
	err = ping(c)
	if !errors.As(err, &up) || !up.Config || up.Transient {
		t.Fatalf("without the CA: %v, want a configuration fault", err)
	}
}

func TestClientTLSFiles(t *testing.T) {
	p := newPKI(t)
	if _, err := ClientTLS(p.clientCertFile, "", ""); err == nil {
		t.Error("a certificate without its key was accepted")
	}
	if _, err := ClientTLS(p.clientCertFile, p.caFile, ""); err == nil {
		t.Error("a certificate with a key that is no key was accepted")
	}
	notPEM := filepath.Join(p.dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ClientTLS("", "", notPEM); err == nil {
		t.Error("a CA bundle without a certificate was accepted")
	}
	if _, err := New("https://s4.example.com", Options{TLS: &tls.Config{}, HTTPClient: http.DefaultClient}); err == nil {
		t.Error("Options.TLS with Options.HTTPClient was accepted")
	}
	if _, err := New("https://s4.example.com", Options{OAuth2: &clientcredentials.Config{}, User: "u"}); err == nil {
		t.Error("Options.OAuth2 with Options.User was accepted")
	}
}

// tokenServer is an OAuth 2.0 token endpoint for the client credentials
// grant that issues tok-1, tok-2, … valid for expiresIn seconds.
type tokenServer struct {
	srv       *httptest.Server
	expiresIn int
	refuse    bool // answer 401 invalid_client

	mu     sync.Mutex
	issued []string
	scopes []string
}

func newTokenServer(t *testing.T, expiresIn int) *tokenServer {
	t.Helper()
	ts := &tokenServer{expiresIn: expiresIn}
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.FormValue("client_id"), r.FormValue("client_secret")
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if ts.refuse || r.FormValue("grant_type") != "client_credentials" || id != "erpgate-client" || secret != "client-s3cret" {
			writeJSON(w, http.StatusUnauthorized, `{"error":"invalid_client","error_description":"Bad credentials"}`)
			return
		}
		tok := fmt.Sprintf("tok-%d", len(ts.issued)+1)
		ts.issued = append(ts.issued, tok)
		ts.scopes = append(ts.scopes, r.FormValue("scope"))
		body, _ := json.Marshal(map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": ts.expiresIn})
		writeJSON(w, http.StatusOK, string(body))
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

// current is the token last issued; "" before any.
func (ts *tokenServer) current() string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.issued) == 0 {
		return ""
	}
	return ts.issued[len(ts.issued)-1]
}

func (ts *tokenServer) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.issued)
}

func (ts *tokenServer) config() *clientcredentials.Config {
	return &clientcredentials.Config{ClientID: "erpgate-client", ClientSecret: "client-s3cret",
		TokenURL: ts.srv.URL + "/oauth/token", Scopes: []string{"API_SUPPLIERINVOICE_PROCESS_SRV_0001"}}
}

// bearerERP is an ERP that accepts only the token the endpoint issued last.
func bearerERP(t *testing.T, ts *tokenServer) *fakeSAP {
	return newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+ts.current() || ts.current() == "" {
			writeJSON(w, http.StatusUnauthorized, `{"error":{"code":"/IWFND/CM_CONSUMER/004","message":{"lang":"en","value":"Token expired"}}}`)
			return
		}
		writeJSON(w, http.StatusOK, okJSON)
	})
}

func TestOAuth2ClientCredentials(t *testing.T) {
	ts := newTokenServer(t, 3600)
	f := bearerERP(t, ts)
	c := f.client(Options{OAuth2: ts.config()})
	for i := range 3 {
		if err := ping(c); err != nil {
			t.Fatalf("read %d: %v", i+1, err)
		}
	}
	// One token serves every call until it expires.
	if n := ts.count(); n != 1 {
		t.Errorf("%d tokens fetched for three reads, want 1", n)
	}
	if ts.scopes[0] != "API_SUPPLIERINVOICE_PROCESS_SRV_0001" {
		t.Errorf("scope %q", ts.scopes[0])
	}
	// The CSRF fetch and the write carry it too.
	f.handle = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			writeJSON(w, http.StatusUnauthorized, `{}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"d":{}}`)
	}
	if err := pingWrite(c); err != nil {
		t.Fatalf("write: %v", err)
	}
	for _, s := range f.requests {
		if got := s.header.Get("Authorization"); got != "Bearer tok-1" {
			t.Errorf("%s %s carried %q, want the bearer token", s.method, s.path, got)
		}
	}
}

func TestOAuth2RefreshesAnExpiredToken(t *testing.T) {
	// The library renews a token ten seconds before its expiry: one issued
	// for eleven seconds serves for one.
	ts := newTokenServer(t, 11)
	f := bearerERP(t, ts)
	c := f.client(Options{OAuth2: ts.config()})
	for i := range 2 {
		if err := ping(c); err != nil {
			t.Fatalf("read %d: %v", i+1, err)
		}
	}
	if n := ts.count(); n != 1 {
		t.Fatalf("%d tokens for two reads within the token's life, want 1", n)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := ping(c); err != nil {
		t.Fatalf("read after the expiry: %v", err)
	}
	if n := ts.count(); n != 2 {
		t.Errorf("%d tokens after the first expired, want 2", n)
	}
	var got []string
	for _, s := range f.requests {
		got = append(got, s.header.Get("Authorization"))
	}
	if fmt.Sprint(got) != "[Bearer tok-1 Bearer tok-1 Bearer tok-2]" {
		t.Errorf("the ERP saw %q, want tok-1 twice, then the renewed tok-2", got)
	}
}

func TestOAuth2TokenRefused(t *testing.T) {
	ts := newTokenServer(t, 3600)
	ts.refuse = true
	f := bearerERP(t, ts)
	// Three attempts allowed: a refused client must not use them.
	c := f.client(Options{OAuth2: ts.config(), Runner: retry.New(retry.Policy{AttemptTimeout: 2 * time.Second,
		MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }}, nil)})
	err := ping(c)
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Config || up.Transient {
		t.Fatalf("got %v, want a configuration fault", err)
	}
	if len(f.requests) != 0 {
		t.Errorf("the ERP got %d requests without a token", len(f.requests))
	}
	if strings.Contains(up.Operation+string(up.Service), "s3cret") {
		t.Errorf("the error names the secret: %+v", up)
	}

	// A token endpoint that is down is transient, as the ERP would be.
	ts.srv.Close()
	err = ping(c)
	if !errors.As(err, &up) || up.Config || !up.Transient {
		t.Fatalf("token endpoint down: %v (%+v), want a transient failure", err, up)
	}
}

// TestAuthorizationIsTheGateways: an Authorization header the request
// carries is replaced by the gateway's own credentials, or dropped.
func TestAuthorizationIsTheGateways(t *testing.T) {
	f := newFake(t, respond(http.StatusOK, okJSON))
	// An API key, and an OAuth access token (a JWT) an agent signed in with.
	const jwt = "eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJl"
	for _, opts := range []Options{{}, {User: "ERPGATE_SVC", Password: "pw"}} {
		c := f.client(opts)
		for _, agent := range []string{"Bearer agent-key", "Bearer " + jwt} {
			r := request{call: retry.Call{Service: erp.ServiceBusinessPartner, Operation: "read supplier"}, method: http.MethodGet,
				url:    c.url(erp.ServiceBusinessPartner, entityKey("A_Supplier", "100042")),
				header: http.Header{"Authorization": {agent}}}
			if _, err := c.do(context.Background(), r, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range f.requests {
		if got := s.header.Get("Authorization"); strings.Contains(got, "agent-key") || strings.Contains(got, jwt) {
			t.Errorf("the ERP got the agent's credentials: %q", got)
		}
	}
}
