package api_test

import (
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
)

// authProbe sends requests to a gateway as one source address.
type authProbe struct {
	t       *testing.T
	url     string
	client  *http.Client
	metrics *api.Metrics
}

func newAuthProbe(t *testing.T, opts ...func(*api.Options)) *authProbe {
	t.Helper()
	m := api.NewMetrics()
	opts = append([]func(*api.Options){func(o *api.Options) {
		o.Metrics, o.AuthFailLimit, o.RateWindow = m, 5, time.Minute
	}}, opts...)
	_, ts := sweepGateway(t, opts...)
	return &authProbe{t: t, url: ts.URL, client: ts.Client(), metrics: m}
}

// get reads an invoice with the headers given as name, value pairs.
func (p *authProbe) get(header ...string) (int, http.Header, string) {
	p.t.Helper()
	return p.send(http.MethodGet, "/invoices/5105600101", "", header...)
}

func (p *authProbe) send(method, path, body string, header ...string) (int, http.Header, string) {
	p.t.Helper()
	req, _ := http.NewRequest(method, p.url+path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := p.client.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		checkFiveFields(p.t, method+" "+path, resp, raw)
	}
	return resp.StatusCode, resp.Header, string(raw)
}

// failures reads erpgate_auth_failures_total for reason.
func (p *authProbe) failures(reason string) float64 {
	p.t.Helper()
	s := &stack{t: p.t, metrics: p.metrics}
	return s.counter("erpgate_auth_failures_total", map[string]string{"reason": reason})
}

// wantLimited checks a RATE_LIMITED refusal of failed authentications.
func wantLimited(t *testing.T, where string, status int, h http.Header, body string) {
	t.Helper()
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"code":"RATE_LIMITED"`) ||
		!strings.Contains(body, `"reason":"auth_failures"`) || h.Get("Retry-After") == "" {
		t.Errorf("%s: got %d %q %s, want 429 RATE_LIMITED auth_failures with Retry-After", where, status, h.Get("Retry-After"), body)
	}
}

// TestFailedAuthenticationsLimitedPerAddress checks that an address that
// keeps sending wrong or no credentials is answered RATE_LIMITED once its
// failures are spent, that valid credentials from it still pass, and that
// every failure is counted by reason.
func TestFailedAuthenticationsLimitedPerAddress(t *testing.T) {
	p := newAuthProbe(t)
	for i := range 5 {
		if status, _, body := p.get("Authorization", "Bearer wrong-key"); status != 401 {
			t.Fatalf("wrong key %d: status %d, want 401: %s", i+1, status, body)
		}
	}
	status, h, body := p.get("Authorization", "Bearer wrong-key")
	wantLimited(t, "6th wrong key", status, h, body)
	status, h, body = p.get()
	wantLimited(t, "no key after 5 wrong ones", status, h, body)
	status, h, body = p.get("X-API-Key", "another-wrong-key")
	wantLimited(t, "another wrong key", status, h, body)
	if status, _, body := p.get("Authorization", "Bearer "+secWriterKey); status != 200 {
		t.Errorf("valid key from the limited address: status %d, want 200: %s", status, body)
	}
	// The monitoring endpoints, behind keys, count the same way; so does
	// /mcp refusing a request without credentials at the HTTP level.
	status, h, body = p.send(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	wantLimited(t, "/mcp without credentials", status, h, body)

	if got := p.failures("unknown_key"); got != 7 {
		t.Errorf("unknown_key failures %v, want 7", got)
	}
	if got := p.failures("missing"); got != 2 {
		t.Errorf("missing failures %v, want 2", got)
	}
	if got := p.failures("bad_token"); got != 0 {
		t.Errorf("bad_token failures %v, want 0", got)
	}
}

// TestFailedAuthenticationsOverMCP checks that a tool call with a wrong
// key counts against the MCP client's address, and that the limit's
// refusal reaches the model as the five fields.
func TestFailedAuthenticationsOverMCP(t *testing.T) {
	p := newAuthProbe(t)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_invoice","arguments":{"invoice_id":"5105600101"}}}`
	mcpHeaders := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream",
		"Mcp-Protocol-Version", "2025-06-18", "Authorization", "Bearer wrong-key"}
	var last string
	for range 6 {
		status, _, body := p.send(http.MethodPost, "/mcp", call, mcpHeaders...)
		if status != 200 {
			t.Fatalf("tool call: status %d: %s", status, body)
		}
		last = body
	}
	if !strings.Contains(last, `"isError":true`) || !strings.Contains(last, `RATE_LIMITED`) || !strings.Contains(last, `auth_failures`) {
		t.Errorf("6th tool call with a wrong key: %s, want an isError result RATE_LIMITED", last)
	}
	status, h, body := p.get("Authorization", "Bearer wrong-key")
	wantLimited(t, "REST after the MCP failures", status, h, body)
}

// TestFailedAuthenticationsBehindTrustedProxy checks that behind a trusted
// proxy each client address of X-Forwarded-For has its own count, IPv6 by
// its /64, and that without the setting X-Forwarded-For is not believed.
func TestFailedAuthenticationsBehindTrustedProxy(t *testing.T) {
	fail := func(p *authProbe, xff string) int {
		t.Helper()
		status, _, _ := p.get("Authorization", "Bearer wrong-key", "X-Forwarded-For", xff)
		return status
	}
	spend := func(p *authProbe, xff string) {
		t.Helper()
		for i := range 5 {
			if status := fail(p, xff); status != 401 {
				t.Fatalf("%s, failure %d: status %d, want 401", xff, i+1, status)
			}
		}
	}
	trusted := newAuthProbe(t, func(o *api.Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	spend(trusted, "203.0.113.7")
	if status := fail(trusted, "203.0.113.7"); status != 429 {
		t.Errorf("203.0.113.7 after its failures: %d, want 429", status)
	}
	if status := fail(trusted, "203.0.113.8"); status != 401 {
		t.Errorf("203.0.113.8, another client: %d, want 401", status)
	}
	// The last address that is not a trusted proxy is the client's.
	if status := fail(trusted, "203.0.113.7, 127.0.0.9"); status != 429 {
		t.Errorf("203.0.113.7 through a second proxy: %d, want 429", status)
	}
	if status := fail(trusted, "198.51.100.1, 203.0.113.8"); status != 401 {
		t.Errorf("a spoofed first hop before 203.0.113.8: %d, want 401 (203.0.113.8 counts)", status)
	}
	spend(trusted, "2001:db8::1")
	if status := fail(trusted, "2001:db8::2"); status != 429 {
		t.Errorf("2001:db8::2, same /64: %d, want 429", status)
	}
	if status := fail(trusted, "2001:db8:0:1::1"); status != 401 {
		t.Errorf("2001:db8:0:1::1, another /64: %d, want 401", status)
	}

	untrusted := newAuthProbe(t)
	spend(untrusted, "203.0.113.7")
	if status := fail(untrusted, "203.0.113.8"); status != 429 {
		t.Errorf("without trusted proxies X-Forwarded-For was believed: %d, want 429", status)
	}
}
