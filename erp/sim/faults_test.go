package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
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

// TestFaultSlowStatus: a status fault with delay_ms answers its 503 only
// after the delay, as an ERP that fails slowly does.
func TestFaultSlowStatus(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.admin(http.MethodPost, "/sim/admin/faults", map[string]any{"service": "*", "status": 503, "delay_ms": 50})
	start := time.Now()
	r := e.get(supplierPath)
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("slow 503: answered after %v, want at least 50ms", took)
	}
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("slow 503: got %d, want 503", r.status)
	}
	if r := e.get(supplierPath); r.status != http.StatusOK {
		t.Errorf("after the fault: got %d, want 200", r.status)
	}
}

func TestFaultLostWrite(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.token(invSrv)
	e.admin(http.MethodPost, "/sim/admin/faults", map[string]any{"service": "supplier_invoice", "kind": "lost"})
	h := map[string]string{"X-CSRF-Token": e.token(invSrv)}
	if _, err := e.try(http.MethodPost, invSrv+postPath("5105600101", "2026"), nil, h); err == nil {
		t.Fatalf("lost: got an answer, want a transport error")
	}
	if n := len(e.sim.Ledger().Postings); n != 1 {
		t.Fatalf("postings after lost answer: got %d, want 1", n)
	}
	// The posting stood although its answer was lost: SAP answers a
	// repeat by the document, already posted.
	wantError(t, e.postInvoice("5105600101", "2026"), http.StatusBadRequest, "M8/255")
	if n := len(e.sim.Ledger().Postings); n != 1 {
		t.Errorf("postings after the repeat: got %d, want 1", n)
	}
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
	wantError(t, e.postInvoice("5105600101", "2026"), 503, "/IWFND/CM_BEC/026")
	if n := len(e.sim.Ledger().Postings); n != 0 {
		t.Fatalf("postings after 503: got %d, want 0", n)
	}
	if r := e.postInvoice("5105600101", "2026"); r.status != http.StatusOK {
		t.Errorf("retry: got %d, want 200", r.status)
	}
}

func TestFaultMethodAndPath(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.token(invSrv)
	e.token(poSrv)
	invoice := invSrv + "/A_SupplierInvoice(SupplierInvoice='5105600101',FiscalYear='2026')"
	if err := e.sim.InjectFaults(
		sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultStatus, Status: 502, Method: "post", Count: -1},
		sim.FaultRule{Kind: sim.FaultStatus, Status: 504, Path: "Post", Count: -1},
		sim.FaultRule{Service: erp.ServicePurchaseOrder, Kind: sim.FaultStatus, Status: 500, Method: "GET", Path: "A_PurchaseOrder", Count: -1},
	); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		send   func() reply
		status int
	}{
		{"GET under a POST-only rule", func() reply { return e.get(invoice) }, 200},
		{"POST under a POST-only rule", func() reply { return e.postInvoice("5105600101", "2026") }, 502},
		{"POST of another path under a Post rule", func() reply {
			return e.post(poSrv, "/A_PurchaseOrder", map[string]string{})
		}, 405},
		{"Post on another service root", func() reply {
			return e.post(poSrv, "/Post", nil)
		}, 504},
		{"GET matching method and path", func() reply { return e.get(poSrv + "/A_PurchaseOrder('4500018822')") }, 500},
		{"GET of another path", func() reply { return e.get(poSrv + "/$metadata") }, 200},
		{"CSRF fetch", func() reply {
			return e.do(http.MethodGet, poSrv+"/", nil, map[string]string{"X-CSRF-Token": "Fetch"})
		}, 200},
	}
	for _, s := range steps {
		if r := s.send(); r.status != s.status {
			t.Errorf("%s: got %d, want %d: %s", s.name, r.status, s.status, r.body)
		}
	}
	stats := e.sim.FaultStats()
	if len(stats) != 3 {
		t.Fatalf("stats: got %+v", stats)
	}
	if stats[0].Method != "POST" || stats[0].Matched != 1 || stats[0].Injected != 1 {
		t.Errorf("POST rule: got %+v, want method POST, 1 matched, 1 injected", stats[0])
	}
	if stats[1].Matched != 1 || stats[1].Injected != 1 || stats[2].Injected != 1 {
		t.Errorf("path rules: got %+v and %+v", stats[1], stats[2])
	}
	if n := len(e.sim.Ledger().Postings); n != 0 {
		t.Errorf("postings: got %d, want 0", n)
	}
}

