package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
)

func TestConfigERPAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	// Without settings: no authentication; with a user, basic.
	c, err := parseEnv(nil)
	if err != nil || c.erpAuth != sap.AuthNone || c.sapClient != "" || c.erpTLS != nil || c.erpOAuth2 != nil {
		t.Errorf("defaults: %q %q %v %v, %v", c.erpAuth, c.sapClient, c.erpTLS, c.erpOAuth2, err)
	}
	c, err = parseEnv(map[string]string{"ERPGATE_ERP_USER": "ERPGATE_SVC", "ERPGATE_SAP_CLIENT": "100"})
	if err != nil || c.erpAuth != sap.AuthBasic || c.sapClient != "100" {
		t.Errorf("with a user: %q %q, %v", c.erpAuth, c.sapClient, err)
	}
	// X.509: the key pair is read, and the CA bundle with it.
	c, err = parseEnv(nil, "-addr", "127.0.0.1:8080", "-erp-url", "https://s4.example.com", "-erp-auth", "mtls", "-erp-client-cert", certFile,
		"-erp-client-key", keyFile, "-erp-ca", certFile)
	if err != nil || c.erpTLS == nil || len(c.erpTLS.Certificates) != 1 || c.erpTLS.RootCAs == nil {
		t.Errorf("mtls: %+v, %v", c.erpTLS, err)
	}
	// A private CA alone, with basic authentication.
	c, err = parseEnv(map[string]string{"ERPGATE_ERP_USER": "u", "ERPGATE_ERP_CA": certFile})
	if err != nil || c.erpTLS == nil || c.erpTLS.RootCAs == nil || len(c.erpTLS.Certificates) != 0 {
		t.Errorf("basic with a CA: %+v, %v", c.erpTLS, err)
	}
	// OAuth 2.0: the secret from the environment, the scopes split.
	c, err = parseEnv(map[string]string{"ERPGATE_ERP_CLIENT_SECRET": " s3cret "}, "-erp-auth", "oauth2",
		"-erp-token-url", "https://tenant.authentication.eu10.hana.ondemand.com/oauth/token", "-erp-client-id", "sb-erpgate",
		"-erp-scopes", "API_A_0001, API_B_0001 API_C")
	if err != nil || c.erpOAuth2 == nil || c.erpOAuth2.ClientSecret != " s3cret " || c.erpOAuth2.ClientID != "sb-erpgate" ||
		fmt.Sprint(c.erpOAuth2.Scopes) != "[API_A_0001 API_B_0001 API_C]" {
		t.Errorf("oauth2: %+v, %v", c.erpOAuth2, err)
	}

	bad := []refusedSettings{
		{"sap-client of two digits", nil, []string{"-sap-client", "10"}, []string{"-sap-client (ERPGATE_SAP_CLIENT)"}},
		{"sap-client not digits", nil, []string{"-sap-client", "1OO"}, []string{"-sap-client"}},
		{"unknown way", nil, []string{"-erp-auth", "kerberos"}, []string{"-erp-auth (ERPGATE_ERP_AUTH)"}},
		{"basic without a user", nil, []string{"-erp-auth", "basic"}, []string{"-erp-user"}},
		{"none with a user", nil, []string{"-erp-auth", "none", "-erp-user", "u"}, []string{"-erp-user"}},
		{"mtls without files", nil, []string{"-erp-url", "https://s4.example.com", "-erp-auth", "mtls"},
			[]string{"-erp-client-cert", "-erp-client-key"}},
		{"mtls over http", nil, []string{"-erp-url", "http://s4.example.com", "-erp-auth", "mtls", "-erp-client-cert", certFile,
			"-erp-client-key", keyFile}, []string{"-erp-auth"}},
		{"mtls with a user", nil, []string{"-erp-url", "https://s4.example.com", "-erp-auth", "mtls", "-erp-client-cert", certFile,
			"-erp-client-key", keyFile, "-erp-user", "u"}, []string{"-erp-user"}},
		{"mtls with a missing key file", nil, []string{"-erp-url", "https://s4.example.com", "-erp-auth", "mtls",
			"-erp-client-cert", certFile, "-erp-client-key", filepath.Join(dir, "nope.pem")}, []string{"-erp-client-cert"}},
		{"a CA file without certificates", nil, []string{"-erp-ca", keyFile}, []string{"-erp-ca"}},
		{"a client certificate with basic", map[string]string{"ERPGATE_ERP_USER": "u"}, []string{"-erp-client-cert", certFile},
			[]string{"-erp-client-cert"}},
		{"oauth2 without its settings", nil, []string{"-erp-auth", "oauth2"},
			[]string{"-erp-token-url", "-erp-client-id", "-erp-client-secret"}},
		{"oauth2 with a relative token URL", map[string]string{"ERPGATE_ERP_CLIENT_SECRET": "s"},
			[]string{"-erp-auth", "oauth2", "-erp-token-url", "/oauth/token", "-erp-client-id", "c"}, []string{"-erp-token-url"}},
		{"oauth2 with a user", map[string]string{"ERPGATE_ERP_CLIENT_SECRET": "s"}, []string{"-erp-auth", "oauth2",
			"-erp-token-url", "https://t.example.com/oauth/token", "-erp-client-id", "c", "-erp-user", "u"}, []string{"-erp-user"}},
		{"a client secret with basic", map[string]string{"ERPGATE_ERP_CLIENT_SECRET": "s", "ERPGATE_ERP_USER": "u"}, nil,
			[]string{"-erp-client-secret"}},
	}
	checkRefused(t, bad)
}

