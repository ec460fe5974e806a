package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// readyGateway is a gateway over an SAP client of erpHandler, with the
// client, for the tests of /readyz.
func readyGateway(t *testing.T, erpHandler http.Handler) (*sap.Client, func() (int, map[string]any)) {
	t.Helper()
	erpSrv := httptest.NewServer(erpHandler)
	t.Cleanup(erpSrv.Close)
	runner := retry.New(retry.Policy{AttemptTimeout: 2 * time.Second, MaxAttempts: 1, Breaker: retry.BreakerSettings{Disabled: true}}, nil)
	client, err := sap.New(erpSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.NewServer(api.Options{ERP: client, Records: testRecords(t), BreakerStates: runner.BreakerStates})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(srv)
	t.Cleanup(gw.Close)
	return client, func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(gw.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("/readyz %d %s: %v", resp.StatusCode, b, err)
		}
		return resp.StatusCode, m
	}
}

func TestReadyReportsTheERPServices(t *testing.T) {
	client, ready := readyGateway(t, sim.New(sim.Options{}))
	// Before any read of the $metadata there is nothing to report.
	code, m := ready()
	if _, has := m["erp"]; code != 200 || m["status"] != "ready" || has {
		t.Errorf("/readyz before a read: %d %v, want ready without erp", code, m)
	}
	if _, err := client.ReadMetadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, m = ready()
	states, _ := m["erp"].(map[string]any)
	if code != 200 || m["status"] != "ready" || len(states) != 4 || states["supplier_invoice"] != "ok" || states["business_partner"] != "ok" {
		t.Errorf("/readyz: %d %v, want ready with the four services ok", code, m)
	}
}

func TestReadyDegradedByAMissingService(t *testing.T) {
	simulator := sim.New(sim.Options{})
	client, ready := readyGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/API_BUSINESS_PARTNER/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"/IWFND/MED/170","message":{"lang":"en","value":"No service found"}}}`)
			return
		}
		simulator.ServeHTTP(w, r)
	}))
	if _, err := client.ReadMetadata(context.Background()); err == nil {
		t.Fatal("ReadMetadata: no error with a service missing")
	}
	// Still 200: the gateway answers every call with a named code, and a
	// replica taken out of the load balancer could not.
	code, m := ready()
	states, _ := m["erp"].(map[string]any)
	if code != 200 || m["status"] != "degraded" || states["business_partner"] != sap.ServiceNotFound || states["purchase_order"] != "ok" {
		t.Errorf("/readyz: %d %v, want 200 degraded with business_partner not_found", code, m)
	}
	if m["store"] == nil || m["breakers"] == nil {
		t.Errorf("/readyz %v lost the store or the breakers", m)
	}
}
