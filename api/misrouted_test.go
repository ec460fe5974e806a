package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/retry"
)

// TestAWrongPathIsNeverNotFound puts the gateway in front of what a wrong
// ERP URL or an unrouted service gives: a Web Dispatcher answering every
// request with its HTML 404 page. No read and no match may be a
// *_NOT_FOUND, which would send a false case to a person's queue: each is
// ERP_CONFIGURATION, not retryable, from one ERP request, naming the
// service and never the host.
func TestAWrongPathIsNeverNotFound(t *testing.T) {
	misrouted(t, http.StatusNotFound, "<html><head><title>404 Not Found</title></head><body><h1>404 Not Found</h1>"+
		"<p>SAP Web Dispatcher: the requested resource is not available.</p></body></html>")
}

// TestALoginPageIsNoOutage puts the gateway in front of an identity
// provider's sign-in page answered 200 to every request, as a system whose
// communication user signs in elsewhere gives: a fault of configuration,
// not an outage to retry.
func TestALoginPageIsNoOutage(t *testing.T) {
	misrouted(t, http.StatusOK, "<!DOCTYPE html><html><head><title>Sign in</title></head><body><form>"+
		"<p>SAP Web Dispatcher: please sign in.</p></form></body></html>")
}

// misrouted sends every read and the match through a gateway whose ERP
// answers every request with status and the page.
func misrouted(t *testing.T, status int, page string) {
	var requests atomic.Int64
	dispatcher := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(dispatcher.Close)
	s := &stack{t: t, simURL: dispatcher.URL, metrics: api.NewMetrics(), records: testRecords(t)}
	s.startGateway(api.Options{Metrics: s.metrics, Records: s.records},
		retry.Policy{AttemptTimeout: time.Second, InitialInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond})

	for _, c := range []struct{ method, path, service string }{
		{"GET", "/invoices/5105600101", "supplier_invoice"},
		{"GET", "/purchase-orders/4500018822", "purchase_order"},
		{"GET", "/suppliers/100042", "business_partner"},
		{"GET", "/suppliers?name=acme", "business_partner"},
		{"GET", "/purchase-orders/4500018822/items/10/goods-receipts", ""},
		{"POST", "/invoices/5105600101/three-way-match", "supplier_invoice"},
	} {
		before := requests.Load()
		r := s.do(c.method, c.path, nil)
		m := r.json(t)
		if r.status != http.StatusBadGateway || m["code"] != "ERP_CONFIGURATION" || m["retryable"] != false || m["next_action"] != "stop_and_escalate" {
			t.Errorf("%s %s: %d %s, want 502 ERP_CONFIGURATION, not retryable", c.method, c.path, r.status, r.body)
			continue
		}
		if strings.Contains(string(r.body), strings.TrimPrefix(dispatcher.URL, "http://")) || strings.Contains(string(r.body), "Dispatcher") {
			t.Errorf("%s %s: the answer names the host or repeats its page: %s", c.method, c.path, r.body)
		}
		if d := m["details"].(map[string]any); c.service != "" && d["service"] != c.service {
			t.Errorf("%s %s: details %v, want service %s", c.method, c.path, d, c.service)
		}
		if n := requests.Load() - before; n < 1 || n > 2 {
			t.Errorf("%s %s: %d ERP requests, want the read(s) once each, no retry", c.method, c.path, n)
		}
	}
}