// parseEnv reads the settings of args with env as the environment.
func parseEnv(env map[string]string, args ...string) (config, error) {
	return parseConfig(args, func(k string) string { return env[k] }, io.Discard)
}

// refusedSettings are settings parseEnv must refuse: its error names each of
// names (a setting, or what it says of one) and never the secret s3cret.
type refusedSettings struct {
	name  string
	env   map[string]string
	args  []string
	names []string
}

func checkRefused(t *testing.T, bad []refusedSettings) {
	t.Helper()
	for _, tt := range bad {
		_, err := parseEnv(tt.env, tt.args...)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		for _, n := range tt.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("%s: error %q does not name %q", tt.name, err, n)
			}
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: error %q shows the secret", tt.name, err)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the gateway's log writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startGatewayLogged is startGateway with the log kept.
func startGatewayLogged(t *testing.T, env map[string]string, args ...string) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	args = append([]string{"-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-log-format", "text", "-data-dir", t.TempDir()}, args...)
	line := startLines(t, 1, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, args, func(k string) string { return env[k] }, stdout, logs)
	})[0]
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q does not say where it listens", line)
	}
	return m[1], logs
}

// call sends a request to the gateway with the headers ("Name: value").
func call(t *testing.T, method, url string, headers ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// readiness reads /readyz.
func readiness(t *testing.T, base string) (int, map[string]any) {
	t.Helper()
	code, body := get(t, base+"/readyz")
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("/readyz %d %s: %v", code, body, err)
	}
	return code, m
}

