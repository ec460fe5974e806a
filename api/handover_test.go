package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/records"
)

func TestHandoverCarriesTheRunsHistory(t *testing.T) {
	var (
		hits atomic.Int32
		mu   sync.Mutex
		got  []byte
		ids  []string
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("Webhook-Id"))
		mu.Unlock()
		// The first delivery fails; the outbox tries again.
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		mu.Lock()
		got, _ = io.ReadAll(r.Body)
		mu.Unlock()
	}))
	defer hook.Close()
	s := newStack(t, withOptions(func(o *api.Options) { o.NotifyHandovers = true }))
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
	if m["queue"] != "ap_queue" || m["status"] != "queued" ||
		!strings.Contains(summary, "PO_NOT_FOUND on run_three_way_match") || !strings.Contains(summary, "4500019823") {
		t.Errorf("handover %v", m)
	}
	hos, err := s.records.ListHandovers(context.Background(), records.HandoverFilter{})
	if err != nil || len(hos) != 1 {
		t.Fatalf("records hold %d handovers, %v", len(hos), err)
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
	}
	if err := json.Unmarshal([]byte(hos[0].History), &history); err != nil {
		t.Fatalf("history in the records: %v: %q", err, hos[0].History)
	}
	if history.RunID != "run-ho-1" || len(history.Errors) != 2 || history.Errors[0].Code != "PO_NOT_FOUND" ||
		history.Errors[0].Details["po_id"] != "4500019822" || history.Errors[0].Message == "" {
		t.Errorf("history %+v", history)
	}
	if hos[0].Summary != summary {
		t.Errorf("stored summary %q, want the composed one", hos[0].Summary)
	}

	// The outbox delivers it: the first try fails, the second, due after
	// the backoff, succeeds with the same delivery id.
	clock := time.Now()
	ob := &api.Outbox{Records: s.records, HandoverURL: hook.URL, Now: func() time.Time { return clock }}
	if n, err := ob.RunOnce(context.Background()); n != 0 || err != nil {
		t.Fatalf("first delivery: %d delivered, %v; want the failure recorded", n, err)
	}
	if n, _ := ob.RunOnce(context.Background()); n != 0 || hits.Load() != 1 {
		t.Errorf("before the backoff: %d delivered, %d hits; want no new try", n, hits.Load())
	}
	clock = clock.Add(10 * time.Second)
	if n, err := ob.RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("after the backoff: %d delivered, %v", n, err)
	}
	clock = clock.Add(time.Hour)
	if n, _ := ob.RunOnce(context.Background()); n != 0 || hits.Load() != 2 {
		t.Errorf("after delivery: %d more, %d hits; want none", n, hits.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if ids[0] == "" || ids[0] != ids[1] {
		t.Errorf("delivery ids %q, want one stable id", ids)
	}
	if !strings.Contains(string(got), `"history":{"run_id":"run-ho-1"`) || !strings.Contains(string(got), `"delivery_id":"`+ids[0]+`"`) {
		t.Errorf("webhook body %s", got)
	}
	if got := s.counter("erpgate_handovers_total", map[string]string{"queue": "ap_queue"}); got != 1 {
		t.Errorf("handovers metric %v", got)
	}
}

func TestPendingApprovalNotifiesApprovers(t *testing.T) {
	var got atomic.Value
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b))
	}))
	defer hook.Close()
	s := newStack(t, withOptions(func(o *api.Options) { o.NotifyApprovals = true }))
	for _, inv := range []string{"5105600101", "5105600102"} { // approved at once, pending
		s.do("POST", "/invoices/"+inv+"/approvals", map[string]any{"proposed_action": "post_as_invoiced",
			"justification": "Matched against the purchase order."})
	}
	ob := &api.Outbox{Records: s.records, ApprovalURL: hook.URL}
	if n, err := ob.RunOnce(context.Background()); n != 1 || err != nil {
		t.Fatalf("delivered %d, %v; want the one pending approval", n, err)
	}
	if b, _ := got.Load().(string); !strings.Contains(b, `"event":"approval.pending"`) || !strings.Contains(b, `"invoice_id":"5105600102"`) ||
		!strings.Contains(b, `"approver":"ap_manager"`) {
		t.Errorf("webhook body %s", b)
	}
}

func TestHandoverNotDoneUnlessStored(t *testing.T) {
	s := newStack(t)
	wantError(t, s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600999", "summary": "Unknown invoice."}),
		404, "INVOICE_NOT_FOUND", "fix_input_and_retry")
	if n := s.counts().handovers; n != 0 {
		t.Errorf("records hold %d handovers", n)
	}
	// An invoice the ERP does not know is handed over with that code.
	r := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600999", "code": "INVOICE_NOT_FOUND",
		"summary": "Invoice 5105600999 from the scanned document is not in the ERP; 5105600099 is not either."})
	if m := r.json(t); r.status != 200 || m["queue"] != "ap_queue" {
		t.Errorf("hand_over of an unknown invoice with INVOICE_NOT_FOUND: %d %s", r.status, r.body)
	}
	// Sent again without a key, the same call finds the same record.
	again := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600999", "code": "INVOICE_NOT_FOUND",
		"summary": "Invoice 5105600999 from the scanned document is not in the ERP; 5105600099 is not either."})
	if again.json(t)["handover_id"] != r.json(t)["handover_id"] || s.counts().handovers != 1 {
		t.Errorf("the same call twice: %s then %s, %d records; want one", r.body, again.body, s.counts().handovers)
	}
}
