package api_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/internal/logtest"
	"github.com/erpgate/erpgate/api/runs/redistest"
)

func TestRateLimitPerClient(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) {
		o.RateLimit, o.RateWindow = 3, time.Minute
		o.Credentials = []api.Credential{credential(t, "a", "key-a", "read"), credential(t, "b", "key-b", "read")}
	}))
	for i := 0; i < 3; i++ {
		if r := s.do("GET", "/suppliers/100042", nil, "X-API-Key: key-a"); r.status != 200 {
			t.Fatalf("call %d: %d", i, r.status)
		}
	}
	r := s.do("GET", "/suppliers/100042", nil, "X-API-Key: key-a")
	d := wantError(t, r, 429, "RATE_LIMITED", "hold_and_recheck")
	if r.json(t)["retryable"] != true || d["retry_after_s"] == nil || r.header.Get("Retry-After") == "" {
		t.Errorf("rate limited: %s Retry-After %q", r.body, r.header.Get("Retry-After"))
	}
	// Another client has its own window.
	if r := s.do("GET", "/suppliers/100042", nil, "X-API-Key: key-b"); r.status != 200 {
		t.Errorf("client b: %d", r.status)
	}
}

func TestPostScope(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) {
		o.PostScope = true
		o.Credentials = []api.Credential{credential(t, "preparer", "k-prep", "read", "write"),
			credential(t, "poster", "k-post", "read", "write", "post")}
	}))
	d := wantError(t, s.do("POST", "/invoices/5105600101/post", map[string]any{}, "X-API-Key: k-prep"), 409, "SCOPE_MISSING", "route_to_person")
	if d["scope"] != "post" {
		t.Errorf("details %v, want scope post", d)
	}
	if r := s.do("POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "post_as_invoiced",
		"justification": "Matched."}, "X-API-Key: k-prep"); r.status != 200 {
		t.Errorf("a write client still requests approvals: %d", r.status)
	}
	wantError(t, s.do("POST", "/invoices/5105600101/post", map[string]any{}, "X-API-Key: k-post"), 409, "APPROVAL_MISSING", "request_approval")
}

func TestProtectedOpsEndpoints(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) {
		o.ProtectOps = true
		o.Credentials = []api.Credential{credential(t, "ops", "k-ops", "read")}
	}))
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		wantError(t, s.do("GET", p, nil), 401, "UNAUTHENTICATED", "stop_and_escalate")
		if r := s.do("GET", p, nil, "Authorization: Bearer k-ops"); r.status != 200 {
			t.Errorf("%s with a key: %d", p, r.status)
		}
	}
	open := newStack(t, withOptions(func(o *api.Options) {
		o.Credentials = []api.Credential{credential(t, "ops", "k-ops", "read")}
	}))
	if r := open.do("GET", "/healthz", nil); r.status != 200 {
		t.Errorf("open /healthz: %d", r.status)
	}
}

func TestLogsNameTheCallWithoutSecrets(t *testing.T) {
	var logs logtest.Lines
	s := newStack(t, withOptions(func(o *api.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		o.Credentials = []api.Credential{credential(t, "agent", "sk-live-4f9a", "read", "write")}
	}))
	key := "Authorization: Bearer sk-live-4f9a"
	id := s.do("POST", "/invoices/5105600109/approvals", map[string]any{"proposed_action": "post_as_invoiced",
		"justification": "Matched."}, key, "X-Run-Id: run-log-1").json(t)["approval_id"]
	s.do("POST", "/invoices/5105600109/post", map[string]any{"approval_id": id}, key, "X-Run-Id: run-log-1", "X-Request-Id: req-log-1")
	_, text := logs.Take(t)
	var line string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, `"request_id":"req-log-1"`) {
			line = l
		}
	}
	for _, want := range []string{`"run_id":"run-log-1"`, `"operation":"post_invoice"`, `"code":"PERIOD_CLOSED"`,
		`"client":"agent"`, `"erp_message_ids":["F5/201"]`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line lacks %s: %s", want, line)
		}
	}
	if strings.Contains(text, "sk-live-4f9a") {
		t.Error("the API key appears in the logs")
	}
}

// TestRateLimitsSharedByReplicas: with SharedCounts, a client's limit and
// a source's failed authentications are counted across two replicas as
// one: three calls spread over both spend a limit of three, and two bad
// keys on each side spend a failure limit of three.
func TestRateLimitsSharedByReplicas(t *testing.T) {
	rc := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rc.Close() })
	shared := withOptions(func(o *api.Options) {
		o.RateLimit, o.AuthFailLimit, o.RateWindow = 3, 3, time.Minute
		o.SharedCounts = rc
		o.Credentials = []api.Credential{credential(t, "a", "key-a", "read"), credential(t, "b", "key-b", "read")}
	})
	a := newStack(t, shared)
	b := a.twin(shared)
	for i, s := range []*stack{a, b, a} {
		if r := s.do("GET", "/suppliers/100042", nil, "X-API-Key: key-a"); r.status != 200 {
			t.Fatalf("call %d: %d %s", i+1, r.status, r.body)
		}
	}
	d := wantError(t, b.do("GET", "/suppliers/100042", nil, "X-API-Key: key-a"), 429, "RATE_LIMITED", "hold_and_recheck")
	if d["retry_after_s"] == nil {
		t.Errorf("details %v", d)
	}
	if r := b.do("GET", "/suppliers/100042", nil, "X-API-Key: key-b"); r.status != 200 {
		t.Errorf("client b on the other replica: %d", r.status)
	}

	for i, s := range []*stack{a, b, a} {
		wantError(t, s.do("GET", "/suppliers/100042", nil, "X-API-Key: wrong-"+string(rune('1'+i))), 401, "UNAUTHENTICATED", "stop_and_escalate")
	}
	wantError(t, b.do("GET", "/suppliers/100042", nil, "X-API-Key: wrong-4"), 429, "RATE_LIMITED", "hold_and_recheck")
}