// TestRunAuthenticatesWithOAuth2 runs the gateway against an ERP that
// accepts only the bearer token of its token endpoint: the agent's own
// credentials never reach the ERP, every call carries the sap-client.
func TestRunAuthenticatesWithOAuth2(t *testing.T) {
	const agentKey = "sk-agent-writer-0001"
	var mu sync.Mutex
	issued := 0
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		if id == "" {
			id, secret = r.FormValue("client_id"), r.FormValue("client_secret")
		}
		if r.FormValue("grant_type") != "client_credentials" || id != "sb-erpgate" || secret != "oauth-s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		mu.Lock()
		issued++
		tok := fmt.Sprintf("erp-token-%d", issued)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600}`, tok)
	}))
	t.Cleanup(tokens.Close)

	simulator := sim.New(sim.Options{})
	var seen []string // Authorization headers the ERP got
	var clients []string
	erpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		clients = append(clients, r.URL.Query().Get("sap-client"))
		want := fmt.Sprintf("Bearer erp-token-%d", issued)
		mu.Unlock()
		if r.Header.Get("Authorization") != want {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		simulator.ServeHTTP(w, r)
	}))
	t.Cleanup(erpSrv.Close)

	sum := sha256.Sum256([]byte(agentKey))
	base, logs := startGatewayLogged(t, map[string]string{"ERPGATE_ERP_CLIENT_SECRET": "oauth-s3cret"},
		"-erp-url", erpSrv.URL, "-erp-auth", "oauth2", "-erp-token-url", tokens.URL+"/oauth/token", "-erp-client-id", "sb-erpgate",
		"-sap-client", "100", "-api-keys", "agent:"+hex.EncodeToString(sum[:])+":read+write")

	code, body := call(t, "GET", base+"/invoices/5105600101", "Authorization: Bearer "+agentKey)
	if code != 200 || !strings.Contains(string(body), `"invoice_id":"5105600101"`) {
		t.Fatalf("get_invoice: %d %s", code, body)
	}
	if code, body := call(t, "GET", base+"/invoices/5105600101", "X-API-Key: "+agentKey); code != 200 {
		t.Fatalf("get_invoice with X-API-Key: %d %s", code, body)
	}
	code, ready := readiness(t, base)
	erpStates, _ := ready["erp"].(map[string]any)
	if code != 200 || ready["status"] != "ready" || erpStates["supplier_invoice"] != "ok" || len(erpStates) != 4 {
		t.Errorf("/readyz %d %v, want ready with the four services ok", code, ready)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the ERP got no request")
	}
	for i, auth := range seen {
		if strings.Contains(auth, agentKey) || !strings.HasPrefix(auth, "Bearer erp-token-") {
			t.Errorf("ERP request %d carried Authorization %q, want the gateway's own token", i, auth)
		}
		if clients[i] != "100" {
			t.Errorf("ERP request %d had sap-client %q, want 100", i, clients[i])
		}
	}
	if issued != 1 {
		t.Errorf("%d tokens fetched, want one for every call", issued)
	}
	if strings.Contains(logs.String(), "oauth-s3cret") || strings.Contains(logs.String(), agentKey) {
		t.Errorf("the log shows a secret:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "erp services") || !strings.Contains(logs.String(), "auth=oauth2") {
		t.Errorf("the log does not say what the ERP's services answered:\n%s", logs)
	}
}

// TestRunAuthenticatesWithAClientCertificate runs the gateway against an
// ERP behind TLS that requires a client certificate of a private CA.
func TestRunAuthenticatesWithAClientCertificate(t *testing.T) {
	dir := t.TempDir()
	caKey, ca, caFile := newTestCA(t, dir)
	serverCert := issue(t, ca, caKey, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, dir, "server")
	clientCertFile, clientKeyFile := issueFiles(t, ca, caKey, &x509.Certificate{SerialNumber: big.NewInt(3),
		Subject: pkix.Name{CommonName: "ERPGATE_COMM"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, dir, "client")

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	simulator := sim.New(sim.Options{})
	erpSrv := httptest.NewUnstartedServer(simulator)
	erpSrv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	erpSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	erpSrv.StartTLS()
	t.Cleanup(erpSrv.Close)

	base := startGateway(t, nil, "-erp-url", erpSrv.URL, "-erp-auth", "mtls", "-erp-client-cert", clientCertFile,
		"-erp-client-key", clientKeyFile, "-erp-ca", caFile)
	if code, body := get(t, base+"/invoices/5105600101"); code != 200 {
		t.Fatalf("get_invoice over mTLS: %d %s", code, body)
	}
	if _, ready := readiness(t, base); ready["status"] != "ready" {
		t.Errorf("/readyz %v, want ready", ready)
	}

	// Without the client certificate the ERP refuses the gateway: a fault
	// of configuration, named as one.
	other := startGateway(t, map[string]string{"ERPGATE_ERP_USER": "u"}, "-erp-url", erpSrv.URL, "-erp-ca", caFile)
	code, body := get(t, other+"/invoices/5105600101")
	if code != 502 || !strings.Contains(string(body), `"code":"ERP_CONFIGURATION"`) || strings.Contains(string(body), "127.0.0.1") {
		t.Errorf("without the client certificate: %d %s, want ERP_CONFIGURATION naming no host", code, body)
	}
	_, ready := readiness(t, other)
	if ready["status"] != "degraded" || ready["erp"].(map[string]any)["purchase_order"] != sap.ServiceTLSFailed {
		t.Errorf("/readyz %v, want degraded with tls_failed", ready)
	}
}

// TestRunStartsWithTheERPDown: a gateway whose ERP does not answer starts
// all the same, says so in the log and in /readyz, and stays in the load
// balancer.
func TestRunStartsWithTheERPDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	down := srv.URL
	srv.Close()
	base, logs := startGatewayLogged(t, nil, "-erp-url", down, "-erp-attempts", "1")
	code, ready := readiness(t, base)
	states, _ := ready["erp"].(map[string]any)
	if code != 200 || ready["status"] != "degraded" || states["supplier_invoice"] != sap.ServiceUnreachable || len(states) != 4 {
		t.Errorf("/readyz %d %v, want 200 degraded with every service unreachable", code, ready)
	}
	if !strings.Contains(logs.String(), "not every service is usable") || !strings.Contains(logs.String(), "supplier_invoice=unreachable") {
		t.Errorf("the log does not say the ERP is down:\n%s", logs)
	}
}

func newTestCA(t *testing.T, dir string) (*ecdsa.PrivateKey, *x509.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "erpgate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, ca, path
}

// issueFiles signs a certificate of tmpl with the CA and writes it and its
// key as PEM files; it returns their paths.
func issueFiles(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, dir, name string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter, tmpl.KeyUsage = time.Now().Add(-time.Hour), time.Now().Add(time.Hour), x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// issue is issueFiles loaded as a tls.Certificate.
func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, dir, name string) tls.Certificate {
	t.Helper()
	certFile, keyFile := issueFiles(t, ca, caKey, tmpl, dir, name)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}
