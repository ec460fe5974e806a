package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/cmd/erpgate/internal/conformance"
)

// startGateway runs the gateway on free ports and returns its base URL.
func startGateway(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	args = append([]string{"-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-log-format", "text", "-data-dir", t.TempDir()}, args...)
	line := runGateway(t, env, 1, args...)[0]
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q does not say where it listens", line)
	}
	return m[1]
}

// runGateway runs the gateway with args until the test ends and returns
// the first n lines it prints.
func runGateway(t *testing.T, env map[string]string, n int, args ...string) []string {
	t.Helper()
	return startLines(t, n, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, args, func(k string) string { return env[k] }, stdout, io.Discard)
	})
}

// startLines runs start until the test ends and returns the first n lines
// it prints.
func startLines(t *testing.T, n int, start func(ctx context.Context, stdout io.Writer) error) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- start(ctx, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(25 * time.Second):
			t.Error("the gateway did not shut down")
		}
	})
	out := bufio.NewReader(pr)
	lines := make([]string, n)
	for i := range lines {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("start line %d: %v", i+1, err)
		}
		lines[i] = line
	}
	go io.Copy(io.Discard, out)
	return lines
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestRunServesTheEmbeddedERP(t *testing.T) {
	base := startGateway(t, nil)
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	code, body := get(t, base+"/invoices/5105600101")
	if code != 200 || !strings.Contains(string(body), `"invoice_id":"5105600101"`) {
		t.Fatalf("get_invoice: %d %s", code, body)
	}
	code, body = get(t, base+"/invoices/5105600999")
	if code != 404 || !strings.Contains(string(body), `"code":"INVOICE_NOT_FOUND"`) {
		t.Fatalf("unknown invoice: %d %s", code, body)
	}
	_, body = get(t, base+"/metrics")
	if !strings.Contains(string(body), `erpgate_outcomes_total{code="INVOICE_NOT_FOUND",operation="get_invoice"} 1`) {
		t.Error("/metrics does not count the INVOICE_NOT_FOUND")
	}
	_, body = get(t, base+"/openapi.json")
	var doc struct {
		OpenAPI string `json:"openapi"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.OpenAPI != "3.0.3" || len(doc.Servers) != 1 ||
		!strings.HasPrefix(doc.Servers[0].URL, "http://localhost:") {
		t.Errorf("/openapi.json: %v %+v", err, doc)
	}
	if code, body := get(t, base+"/openapi.yaml"); code != 200 || !strings.Contains(string(body), "openapi: 3.0.3") {
		t.Errorf("/openapi.yaml: %d", code)
	}
	if code, body := get(t, base+"/swagger.json"); code != 200 || !strings.Contains(string(body), `"operationId":"GetInvoice"`) {
		t.Errorf("/swagger.json: %d %.200s", code, body)
	}
}

func TestRunTakesSettingsFromTheEnvironment(t *testing.T) {
	base := startGateway(t, map[string]string{"ERPGATE_PUBLIC_URL": "https://erpgate.example.com"})
	_, body := get(t, base+"/openapi.json")
	if !strings.Contains(string(body), `"url":"https://erpgate.example.com"`) {
		t.Errorf("public URL not in the contract: %.200s", body)
	}
}

func TestRunInjectsConfiguredFaults(t *testing.T) {
	base := startGateway(t, map[string]string{"ERPGATE_SIM_FAULTS": "purchase_order:status=503,retry_after_s=45"},
		"-erp-attempts", "1")
	code, body := get(t, base+"/purchase-orders/4500018822")
	if code != 503 || !strings.Contains(string(body), `"retry_after_s":45`) {
		t.Errorf("with a 503 fault: %d %s", code, body)
	}
	if code, _ := get(t, base+"/purchase-orders/4500018822"); code != 200 {
		t.Errorf("after the one fault: %d", code)
	}
}

func TestConfigErrors(t *testing.T) {
	var stderr strings.Builder
	_, err := parseConfig([]string{"-erp-timeout", "soon", "-run-budget", "0", "-log-level", "loud", "-debug-addr", "0.0.0.0:6060"},
		func(k string) string {
			return map[string]string{"ERPGATE_ERP_URL": "not a url", "ERPGATE_API_KEYS": "bot:abc:read",
				"ERPGATE_SIM_FAULTS": "po:colour=red"}[k]
		}, &stderr)
	if err == nil {
		t.Fatal("bad settings accepted")
	}
	for _, want := range []string{"-erp-timeout (ERPGATE_ERP_TIMEOUT)", "-run-budget", "-log-level", "-erp-url", "-api-keys", "-sim-faults", "-debug-addr"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestRunServesProfilesApart checks -debug-addr: the profiles answer on
// their own loopback listener and never on the API's.
func TestRunServesProfilesApart(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:6060": true, "localhost:0": true, "[::1]:6060": true,
		"0.0.0.0:6060": false, ":6060": false, "10.0.0.5:6060": false, "127.0.0.1": false} {
		if isLoopback(addr) != ok {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, !ok, ok)
		}
	}

	lines := runGateway(t, nil, 2, "-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-debug-addr", "127.0.0.1:0", "-data-dir", t.TempDir())
	first, second := lines[0], lines[1]
	api := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(first)
	prof := regexp.MustCompile(`profiles on (http://127\.0\.0\.1:\d+)/debug/pprof/`).FindStringSubmatch(second)
	if api == nil || prof == nil {
		t.Fatalf("start lines %q %q do not say where the API and the profiles are", first, second)
	}
	if code, body := get(t, prof[1]+"/debug/pprof/"); code != 200 || !strings.Contains(string(body), "goroutine") {
		t.Errorf("profile index: %d %.100s", code, body)
	}
	if code, body := get(t, prof[1]+"/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(string(body), "heap profile") {
		t.Errorf("heap profile: %d %.100s", code, body)
	}
	if code, _ := get(t, api[1]+"/debug/pprof/"); code != 404 {
		t.Errorf("the API serves /debug/pprof/: %d, want 404", code)
	}
	if code, _ := get(t, prof[1]+"/invoices/5105600101"); code != 404 {
		t.Errorf("the profiles listener serves the API: %d, want 404", code)
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var stderr strings.Builder
	_, err := parseConfig([]string{"-h"}, func(string) string { return "" }, &stderr)
	if err == nil {
		t.Fatal("-h did not stop")
	}
	for _, s := range settings {
		if !strings.Contains(stderr.String(), "-"+s.name+" (env "+s.env) {
			t.Errorf("-h does not document -%s", s.name)
		}
	}
}

// TestREADMEListsEverySetting holds the settings guide, cmd/erpgate/README.md,
// to a row for every setting.
func TestREADMEListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		row := "| `-" + s.name + "` | `" + s.env + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("cmd/erpgate/README.md's settings table has no row for -%s (%s)", s.name, s.env)
		}
	}
}

