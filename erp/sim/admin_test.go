package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
)

func TestAdminEnvelope(t *testing.T) {
	e := newEnv(t, sim.Options{Envelope: sim.EnvelopeV4})
	steps := []struct {
		method, path string
		body         any
		status       int
		form         string
	}{
		{http.MethodGet, "/sim/admin/envelope", nil, 200, "v4"},
		{http.MethodGet, "/sim/admin/envelope?form=v2", nil, 200, "v2"},
		{http.MethodPost, "/sim/admin/envelope", map[string]string{"form": "v2detail"}, 200, "v2detail"},
		{http.MethodPost, "/sim/admin/envelope", map[string]string{"form": "v3"}, 400, "v2detail"},
		{http.MethodGet, "/sim/admin/envelope?form=xml", nil, 400, "v2detail"},
	}
	for _, s := range steps {
		if r := e.do(s.method, s.path, s.body, nil); r.status != s.status {
			t.Errorf("%s %s: got %d, want %d: %s", s.method, s.path, r.status, s.status, r.body)
		}
		if got := e.sim.Envelope(); got != s.form {
			t.Errorf("%s %s: form got %q, want %q", s.method, s.path, got, s.form)
		}
	}
	r := e.get(bpSrv + "/A_Supplier('100999')")
	if !strings.Contains(string(r.body), `"errordetails":{"errordetail":[`) {
		t.Errorf("v2detail body: got %s", r.body)
	}
	if err := e.sim.SetEnvelope("v5"); err == nil {
		t.Errorf("SetEnvelope(v5): got nil error")
	}
}

func TestAdminLedgerAndUnknown(t *testing.T) {
	e := newEnv(t, sim.Options{})
	var l map[string][]map[string]any
	if err := json.Unmarshal(e.admin(http.MethodGet, "/sim/admin/ledger", nil).body, &l); err != nil {
		t.Fatal(err)
	}
	if p, ok := l["postings"]; !ok || p == nil || len(p) != 0 {
		t.Errorf("ledger before any posting: got %v, want an empty postings list", l)
	}
	e.postInvoice("5105600101", "2026")
	l = nil
	if err := json.Unmarshal(e.admin(http.MethodGet, "/sim/admin/ledger", nil).body, &l); err != nil {
		t.Fatal(err)
	}
	if p := l["postings"]; len(p) != 1 || p[0]["invoice_id"] != "5105600101" || p[0]["repeatability_id"] != nil || p[0]["posted_at"] == nil {
		t.Errorf("ledger postings: got %v", p)
	}
	// The ledger keeps only what SAP records itself: postings.
	if len(l) != 1 {
		t.Errorf("ledger: got %v, want postings only", l)
	}
	if r := e.do(http.MethodGet, "/sim/admin/nothing", nil, nil); r.status != http.StatusNotFound {
		t.Errorf("unknown admin path: got %d, want 404", r.status)
	}
	if r := e.do(http.MethodPost, "/sim/admin/approvals/A0000001/decision", `{"decision":"approve"}`, nil); r.status != http.StatusNotFound {
		t.Errorf("approval decision: got %d, want 404 (no such admin endpoint)", r.status)
	}
}

func TestNewPanicsOnInvalidOptions(t *testing.T) {
	for _, opts := range []sim.Options{
		{Envelope: "json"},
		{Faults: []sim.FaultRule{{Kind: "meltdown"}}},
		{Faults: []sim.FaultRule{{Kind: sim.FaultReset, Probability: 2}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v): got no panic", opts)
				}
			}()
			sim.New(opts)
		}()
	}
}

func TestStart(t *testing.T) {
	s := sim.New(sim.Options{})
	url, shutdown, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + supplierPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Acme Industrial Supplies GmbH") {
		t.Errorf("GET via Start: got %d %s", resp.StatusCode, body)
	}

	// A hanging request must not keep shutdown waiting.
	if err := s.InjectFault(sim.FaultRule{Kind: sim.FaultHang, DelayMS: 30000}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(url + supplierPath)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Faults()) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("hang fault never taken")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-done; err == nil {
		t.Errorf("request hanging at shutdown: got an answer, want a transport error")
	}
	if _, _, err := s.Start("127.0.0.1:-1"); err == nil {
		t.Errorf("Start on a bad address: got nil error")
	}
}

