package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
)

const supplierPath = bpSrv + "/A_Supplier('100042')"

func TestFaultResponses(t *testing.T) {
	tests := []struct {
		name        string
		rule        map[string]any
		status      int
		contentType string
		retryAfter  string
		code        string // envelope code; "" when the body is not an envelope
		body        string // substring of the body
	}{
		{name: "503", rule: map[string]any{"kind": "status", "status": 503}, status: 503, contentType: "application/json", code: "/IWFND/CM_BEC/026"},
		{name: "503 with retry", rule: map[string]any{"kind": "status", "status": 503, "retry_after_s": 3}, status: 503, contentType: "application/json", retryAfter: "3", code: "/IWFND/CM_BEC/026"},
		{name: "429", rule: map[string]any{"kind": "status", "status": 429, "retry_after_s": 2}, status: 429, contentType: "application/json", retryAfter: "2", code: "/IWFND/CM_CONSUMER/429"},
		{name: "429 default retry", rule: map[string]any{"kind": "status", "status": 429}, status: 429, contentType: "application/json", retryAfter: "1", code: "/IWFND/CM_CONSUMER/429"},
		{name: "status defaults to 503", rule: map[string]any{"kind": "status"}, status: 503, contentType: "application/json", code: "/IWFND/CM_BEC/026"},
		{name: "504", rule: map[string]any{"kind": "status", "status": 504}, status: 504, contentType: "application/json", code: "/IWFND/CM_BEC/026"},
		{name: "html500", rule: map[string]any{"kind": "html500"}, status: 500, contentType: "text/html", body: "<html><body><h1>500</h1>Connection timed out</body></html>"},
		{name: "malformed", rule: map[string]any{"kind": "malformed"}, status: 200, contentType: "application/json", body: `{"d":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, sim.Options{})
			tt.rule["service"] = "business_partner"
			e.admin(http.MethodPost, "/sim/admin/faults", tt.rule)
			r := e.get(supplierPath)
			if r.status != tt.status || !strings.HasPrefix(r.header.Get("Content-Type"), tt.contentType) {
				t.Fatalf("got %d %q, want %d %q: %s", r.status, r.header.Get("Content-Type"), tt.status, tt.contentType, r.body)
			}
			if got := r.header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After: got %q, want %q", got, tt.retryAfter)
			}
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
			}
			if !strings.Contains(string(r.body), tt.body) {
				t.Errorf("body: got %s, want it to contain %s", r.body, tt.body)
			}
			if tt.name == "malformed" && json.Valid(r.body) {
				t.Errorf("malformed body is valid JSON: %s", r.body)
			}
			if r := e.get(supplierPath); r.status != http.StatusOK {
				t.Errorf("request after the fault: got %d, want 200", r.status)
			}
		})
	}
}

func TestFaultReset(t *testing.T) {
	e := newEnv(t, sim.Options{})
	if err := e.sim.InjectFault(sim.FaultRule{Service: erp.ServiceBusinessPartner, Kind: sim.FaultReset}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.try(http.MethodGet, supplierPath, nil, nil); err == nil {
		t.Fatalf("reset: got an answer, want a transport error")
	}
	if r := e.get(supplierPath); r.status != http.StatusOK {
		t.Errorf("after reset: got %d, want 200", r.status)
	}
}

func TestFaultHang(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.admin(http.MethodPost, "/sim/admin/faults", map[string]any{"service": "*", "kind": "hang", "delay_ms": 50})
	start := time.Now()
	r := e.get(supplierPath)
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("hang: answered after %v, want at least 50ms", took)
	}
	if r.status != http.StatusOK {
		t.Errorf("hang: got %d, want 200 after the delay", r.status)
	}

	e.admin(http.MethodPost, "/sim/admin/faults", map[string]any{"service": "*", "kind": "hang", "delay_ms": 30000})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+supplierPath, nil)
	start = time.Now()
	_, err := e.client.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang with client deadline: got %v, want deadline exceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("hang with client deadline: took %v", took)
	}
}

func TestFaultLostWrite(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.token(invSrv)
	e.admin(http.MethodPost, "/sim/admin/faults", map[string]any{"service": "supplier_invoice", "kind": "lost"})
	h := map[string]string{"X-CSRF-Token": e.token(invSrv), "Repeatability-Request-ID": "lost-101"}
	if _, err := e.try(http.MethodPost, invSrv+releasePath("5105600101", "2026"), nil, h); err == nil {
		t.Fatalf("lost: got an answer, want a transport error")
	}
	if n := len(e.sim.Ledger().Postings); n != 1 {
		t.Fatalf("postings after lost answer: got %d, want 1", n)
	}
	r := e.release("5105600101", "2026", "lost-101")
	if r.status != http.StatusOK {
		t.Fatalf("retry with the same id: got %d, want 200 replayed: %s", r.status, r.body)
	}
	if n := len(e.sim.Ledger().Postings); n != 1 {
		t.Errorf("postings after retry: got %d, want 1", n)
	}
	wantError(t, e.release("5105600101", "2026", "other-id"), http.StatusBadRequest, "ZERPGATE/030")
}

func TestFaultMatching(t *testing.T) {
	e := newEnv(t, sim.Options{Faults: []sim.FaultRule{{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 502, Count: 2}}})
	steps := []struct {
		name, path string
		header     map[string]string
		status     int
	}{
		{"other service untouched", supplierPath, nil, 200},
		{"CSRF fetch untouched", poSrv + "/", map[string]string{"X-CSRF-Token": "Fetch"}, 200},
		{"admin untouched", "/sim/admin/ledger", nil, 200},
		{"first", poSrv + "/A_PurchaseOrder('4500018822')", nil, 502},
		{"second", poSrv + "/A_PurchaseOrder('4500018822')", nil, 502},
		{"count used up", poSrv + "/A_PurchaseOrder('4500018822')", nil, 200},
	}
	for _, s := range steps {
		if r := e.do(http.MethodGet, s.path, nil, s.header); r.status != s.status {
			t.Errorf("%s: got %d, want %d", s.name, r.status, s.status)
		}
	}

	e.admin(http.MethodPost, "/sim/admin/faults", map[string]any{"service": "*", "kind": "status", "status": 503, "count": -1, "include_fetch": true})
	for i := range 3 {
		if r := e.do(http.MethodGet, invSrv+"/", nil, map[string]string{"X-CSRF-Token": "Fetch"}); r.status != 503 {
			t.Errorf("unlimited rule, fetch %d: got %d, want 503", i, r.status)
		}
	}
	var listed struct{ Faults []sim.FaultRule }
	if err := json.Unmarshal(e.admin(http.MethodGet, "/sim/admin/faults", nil).body, &listed); err != nil || len(listed.Faults) != 1 || listed.Faults[0].Count != -1 {
		t.Errorf("listed faults: got %+v %v", listed, err)
	}
	e.admin(http.MethodDelete, "/sim/admin/faults", nil)
	if r := e.get(supplierPath); r.status != http.StatusOK {
		t.Errorf("after DELETE: got %d, want 200", r.status)
	}

	e.sim.InjectFault(sim.FaultRule{Kind: sim.FaultHTML500, Count: -1})
	e.sim.ClearFaults()
	if r := e.get(supplierPath); r.status != http.StatusOK {
		t.Errorf("after ClearFaults: got %d, want 200", r.status)
	}

	for _, bad := range []map[string]any{
		{"service": "payroll", "kind": "status"},
		{"service": "*", "kind": "explode"},
		{"service": "*", "kind": "status", "status": 200},
	} {
		if r := e.do(http.MethodPost, "/sim/admin/faults", bad, nil); r.status != http.StatusBadRequest {
			t.Errorf("invalid rule %v: got %d, want 400", bad, r.status)
		}
	}
}

func TestFaultStatusOnWriteAppliesNothing(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.token(invSrv)
	e.sim.InjectFault(sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultStatus, Status: 503})
	wantError(t, e.release("5105600101", "2026", "w-1"), 503, "/IWFND/CM_BEC/026")
	if n := len(e.sim.Ledger().Postings); n != 0 {
		t.Fatalf("postings after 503: got %d, want 0", n)
	}
	if r := e.release("5105600101", "2026", "w-1"); r.status != http.StatusOK {
		t.Errorf("retry: got %d, want 200", r.status)
	}
}