// TestRunDispatchesEval checks that "erpgate eval" hands its arguments
// and writers to the eval; what the eval prints is checked in its package.
func TestRunDispatchesEval(t *testing.T) {
	var gotArgs []string
	var gotOut io.Writer
	defer func(run func(context.Context, []string, func(string) string, io.Writer, io.Writer) error) {
		runEval = run
	}(runEval)
	runEval = func(_ context.Context, args []string, _ func(string) string, stdout, _ io.Writer) error {
		gotArgs, gotOut = args, stdout
		_, err := io.WriteString(stdout, "total: 11 cases, loops: 0, expected: 11/11\n")
		return err
	}
	var out strings.Builder
	if err := run(context.Background(), []string{"eval", "-json"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatalf("erpgate eval: %v\n%s", err, out.String())
	}
	if strings.Join(gotArgs, " ") != "-json" || gotOut != io.Writer(&out) {
		t.Errorf("the eval got arguments %q and stdout %v", gotArgs, gotOut)
	}
	if !strings.Contains(out.String(), "expected: 11/11") {
		t.Errorf("erpgate eval printed:\n%s", out.String())
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/erpgate.env"
	if err := os.WriteFile(path, []byte("# test\nERPGATE_RUN_BUDGET=7\nERPGATE_LOG_LEVEL=warn\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ERPGATE_LOG_LEVEL": "debug"}
	c, err := parseConfig([]string{"-config", path}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The file sets what nothing else does; the environment wins over it.
	if c.runLimits.Budget != 7 || c.logLevel != "debug" {
		t.Errorf("budget %d log level %s, want 7 from the file and debug from the environment", c.runLimits.Budget, c.logLevel)
	}
	c, err = parseConfig([]string{"-config=" + path, "-run-budget", "9"}, func(string) string { return "" }, io.Discard)
	if err != nil || c.runLimits.Budget != 9 {
		t.Errorf("a flag over the file: budget %d, %v", c.runLimits.Budget, err)
	}
	if err := os.WriteFile(path, []byte("ERPGATE_RUN_BUGDET=7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseConfig(nil, func(k string) string { return map[string]string{"ERPGATE_CONFIG": path}[k] }, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "ERPGATE_RUN_BUGDET is not a setting") {
		t.Errorf("a typo in the file: %v", err)
	}
}

func TestRunServesTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	line := runGateway(t, nil, 1, "-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-tls-cert", certFile, "-tls-key", keyFile, "-data-dir", t.TempDir())[0]
	m := regexp.MustCompile(`listening on (https://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q", line)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(m[1] + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("https /healthz: %d %+v", resp.StatusCode, resp.TLS)
	}
	if _, err := http.Get("http" + strings.TrimPrefix(m[1], "https") + "/healthz"); err == nil {
		// A plain-HTTP request to a TLS listener gets a 400 from net/http,
		// never the API: acceptable, as long as it is not served.
		t.Log("plain HTTP answered by the TLS listener's error page")
	}
}

func writeSelfSigned(t *testing.T, dir string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := dir+"/cert.pem", dir+"/key.pem"
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestRunServesMCP(t *testing.T) {
	base := startGateway(t, nil)
	var out strings.Builder
	if err := conformance.Run(context.Background(), []string{"-url", base + "/mcp"}, nil, &out, io.Discard); err != nil {
		t.Fatalf("conformance against the gateway's /mcp: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "outcomes intact") {
		t.Errorf("conformance printed:\n%s", out.String())
	}
}
