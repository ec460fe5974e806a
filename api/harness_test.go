package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	dto "github.com/prometheus/client_model/go"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sap/sapspec"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/openapi"
	"github.com/erpgate/erpgate/retry"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// stack is the gateway over real HTTP: test client → contract validator →
// api → erp/sap client → erp/sim, each on its own loopback socket.
type stack struct {
	t       *testing.T
	sim     *sim.Server
	simURL  string
	gw      *httptest.Server
	metrics *api.Metrics
	records records.Store
	client  *http.Client
	// clock is the gateway's clock when a test set one.
	clock *clock
}

type stackOption func(*api.Options, *retry.Policy, *sim.Options)

func withOptions(f func(*api.Options)) stackOption {
	return func(o *api.Options, _ *retry.Policy, _ *sim.Options) { f(o) }
}

func withPolicy(f func(*retry.Policy)) stackOption {
	return func(_ *api.Options, p *retry.Policy, _ *sim.Options) { f(p) }
}

func withSim(f func(*sim.Options)) stackOption {
	return func(_ *api.Options, _ *retry.Policy, so *sim.Options) { f(so) }
}

func newStack(t *testing.T, opts ...stackOption) *stack {
	t.Helper()
	s := &stack{t: t}
	s.metrics = api.NewMetrics()
	o := api.Options{Metrics: s.metrics}
	p := retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond}
	var so sim.Options
	for _, f := range opts {
		f(&o, &p, &so)
	}
	if o.Records == nil {
		o.Records, _ = recordstest.SQLite(t)
	}
	if o.DemoPeople == nil {
		o.DemoPeople = demoPeople(t)
	}
	s.records = o.Records
	s.sim = sim.New(so)
	simSrv := httptest.NewServer(s.sim)
	t.Cleanup(simSrv.Close)
	s.simURL = simSrv.URL
	s.startGateway(o, p)
	return s
}

// twin starts a second gateway over the same simulated ERP and the same
// records, as a second replica behind a load balancer would be.
func (s *stack) twin(opts ...stackOption) *stack {
	s.t.Helper()
	o := api.Options{Metrics: api.NewMetrics(), Records: s.records}
	p := retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond}
	var so sim.Options
	for _, f := range opts {
		f(&o, &p, &so)
	}
	if o.DemoPeople == nil {
		o.DemoPeople = demoPeople(s.t)
	}
	tw := &stack{t: s.t, sim: s.sim, simURL: s.simURL, metrics: o.Metrics, records: o.Records}
	tw.startGateway(o, p)
	return tw
}

func (s *stack) startGateway(o api.Options, p retry.Policy) {
	t := s.t
	t.Helper()

	runner := retry.New(p, o.Metrics)
	client, err := sap.New(s.simURL, sap.Options{Runner: runner, HTTPClient: sapspec.CheckedHTTPClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	if o.BreakerStates == nil {
		o.BreakerStates = runner.BreakerStates
	}
	o.ERP = client
	srv, err := api.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	s.gw = httptest.NewServer(srv)
	t.Cleanup(s.gw.Close)
	s.client = &http.Client{Transport: newContractTransport(t, s.gw.URL, s.simURL)}
}

// result is one response as a test sees it.
type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// do sends a request with optional JSON body and headers ("Name: value").
func (s *stack) do(method, path string, body any, headers ...string) result {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.gw.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: raw}
}

// wantError asserts a five-field error with the code, status and next_action.
func wantError(t *testing.T, r result, status int, code, next string) map[string]any {
	t.Helper()
	m := r.json(t)
	if r.status != status || m["code"] != code || m["next_action"] != next {
		t.Fatalf("got %d %v %v, want %d %s %s\n%s", r.status, m["code"], m["next_action"], status, code, next, r.body)
	}
	return m["details"].(map[string]any)
}

// golden compares a body with testdata/golden/name.json, or rewrites the
// file with -update.
func golden(t *testing.T, name string, r result) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s: body is not JSON: %v", name, err)
	}
	got, _ := json.MarshalIndent(map[string]any{"status": r.status, "body": normalize(v)}, "", "  ")
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run go test ./api -run %s -update to create it)", name, err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: body differs from %s\ngot:\n%s\nwant:\n%s", name, path, got, want)
	}
}

var timestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

// normalize replaces values that change from run to run (times) with a
// placeholder, so golden files hold only what is stable.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	case string:
		if timestamp.MatchString(x) {
			return "<time>"
		}
	}
	return v
}

