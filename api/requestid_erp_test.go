package api_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// TestRequestIDReachesTheERP: the id the gateway answers a request with,
// the caller's or its own, is the one the ERP's requests for it carry.
func TestRequestIDReachesTheERP(t *testing.T) {
	simulator := sim.New(sim.Options{})
	var mu sync.Mutex
	var ids, correlation []string
	erpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("X-Request-Id"))
		correlation = append(correlation, r.Header.Get("X-CorrelationID"))
		mu.Unlock()
		simulator.ServeHTTP(w, r)
	}))
	t.Cleanup(erpSrv.Close)
	runner := retry.New(retry.Policy{AttemptTimeout: 2 * time.Second, MaxAttempts: 1, Breaker: retry.BreakerSettings{Disabled: true}}, nil)
	client, err := sap.New(erpSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.NewServer(api.Options{ERP: client, Records: testRecords(t)})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(srv)
	t.Cleanup(gw.Close)

	for _, sent := range []string{"agent-call-0042", ""} {
		mu.Lock()
		ids, correlation = nil, nil
		mu.Unlock()
		req, _ := http.NewRequest(http.MethodGet, gw.URL+"/invoices/5105600101", nil)
		if sent != "" {
			req.Header.Set("X-Request-Id", sent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		answered := resp.Header.Get("X-Request-Id")
		if resp.StatusCode != http.StatusOK || answered == "" || sent != "" && answered != sent {
			t.Fatalf("sent %q: %d with X-Request-Id %q", sent, resp.StatusCode, answered)
		}
		mu.Lock()
		if len(ids) == 0 {
			t.Errorf("sent %q: no request reached the ERP", sent)
		}
		for i := range ids {
			if ids[i] != answered || correlation[i] != answered {
				t.Errorf("sent %q: the ERP got X-Request-Id %q, X-CorrelationID %q; want %q", sent, ids[i], correlation[i], answered)
			}
		}
		mu.Unlock()
	}
}
