package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// principalERP records the identity each invoice read is made for.
type principalERP struct {
	erp.Client
	mu    sync.Mutex
	names []string
}

func (p *principalERP) Invoice(ctx context.Context, id string) (erp.Invoice, error) {
	p.mu.Lock()
	p.names = append(p.names, erp.PrincipalFrom(ctx))
	p.mu.Unlock()
	return p.Client.Invoice(ctx, id)
}

// TestCallerNameReachesTheERP: the ERP calls of an operation are made for
// its caller, by its API key's name or its access token's client; an
// anonymous caller names nobody.
func TestCallerNameReachesTheERP(t *testing.T) {
	simSrv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(simSrv.Close)
	runner := retry.New(retry.Policy{AttemptTimeout: 2 * time.Second, MaxAttempts: 1, Breaker: retry.BreakerSettings{Disabled: true}}, nil)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	iss := newTestIssuer(t)
	read := func(opts api.Options, auth string) []string {
		t.Helper()
		rec := &principalERP{Client: client}
		opts.ERP, opts.Records = rec, testRecords(t)
		srv, err := api.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		gw := httptest.NewServer(srv)
		defer gw.Close()
		req, _ := http.NewRequest(http.MethodGet, gw.URL+"/invoices/5105600101", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		return rec.names
	}
	keys := api.Options{Credentials: []api.Credential{credential(t, "ap-agent", oauthAPIKey, "read")},
		OAuth: &api.OAuth{Issuer: iss.srv.URL, Resource: oauthResource}}
	if got := read(keys, "Bearer "+oauthAPIKey); len(got) != 1 || got[0] != "ap-agent" {
		t.Errorf("API key: the ERP call was made for %q, want ap-agent", got)
	}
	tok := iss.sign(t, iss.claims("alice-app", "read"), nil)
	if got := read(keys, "Bearer "+tok); len(got) != 1 || got[0] != "alice-app" {
		t.Errorf("access token: the ERP call was made for %q, want alice-app", got)
	}
	if got := read(api.Options{}, ""); len(got) != 1 || got[0] != "" {
		t.Errorf("anonymous: the ERP call was made for %q, want nobody", got)
	}
}