// counter reads one counter of the gateway's registry.
func (s *stack) counter(name string, labels map[string]string) float64 {
	s.t.Helper()
	mfs, err := s.metrics.Registry().Gather()
	if err != nil {
		s.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if matchLabels(m, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func matchLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// contractTransport checks every exchange against openapi.yaml: a response
// off the contract fails the test, a request the contract refuses must not
// succeed, and every error (on any path) must be the five-field shape with
// nothing of the ERP's internals in it.
type contractTransport struct {
	t       *testing.T
	router  routers.Router
	base    http.RoundTripper
	leaks   []string
	mu      sync.Mutex
	matched map[string]bool
}

var (
	contractOnce sync.Once
	contractDoc  *openapi3.T
	contractErr  error
)

func newContractTransport(t *testing.T, gwURL, simURL string) *contractTransport {
	t.Helper()
	contractOnce.Do(func() { contractDoc, contractErr = openapi.LoadSource() })
	if contractErr != nil {
		t.Fatalf("load contract: %v", contractErr)
	}
	doc := *contractDoc
	doc.Servers = openapi3.Servers{{URL: gwURL}}
	router, err := gorillamux.NewRouter(&doc)
	if err != nil {
		t.Fatal(err)
	}
	simHost := strings.TrimPrefix(simURL, "http://")
	return &contractTransport{t: t, router: router, base: http.DefaultTransport, matched: map[string]bool{},
		leaks: []string{simHost, "/sap/opu/odata", "goroutine ", ".go:", "runtime error", "transactionid",
			"innererror", "dial tcp", "context deadline", "/IWBEP/"}}
}

func (c *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	route, params, findErr := c.router.FindRoute(req)
	var input *openapi3filter.RequestValidationInput
	var reqErr error
	if findErr == nil {
		vreq := req.Clone(context.Background())
		vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
		input = &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		reqErr = openapi3filter.ValidateRequest(context.Background(), input)
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := bufferBody(resp)
	if err != nil {
		return nil, err
	}
	where := req.Method + " " + req.URL.Path

	if resp.Header.Get("X-Request-Id") == "" {
		c.t.Errorf("%s: no X-Request-Id on the response", where)
	}
	for _, l := range c.leaks {
		if bytes.Contains(body, []byte(l)) {
			c.t.Errorf("%s: response leaks %q: %s", where, l, body)
		}
	}
	if resp.StatusCode >= 400 {
		checkFiveFields(c.t, where, resp, body)
	}
	if findErr != nil {
		return resp, nil
	}
	c.mu.Lock()
	c.matched[route.Operation.OperationID] = true
	c.mu.Unlock()
	if reqErr != nil && resp.StatusCode < 400 {
		c.t.Errorf("%s: gateway answered %d to a request the contract refuses: %v", where, resp.StatusCode, reqErr)
	}
	rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: resp.StatusCode,
		Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
		c.t.Errorf("%s: response %d is off the contract: %v\n%s", where, resp.StatusCode, err, body)
	}
	return resp, nil
}

var fiveFields = regexp.MustCompile(`^\{"code":"[A-Z_]+","message":".+","retryable":(true|false),"next_action":"[a-z_]+","details":\{.*\}\}\n?$`)

func checkFiveFields(t *testing.T, where string, resp *http.Response, body []byte) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s: error Content-Type %q, want application/problem+json", where, ct)
	}
	if !fiveFields.Match(body) {
		t.Errorf("%s: error body is not the five fields in order: %s", where, body)
	}
}

func pathEscape(s string) string { return url.PathEscape(s) }

// bufferBody reads a response's body and puts it back, readable again, so
// that a check can look at it before the caller does.
func bufferBody(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return body, err
}

// testRecords is a fresh SQLite store of records for one test.
func testRecords(t testing.TB) records.Store {
	s, _ := recordstest.SQLite(t)
	return s
}

// demoPeople are the people of a test gateway without credentials
// (Options.DemoPeople), each known by the key as(name) sends: m.keller
// decides and works the queues, j.doe decides, a.auditor reads the audit
// log.
func demoPeople(t *testing.T) []api.Credential {
	return []api.Credential{
		credential(t, "m.keller", demoKey("m.keller"), api.ScopeApprove, api.ScopeReview),
		credential(t, "j.doe", demoKey("j.doe"), api.ScopeApprove),
		credential(t, "a.auditor", demoKey("a.auditor"), api.ScopeAudit),
	}
}

// demoKey is the API key of the demonstration person name in a test
// gateway.
func demoKey(name string) string { return "demo-key-of-" + name }

// as is the header that makes a call the demonstration person name's.
func as(name string) string { return "X-API-Key: " + demoKey(name) }

// decide records a person's decision on an approval through the gateway,
// as that person.
func (s *stack) decide(id, decision, by string) {
	s.t.Helper()
	r := s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": decision,
		"reason": "Checked against the supplier's statement."}, as(by))
	if r.status != http.StatusOK {
		s.t.Fatalf("decision on %s: %d %s", id, r.status, r.body)
	}
}

// recordCounts is how many records of each kind the gateway keeps.
type recordCounts struct{ holds, approvals, handovers int }

func (s *stack) counts() recordCounts {
	s.t.Helper()
	ctx := context.Background()
	var c recordCounts
	holds, err := s.records.ListHolds(ctx, records.HoldFilter{Page: records.Page{Limit: 500}})
	if err != nil {
		s.t.Fatal(err)
	}
	appr, err := s.records.ListApprovals(ctx, records.ApprovalFilter{Page: records.Page{Limit: 500}})
	if err != nil {
		s.t.Fatal(err)
	}
	hos, err := s.records.ListHandovers(ctx, records.HandoverFilter{Page: records.Page{Limit: 500}})
	if err != nil {
		s.t.Fatal(err)
	}
	c.holds, c.approvals, c.handovers = len(holds), len(appr), len(hos)
	return c
}