func TestAdminFaultsArrayAndListing(t *testing.T) {
	e := newEnv(t, sim.Options{})
	type listing struct{ Faults []sim.FaultStat }
	decode := func(r reply) listing {
		t.Helper()
		var l listing
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatalf("listing: %v: %s", err, r.body)
		}
		return l
	}
	added := decode(e.admin(http.MethodPost, "/sim/admin/faults", []map[string]any{
		{"service": "business_partner", "status": 502, "schedule": "x.", "count": 3},
		{"service": "purchase_order", "kind": "reset", "method": "post", "path": "Post"},
	}))
	if len(added.Faults) != 2 || added.Faults[0].Kind != sim.FaultStatus || added.Faults[1].Method != "POST" {
		t.Fatalf("POST answer: got %+v", added.Faults)
	}
	for range 4 {
		e.get(supplierPath)
	}
	l := decode(e.admin(http.MethodGet, "/sim/admin/faults", nil))
	if len(l.Faults) != 2 {
		t.Fatalf("GET: got %+v", l.Faults)
	}
	if f := l.Faults[0]; f.Matched != 4 || f.Injected != 2 || f.Count != 1 || f.Schedule != "x." {
		t.Errorf("schedule rule: got %+v, want 4 matched, 2 injected, 1 left", f)
	}
	if f := l.Faults[1]; f.Matched != 0 || f.Injected != 0 || f.Count != 1 {
		t.Errorf("unused rule: got %+v", f)
	}
	var raw struct{ Faults []map[string]any }
	if err := json.Unmarshal(e.admin(http.MethodGet, "/sim/admin/faults", nil).body, &raw); err != nil || raw.Faults[1]["injected"] != 0.0 {
		t.Errorf("injected field: got %v %v", raw, err)
	}

	// A listed rule can be posted back as it is.
	e.admin(http.MethodPost, "/sim/admin/faults", raw.Faults[0])
	// The text form, with Content-Type text/plain.
	r := e.do(http.MethodPost, "/sim/admin/faults", "*:kind=hang,delay_ms=1,p=0.5;material_document:status=429", map[string]string{"Content-Type": "text/plain; charset=utf-8"})
	if l := decode(r); r.status != http.StatusOK || len(l.Faults) != 5 || l.Faults[4].Status != 429 || l.Faults[3].Probability != 0.5 {
		t.Errorf("text form: got %d %+v", r.status, l.Faults)
	}

	bad := []struct {
		body   any
		header map[string]string
		want   string
	}{
		{[]map[string]any{{"kind": "reset"}, {"kind": "explode"}}, nil, "rule 2"},
		{map[string]any{"kind": "reset", "probabilty": 0.5}, nil, "unknown field"},
		{map[string]any{"kind": "reset", "probability": 0.5, "schedule": "x"}, nil, "exclude each other"},
		{"[", nil, "invalid body"},
		{`{"kind":"reset"} {"kind":"reset"}`, nil, "data after the rules"},
		{`{"kind":"reset"}]`, nil, "data after the rules"},
		{"", nil, "empty body"},
		{"*:kind=reset,p=2", map[string]string{"Content-Type": "text/plain"}, "invalid probability"},
	}
	for _, b := range bad {
		r := e.do(http.MethodPost, "/sim/admin/faults", b.body, b.header)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), b.want) {
			t.Errorf("POST %v: got %d %s, want 400 with %q", b.body, r.status, r.body, b.want)
		}
	}
	if n := len(e.sim.Faults()); n != 5 {
		t.Errorf("rules after rejected POSTs: got %d, want 5", n)
	}
	empty := decode(e.admin(http.MethodPost, "/sim/admin/faults", []any{}))
	if len(empty.Faults) != 5 {
		t.Errorf("empty array: got %d rules, want 5", len(empty.Faults))
	}
	if l := decode(e.admin(http.MethodDelete, "/sim/admin/faults", nil)); l.Faults == nil || len(l.Faults) != 0 || len(e.sim.FaultStats()) != 0 {
		t.Errorf("DELETE: got %+v", l)
	}
}
