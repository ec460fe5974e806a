package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/erpgate/erpgate/api"
)

func TestHandoverCarriesTheRunsHistory(t *testing.T) {
	var hits atomic.Int32
	var got []byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The first delivery fails; the gateway retries.
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		got, _ = io.ReadAll(r.Body)
	}))
	defer hook.Close()
	s := newStack(t, withOptions(func(o *api.Options) { o.HandoverWebhook = &api.Webhook{URL: hook.URL} }))
	const run = "X-Run-Id: run-ho-1"
	s.do("GET", "/invoices/5105600103", nil, run)
	wantError(t, s.do("POST", "/invoices/5105600103/three-way-match", nil, run), 404, "PO_NOT_FOUND", "fix_input_and_retry")
	wantError(t, s.do("GET", "/purchase-orders/4500019823", nil, run), 404, "PO_NOT_FOUND", "fix_input_and_retry")

	// No summary at all: the gateway writes one from the run's errors.
	r := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600103", "code": "PO_NOT_FOUND"}, run)
	if r.status != 200 {
		t.Fatalf("hand_over: %d %s", r.status, r.body)
	}
	m := r.json(t)
	summary := m["summary"].(string)
	if m["queue"] != "ap_queue" || m["webhook"] != "delivered" ||
		!strings.Contains(summary, "PO_NOT_FOUND on run_three_way_match") || !strings.Contains(summary, "4500019823") {
		t.Errorf("handover %v", m)
	}
	hos := s.sim.Ledger().Handovers
	if len(hos) != 1 {
		t.Fatalf("ledger has %d handovers", len(hos))
	}
	var history struct {
		RunID  string `json:"run_id"`
		Calls  []any  `json:"calls"`
		Errors []struct {
			Code       string         `json:"code"`
			Message    string         `json:"message"`
			NextAction string         `json:"next_action"`
			Details    map[string]any `json:"details"`
		} `json:"errors"`
		Invoices []struct {
			InvoiceID string `json:"invoice_id"`
			Calls     int    `json:"calls"`
		} `json:"invoices"`
	}
	if err := json.Unmarshal([]byte(hos[0].History), &history); err != nil {
		t.Fatalf("history in the ERP: %v: %q", err, hos[0].History)
	}
	if history.RunID != "run-ho-1" || len(history.Errors) != 2 || history.Errors[0].Code != "PO_NOT_FOUND" ||
		history.Errors[0].Details["po_id"] != "4500019822" || history.Errors[0].Message == "" {
		t.Errorf("history %+v", history)
	}
	if hos[0].Summary != summary {
		t.Errorf("ERP summary %q, want the composed one", hos[0].Summary)
	}
	if hits.Load() != 2 || !strings.Contains(string(got), `"history":{"run_id":"run-ho-1"`) {
		t.Errorf("webhook hits %d, body %s", hits.Load(), got)
	}
	if got := s.counter("erpgate_handovers_total", map[string]string{"queue": "ap_queue"}); got != 1 {
		t.Errorf("handovers metric %v", got)
	}
}

func TestHandoverWebhookDown(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer hook.Close()
	s := newStack(t, withOptions(func(o *api.Options) { o.HandoverWebhook = &api.Webhook{URL: hook.URL, Attempts: 2} }))
	r := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED",
		"summary": "PO 4500018830 is finally invoiced."})
	if m := r.json(t); r.status != 200 || m["webhook"] != "failed" || m["queue"] != "procurement" {
		t.Errorf("hand_over with the webhook down: %d %v", r.status, m)
	}
	if n := len(s.sim.Ledger().Handovers); n != 1 {
		t.Errorf("ledger has %d handovers, want the stored one", n)
	}
}

func TestHandoverNotDoneUnlessStored(t *testing.T) {
	s := newStack(t)
	wantError(t, s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600999", "summary": "Unknown invoice."}),
		404, "INVOICE_NOT_FOUND", "fix_input_and_retry")
	if n := len(s.sim.Ledger().Handovers); n != 0 {
		t.Errorf("ledger has %d handovers", n)
	}
	// An invoice the ERP does not know is handed over with that code.
	r := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600999", "code": "INVOICE_NOT_FOUND",
		"summary": "Invoice 5105600999 from the scanned document is not in the ERP; 5105600099 is not either."})
	if m := r.json(t); r.status != 200 || m["queue"] != "ap_queue" {
		t.Errorf("hand_over of an unknown invoice with INVOICE_NOT_FOUND: %d %s", r.status, r.body)
	}
}