// keepAliveClient sends many requests quickly; status faults leave the
// connection usable.
func keepAliveClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// statuses sends n GETs of path and returns which were answered 503.
func statuses(t *testing.T, url string, n int) []bool {
	t.Helper()
	c := keepAliveClient(t)
	out := make([]bool, n)
	for i := range out {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			out[i] = true
		default:
			t.Fatalf("request %d: got %d", i, resp.StatusCode)
		}
	}
	return out
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func TestFaultProbability(t *testing.T) {
	const n, short = 1000, 200
	rule := sim.FaultRule{Service: erp.ServiceBusinessPartner, Kind: sim.FaultStatus, Status: 503, Probability: 0.3}
	run := func(opts sim.Options, viaAdmin bool, n int) ([]bool, *env) {
		if !viaAdmin {
			opts.Faults = []sim.FaultRule{rule}
		}
		e := newEnv(t, opts)
		if viaAdmin {
			e.admin(http.MethodPost, "/sim/admin/faults", rule)
		}
		return statuses(t, e.url+supplierPath, n), e
	}
	first, e := run(sim.Options{Seed: 42}, false, n)
	if got := countTrue(first); got < 250 || got > 350 {
		t.Errorf("p=0.3 over %d requests: got %d faults, want 250-350", n, got)
	}
	if st := e.sim.FaultStats(); len(st) != 1 || st[0].Matched != n || st[0].Injected != countTrue(first) || st[0].Count != -1 {
		t.Errorf("stats: got %+v", st)
	}
	if again, _ := run(sim.Options{Seed: 42}, true, n); !slices.Equal(first, again) {
		t.Errorf("same seed, rule added by admin: the sequences differ")
	}
	if other, _ := run(sim.Options{Seed: 43}, false, short); slices.Equal(first[:short], other) {
		t.Errorf("seeds 42 and 43 gave the same sequence")
	}
	zero, _ := run(sim.Options{}, false, short)
	if one, _ := run(sim.Options{Seed: 1}, false, short); !slices.Equal(zero, one) {
		t.Errorf("seed 0 and seed 1 gave different sequences")
	}

	// ClearFaults restarts the sequence from the seed.
	e.sim.ClearFaults()
	if err := e.sim.InjectFault(rule); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, e.url+supplierPath, short); !slices.Equal(first[:short], got) {
		t.Errorf("after ClearFaults: the sequence differs from a fresh server's")
	}

	limited := rule
	limited.Probability, limited.Count = 0.5, 5
	e = newEnv(t, sim.Options{Faults: []sim.FaultRule{limited}})
	if got := countTrue(statuses(t, e.url+supplierPath, 100)); got != 5 {
		t.Errorf("count=5: got %d faults, want 5", got)
	}
	if st := e.sim.FaultStats(); len(st) != 0 {
		t.Errorf("used-up rule still in force: %+v", st)
	}

	always := rule
	always.Probability = 1
	e = newEnv(t, sim.Options{Faults: []sim.FaultRule{always}})
	if got := countTrue(statuses(t, e.url+supplierPath, 20)); got != 20 {
		t.Errorf("p=1: got %d faults of 20", got)
	}
}

