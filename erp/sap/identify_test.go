package sap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap/sapspec"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// recorder serves the simulator and keeps the header of every request.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
	paths   []string
}

func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.headers = append(rec.headers, r.Header.Clone())
		rec.paths = append(rec.paths, r.Method+" "+r.URL.Path)
		rec.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// TestEveryRequestNamesTheGatewayAndTheCall: on the simulator, every
// request of a read, a list, the $metadata reads, the CSRF token
// fetch and a posting carries the gateway's User-Agent and the call's
// request id in both headers.
func TestEveryRequestNamesTheGatewayAndTheCall(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec.wrap(sim.New(sim.Options{})))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, Options{Runner: retry.New(oneAttempt(5*time.Second), nil), HTTPClient: sapspec.CheckedHTTPClient(t),
		Version: "v1.4.2", User: "ERPGATE_SVC", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := erp.WithRequestID(context.Background(), "req-7f3a")
	if _, err := c.ReadMetadata(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(ctx, "5105600101"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GoodsReceipts(ctx, "4500018822", "10"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PostInvoice(ctx, erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "post-ua"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var metadata, fetch, post bool
	for i, h := range rec.headers {
		p := rec.paths[i]
		metadata = metadata || strings.HasSuffix(p, "/$metadata")
		fetch = fetch || h.Get("X-CSRF-Token") == "Fetch"
		post = post || strings.HasPrefix(p, "POST ")
		if got := h.Get("User-Agent"); got != "erpgate/v1.4.2" {
			t.Errorf("%s: User-Agent %q, want erpgate/v1.4.2", p, got)
		}
		if h.Get("X-Request-Id") != "req-7f3a" || h.Get("X-CorrelationID") != "req-7f3a" {
			t.Errorf("%s: X-Request-Id %q, X-CorrelationID %q, want req-7f3a in both", p, h.Get("X-Request-Id"), h.Get("X-CorrelationID"))
		}
	}
	if !metadata || !fetch || !post {
		t.Errorf("requests %v: want $metadata reads, a token fetch and a POST among them", rec.paths)
	}
}

// TestRequestIDOnlyWhenThereIsOne: a call without a request id sends no
// id header, one with an id that cannot be a header value sends none
// either, and the header plain reads share is left as it was.
func TestRequestIDOnlyWhenThereIsOne(t *testing.T) {
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{User: "ERPGATE_SVC", Password: "pw"})
	read := func(ctx context.Context) {
		t.Helper()
		r := request{call: retry.Call{Service: erp.ServiceBusinessPartner, Operation: "read suppliers"}, method: http.MethodGet,
			url: c.url(erp.ServiceBusinessPartner, "A_Supplier")}
		if _, err := c.do(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	read(erp.WithRequestID(context.Background(), "abc"))
	read(context.Background())
	read(erp.WithRequestID(context.Background(), "a\r\nX-Evil: 1"))
	read(erp.WithRequestID(context.Background(), strings.Repeat("x", 129)))
	reqs := f.odata()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if reqs[0].header.Get("X-Request-Id") != "abc" || reqs[0].header.Get("Authorization") == "" {
		t.Errorf("with an id: %v", reqs[0].header)
	}
	for _, s := range reqs[1:] {
		if _, has := s.header["X-Request-Id"]; has || s.header.Get("X-CorrelationID") != "" || s.header.Get("X-Evil") != "" {
			t.Errorf("without a usable id: %v", s.header)
		}
		if !strings.HasPrefix(s.header.Get("User-Agent"), "erpgate/") {
			t.Errorf("User-Agent %q, want erpgate/…", s.header.Get("User-Agent"))
		}
	}
	if _, has := c.readHeader["X-Request-Id"]; has {
		t.Errorf("the shared read header took the id: %v", c.readHeader)
	}
}

// TestUserAgentOfTheTokenRequest: the OAuth 2.0 token endpoint sees the
// gateway's name too.
func TestUserAgentOfTheTokenRequest(t *testing.T) {
	var mu sync.Mutex
	var agents []string
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		agents = append(agents, r.Header.Get("User-Agent"))
		mu.Unlock()
		writeJSON(w, http.StatusOK, `{"access_token":"tok-1","token_type":"bearer","expires_in":3600}`)
	}))
	t.Cleanup(tokens.Close)
	ts := &tokenServer{srv: tokens}
	f := newFake(t, respond(http.StatusOK, okJSON))
	c := f.client(Options{OAuth2: ts.config(), Version: "v2.0.0"})
	if err := ping(c); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(agents) != 1 || agents[0] != "erpgate/v2.0.0" {
		t.Errorf("token requests' User-Agent %q, want one erpgate/v2.0.0", agents)
	}
	if got := f.odata()[0].header.Get("User-Agent"); got != "erpgate/v2.0.0" {
		t.Errorf("ERP request's User-Agent %q", got)
	}
}

func TestUserAgentVersion(t *testing.T) {
	if _, err := New("https://s4.example.com", Options{Version: "1.0 (evil)"}); err == nil {
		t.Error("a version with spaces was accepted")
	}
	c, err := New("https://s4.example.com", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.userAgent[0], "erpgate/"+moduleVersion(); got != want {
		t.Errorf("default User-Agent %q, want %q", got, want)
	}
	tests := []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "devel"},
		{debug.BuildInfo{}, "devel"},
		{debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.0.0"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.3.0"}}}, "v1.3.0"},
		{debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.0.0"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.3.0", Replace: &debug.Module{Path: "../erpgate"}}}}, "v1.3.0"},
		{debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v9.0.0"}}, "devel"},
	}
	for _, tt := range tests {
		if got := versionOf(&tt.info); got != tt.want {
			t.Errorf("versionOf(%+v) = %q, want %q", tt.info.Main, got, tt.want)
		}
	}
}

// TestRequestIDFromTheAPIContext: erp's key reads the id from a context
// that answers it itself, as the API's request context does.
func TestRequestIDFromTheAPIContext(t *testing.T) {
	ctx := answering{Context: context.Background(), id: "req-1"}
	if got := requestID(ctx); len(got) != 1 || got[0] != "req-1" {
		t.Errorf("requestID = %v, want [req-1]", got)
	}
	if got := requestID(context.Background()); got != nil {
		t.Errorf("requestID of a context without one = %v", got)
	}
}

type answering struct {
	context.Context
	id string
}

func (a answering) Value(key any) any {
	if key == (erp.RequestIDKey{}) {
		return &a.id
	}
	return a.Context.Value(key)
}
