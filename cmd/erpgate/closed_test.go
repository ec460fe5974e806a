package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/erp/sim"
)

// mainChildEnv makes the test binary run main with these arguments (as
// JSON) instead of the tests: TestRefusalExitsNonZero sees its exit status.
const mainChildEnv = "ERPGATE_TEST_MAIN_ARGS"

// mainChild runs main with the arguments argsJSON holds; main exits with
// its own status when it fails.
func mainChild(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		return 3
	}
	os.Args = append([]string{"erpgate"}, args...)
	main()
	return 0
}

// testKey is a client of -api-keys whose key nobody knows.
const testKey = "bot:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef:read"

// fakeERP is an S/4HANA the gateway reaches over HTTP: the simulator.
func fakeERP(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// startOn runs the gateway with args (which may name an -addr beyond
// loopback) and returns a loopback URL of it, and its log.
func startOn(t *testing.T, env map[string]string, args ...string) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	args = append([]string{"-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-log-format", "text", "-data-dir", t.TempDir()}, args...)
	line := startLines(t, 1, func(ctx context.Context, stdout io.Writer) error {
		return run(ctx, args, func(k string) string { return env[k] }, stdout, logs)
	})[0]
	m := regexp.MustCompile(`listening on http://(?:localhost|127\.0\.0\.1|\[::1\]):(\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q does not say where it listens", line)
	}
	return "http://127.0.0.1:" + m[1], logs
}

// logSays waits up to two seconds for the buffered log to hold want.
func logSays(logs *syncBuffer, want string) bool {
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(logs.String(), want) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// refusal is what the refusal to start without credentials says.
var refusal = []string{"-api-keys (ERPGATE_API_KEYS): must be set", "-oauth-issuer (ERPGATE_OAUTH_ISSUER)",
	"listens beyond loopback", "-open true (ERPGATE_OPEN=true)", `cmd/erpgate/README.md, "Closed by default"`}

// TestClosedByDefault: in front of a real ERP, on an address beyond
// loopback, without credentials and without -open, the gateway does not
// start, and says how to configure authentication.
func TestClosedByDefault(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"every interface", nil, []string{"-addr", ":0", "-erp-url", "https://s4.example.com"}},
		{"every IPv4 interface", nil, []string{"-addr", "0.0.0.0:0", "-erp-url", "https://s4.example.com"}},
		{"one outside address", nil, []string{"-addr", "10.0.0.5:8080", "-erp-url", "https://s4.example.com"}},
		{"from the environment", map[string]string{"ERPGATE_ERP_URL": "https://s4.example.com", "ERPGATE_ADDR": "[::]:8080"}, nil},
		{"-open false", map[string]string{"ERPGATE_OPEN": "true"}, []string{"-addr", ":0", "-erp-url", "https://s4.example.com", "-open", "false"}},
		{"an empty -api-keys", nil, []string{"-addr", ":0", "-erp-url", "https://s4.example.com", "-api-keys", " "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-data-dir", t.TempDir()}, tt.args...)
			var stdout strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := run(ctx, args, func(k string) string { return tt.env[k] }, &stdout, io.Discard)
			if err == nil {
				t.Fatal("started without credentials")
			}
			if _, usage := errors.AsType[*usageError](err); usage {
				t.Errorf("a usage error (exit status 2): %v", err)
			}
			for _, want := range refusal {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not say %q:\n%v", want, err)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("printed %q: it listened", stdout.String())
			}
		})
	}

	// -open beside credentials says two things at once.
	_, err := parseConfig([]string{"-erp-url", "https://s4.example.com", "-open", "true", "-api-keys", testKey},
		func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-open (ERPGATE_OPEN): serves every caller without credentials, but -api-keys") {
		t.Errorf("-open with -api-keys: %v", err)
	}
	_, err = parseConfig([]string{"-open", "true", "-oauth-issuer", "https://login.example.com"}, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-open (ERPGATE_OPEN)") {
		t.Errorf("-open with -oauth-issuer: %v", err)
	}
}

// TestRefusalExitsNonZero runs the command itself: the refusal is on
// stderr, the exit status 1.
func TestRefusalExitsNonZero(t *testing.T) {
	args, _ := json.Marshal([]string{"-addr", ":0", "-erp-url", "https://s4.example.com", "-data-dir", t.TempDir()})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ERPGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, mainChildEnv+"="+string(args))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exit, ok := errors.AsType[*exec.ExitError](err)
	if !ok || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "erpgate: -api-keys (ERPGATE_API_KEYS): ") {
		t.Errorf("stderr %q", stderr.String())
	}
	for _, want := range refusal {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q", stdout.String())
	}
}

// TestLoopbackNeedsNoCredentials: on a loopback address the gateway starts
// in front of a real ERP without credentials, warns that it is open, and
// says so in /readyz and in its contract.
func TestLoopbackNeedsNoCredentials(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "localhost:0", "[::1]:8080", "127.0.0.2:0"} {
		if _, err := parseConfig([]string{"-addr", addr, "-erp-url", "https://s4.example.com"}, func(string) string { return "" }, io.Discard); err != nil {
			t.Errorf("-addr %s: %v", addr, err)
		}
	}

	base, logs := startOn(t, nil, "-erp-url", fakeERP(t))
	if code, body := get(t, base+"/invoices/5105600101"); code != 200 {
		t.Fatalf("get_invoice without a key: %d %s", code, body)
	}
	if _, ready := readiness(t, base); ready["auth"] != "open" || ready["status"] != "ready" {
		t.Errorf("/readyz %v, want ready and auth open", ready)
	}
	if !logSays(logs, "no authentication: the gateway listens on loopback only") {
		t.Errorf("no warning in the log:\n%s", logs)
	}
	wantSecurity(t, base, openSecurity)
}

// TestOpenServesEveryCaller: -open lets the gateway serve a real ERP on
// every interface without credentials; it warns at start, and /readyz
// and the contract say it is open.
func TestOpenServesEveryCaller(t *testing.T) {
	erpURL := fakeERP(t)
	for name, env := range map[string]map[string]string{"flag": nil, "environment": {"ERPGATE_OPEN": "true"}} {
		t.Run(name, func(t *testing.T) {
			args := []string{"-addr", ":0", "-erp-url", erpURL}
			if env == nil {
				args = append(args, "-open=true")
			}
			base, logs := startOn(t, env, args...)
			if code, body := get(t, base+"/invoices/5105600101"); code != 200 {
				t.Fatalf("get_invoice without a key: %d %s", code, body)
			}
			if _, ready := readiness(t, base); ready["auth"] != "open" {
				t.Errorf("/readyz %v, want auth open", ready)
			}
			if !logSays(logs, "level=WARN msg=\"no authentication (-open): every caller that reaches the gateway may call every tool") {
				t.Errorf("no warning in the log:\n%s", logs)
			}
			wantSecurity(t, base, openSecurity)
		})
	}
}

// TestCredentialsCloseTheGateway: with API keys the gateway starts on
// every interface in front of a real ERP and asks for a key, as its
// contract says; with OAuth alone the contract asks for a bearer token.
func TestCredentialsCloseTheGateway(t *testing.T) {
	erpURL := fakeERP(t)
	base, logs := startOn(t, nil, "-addr", ":0", "-erp-url", erpURL, "-api-keys", testKey)
	if code, body := get(t, base+"/invoices/5105600101"); code != 401 || !strings.Contains(string(body), `"code":"UNAUTHENTICATED"`) {
		t.Errorf("get_invoice without a key: %d %s", code, body)
	}
	if _, ready := readiness(t, base); ready["auth"] != "required" {
		t.Errorf("/readyz %v, want auth required", ready)
	}
	wantSecurity(t, base, keysSecurity)

	// An issuer on loopback: /readyz checks that its keys can be had.
	var issuer *httptest.Server
	issuer = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q}`, issuer.URL, issuer.URL+"/keys")
		case "/keys":
			fmt.Fprint(w, `{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(issuer.Close)
	oauth, _ := startOn(t, nil, "-addr", ":0", "-erp-url", erpURL, "-oauth-issuer", issuer.URL)
	if code, ready := readiness(t, oauth); code != 200 || ready["auth"] != "required" {
		t.Errorf("/readyz with OAuth %d %v, want 200, auth required", code, ready)
	}
	wantSecurity(t, oauth, bearerSecurity)
	if logSays(logs, "no authentication") {
		t.Errorf("a gateway with keys warns it is open:\n%s", logs)
	}
}

// TestSimulatorStaysOpen: with the embedded simulator nothing is needed,
// on any address, and nothing is warned; the contract says no key is
// needed.
func TestSimulatorStaysOpen(t *testing.T) {
	base, logs := startOn(t, nil, "-addr", ":0")
	if code, body := get(t, base+"/invoices/5105600101"); code != 200 {
		t.Fatalf("get_invoice: %d %s", code, body)
	}
	if _, ready := readiness(t, base); ready["auth"] != "open" || ready["status"] != "ready" {
		t.Errorf("/readyz %v, want ready and auth open", ready)
	}
	wantSecurity(t, base, openSecurity)
	time.Sleep(2 * logFlushEvery)
	if strings.Contains(logs.String(), "no authentication") {
		t.Errorf("the simulator warns:\n%s", logs)
	}

	// The simulator with keys: the contract as written.
	keyed, _ := startOn(t, nil, "-api-keys", testKey)
	wantSecurity(t, keyed, keysSecurity)
}

// The security of the served contract, as securityOf sums it up.
const (
	openSecurity   = "security {}; schemes "
	keysSecurity   = "security bearer_auth | api_key; schemes api_key bearer_auth"
	bearerSecurity = "security bearer_auth; schemes bearer_auth"
)

// wantSecurity checks the security of the three contract documents the
// gateway at base serves, each of which must load.
func wantSecurity(t *testing.T, base, want string) {
	t.Helper()
	for _, path := range []string{"/openapi.json", "/openapi.yaml"} {
		code, body := get(t, base+path)
		if code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		doc, err := openapi3.NewLoader().LoadFromData(body)
		if err == nil {
			err = doc.Validate(context.Background())
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var schemes []string
		if doc.Components != nil {
			for name := range doc.Components.SecuritySchemes {
				schemes = append(schemes, name)
			}
		}
		if got := securityOf(doc.Security, schemes); got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
	code, body := get(t, base+"/swagger.json")
	var doc openapi2.T
	if err := json.Unmarshal(body, &doc); code != 200 || err != nil || doc.Swagger != "2.0" {
		t.Fatalf("/swagger.json: %d %v", code, err)
	}
	var schemes []string
	for name := range doc.SecurityDefinitions {
		schemes = append(schemes, name)
	}
	if got := securityOf(doc.Security, schemes); got != want {
		t.Errorf("/swagger.json: %s, want %s", got, want)
	}
}

// securityOf sums up a document's security: its requirements in order,
// each the names of its schemes ("{}" for the empty one), then the names
// of the schemes it declares.
func securityOf[R ~map[string][]string](reqs []R, schemes []string) string {
	var alts []string
	for _, r := range reqs {
		var names []string
		for name := range r {
			names = append(names, name)
		}
		slices.Sort(names)
		alts = append(alts, strings.Join(names, " "))
		if len(names) == 0 {
			alts[len(alts)-1] = "{}"
		}
	}
	slices.Sort(schemes)
	return "security " + strings.Join(alts, " | ") + "; schemes " + strings.Join(schemes, " ")
}