func TestFaultSchedule(t *testing.T) {
	e := newEnv(t, sim.Options{Faults: []sim.FaultRule{{Service: erp.ServiceBusinessPartner, Kind: sim.FaultStatus, Schedule: "..x"}}})
	got := statuses(t, e.url+supplierPath, 12)
	for i, faulted := range got {
		if want := i%3 == 2; faulted != want {
			t.Errorf("request %d: faulted %v, want %v", i+1, faulted, want)
		}
	}
	if st := e.sim.FaultStats(); len(st) != 1 || st[0].Matched != 12 || st[0].Injected != 4 {
		t.Errorf("stats: got %+v", st)
	}

	// Requests the rule does not match leave its place in the schedule.
	e = newEnv(t, sim.Options{})
	e.admin(http.MethodPost, "/sim/admin/faults", map[string]any{"service": "*", "status": 503, "path": "A_Supplier(", "schedule": "x.", "count": 2})
	other := bpSrv + "/A_Supplier"
	steps := []struct {
		path string
		want int
	}{{supplierPath, 503}, {other, 200}, {supplierPath, 200}, {other, 200}, {supplierPath, 503}, {supplierPath, 200}, {supplierPath, 200}}
	for i, s := range steps {
		if r := e.get(s.path); r.status != s.want {
			t.Errorf("step %d %s: got %d, want %d", i+1, s.path, r.status, s.want)
		}
	}
	if st := e.sim.Faults(); len(st) != 0 {
		t.Errorf("rule with count 2 still in force after 2 faults: %+v", st)
	}
}

func TestFaultRetryAfterDate(t *testing.T) {
	tests := []struct {
		rule sim.FaultRule
		want time.Time
	}{
		{sim.FaultRule{Kind: sim.FaultStatus, Status: 503, RetryAfterS: 120, RetryAfterDate: true}, clock.Add(120 * time.Second)},
		{sim.FaultRule{Kind: sim.FaultStatus, Status: 429, RetryAfterDate: true}, clock.Add(time.Second)},
		{sim.FaultRule{Kind: sim.FaultStatus, Status: 502, RetryAfterS: 5, RetryAfterDate: true}, clock.Add(5 * time.Second)},
	}
	for _, tt := range tests {
		e := newEnv(t, sim.Options{Faults: []sim.FaultRule{tt.rule}})
		r := e.get(supplierPath)
		if r.status != tt.rule.Status {
			t.Errorf("%+v: got %d", tt.rule, r.status)
		}
		header := r.header.Get("Retry-After")
		got, err := http.ParseTime(header)
		if err != nil || !got.Equal(tt.want) || header != tt.want.Format(http.TimeFormat) {
			t.Errorf("%+v: Retry-After %q (%v), want %q", tt.rule, header, err, tt.want.Format(http.TimeFormat))
		}
	}
}

func TestParseFaults(t *testing.T) {
	tests := []struct {
		spec string
		want []sim.FaultRule
	}{
		{"", nil},
		{" ; ", nil},
		{
			"purchase_order:status=503,p=0.3;supplier_invoice:kind=lost,method=POST,path=Post,count=1;*:kind=hang,delay_ms=5000,schedule=..x",
			[]sim.FaultRule{
				{Service: erp.ServicePurchaseOrder, Status: 503, Probability: 0.3},
				{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultLost, Method: "POST", Path: "Post", Count: 1},
				{Service: sim.AnyService, Kind: sim.FaultHang, DelayMS: 5000, Schedule: "..x"},
			},
		},
		{
			" business_partner : Kind=STATUS , status = 429 , retry_after_s=7, retry_after_date, include_fetch=false, probability=1, count=-1 ;",
			[]sim.FaultRule{{Service: erp.ServiceBusinessPartner, Kind: sim.FaultStatus, Status: 429, RetryAfterS: 7, RetryAfterDate: true, Probability: 1, Count: -1}},
		},
		{"material_document:kind=reset,include_fetch,", []sim.FaultRule{{Service: erp.ServiceMaterialDocument, Kind: sim.FaultReset, IncludeFetch: true}}},
		{"*:kind=malformed,path=A_PurchaseOrder('4500018822')", []sim.FaultRule{{Service: sim.AnyService, Kind: sim.FaultMalformed, Path: "A_PurchaseOrder('4500018822')"}}},
	}
	for _, tt := range tests {
		got, err := sim.ParseFaults(tt.spec)
		if err != nil {
			t.Errorf("ParseFaults(%q): %v", tt.spec, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseFaults(%q):\n got %+v\nwant %+v", tt.spec, got, tt.want)
		}
		if err := sim.New(sim.Options{}).InjectFaults(got...); err != nil {
			t.Errorf("InjectFaults(ParseFaults(%q)): %v", tt.spec, err)
		}
	}
}

func TestParseFaultsErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"kind=hang", `fault rule 1 "kind=hang": want "service:key=value,..."`},
		{":kind=hang", "empty service"},
		{"purchase_order:kind=hang;payroll:kind=hang", `fault rule 2 "payroll:kind=hang": unknown service "payroll"`},
		{"process:kind=reset", `unknown service "process"`},
		{"*:kind=explode", `unknown fault kind "explode"`},
		{"*:kind=hang,colour=red", `unknown key "colour"`},
		{"*:kind=hang,p=1.5", `invalid probability "1.5"`},
		{"*:kind=hang,p=0", `invalid probability "0"`},
		{"*:kind=hang,probability=lots", `invalid probability "lots"`},
		{"*:kind=hang,p=0.5,schedule=x.", "probability and schedule exclude each other"},
		{"*:kind=hang,schedule=..y", `invalid schedule "..y"`},
		{"*:kind=hang,schedule=...", "never injects"},
		{"*:status=200", "invalid status 200"},
		{"*:status=503,kind=hang", "status goes with kind=status"},
		{"*:count=2", "no kind"},
		{"*:kind=hang,count=two", `invalid count "two"`},
		{"*:kind=hang,delay_ms=-5", "negative delay_ms"},
		{"*:kind=hang,kind=reset", `repeated key "kind"`},
		{"*:kind=hang,p=0.5,probability=0.5", `repeated key "probability"`},
		{"*:kind=hang,path=", `key "path" needs a value`},
		{"*:kind=hang,method=PSOT", `unknown method "PSOT"`},
		{"*:kind=status,include_fetch=maybe", `invalid include_fetch "maybe"`},
	}
	for _, tt := range tests {
		rules, err := sim.ParseFaults(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "sim: fault rule ") {
			t.Errorf("ParseFaults(%q): got %v, want an error containing %q", tt.spec, err, tt.want)
		}
		if rules != nil {
			t.Errorf("ParseFaults(%q): got rules %+v with the error", tt.spec, rules)
		}
	}
}

func TestInjectFaultsValidation(t *testing.T) {
	s := sim.New(sim.Options{})
	bad := []sim.FaultRule{
		{Kind: sim.FaultHang, Probability: -0.1},
		{Kind: sim.FaultHang, Probability: 1.01},
		{Kind: sim.FaultHang, Probability: math.NaN()},
		{Kind: sim.FaultHang, Probability: 0.5, Schedule: "x"},
		{Kind: sim.FaultHang, Schedule: "."},
		{Kind: sim.FaultHang, Method: "FETCH"},
	}
	for _, r := range bad {
		if err := s.InjectFault(r); err == nil {
			t.Errorf("InjectFault(%+v): got nil error", r)
		}
	}
	if err := s.InjectFaults(sim.FaultRule{Kind: sim.FaultReset}, sim.FaultRule{Kind: "meltdown"}); err == nil || !strings.Contains(err.Error(), "rule 2") {
		t.Errorf("InjectFaults with a bad second rule: got %v", err)
	}
	if n := len(s.Faults()); n != 0 {
		t.Errorf("rules in force after a failed InjectFaults: got %d, want 0", n)
	}
}
