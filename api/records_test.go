package api_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// engines are the two databases of the gateway's records.
var engines = []struct {
	name string
	open func(testing.TB) (records.Store, string)
}{{"sqlite", recordstest.SQLite}, {"postgres", recordstest.Postgres}}

// TestReplicasShareRecords runs two gateways over one database, as two
// replicas behind a load balancer: calls with one idempotency key, sent to
// both at once, make one record and get one answer; two clients using the
// same key string are independent.
func TestReplicasShareRecords(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			store, url := engine.open(t)
			creds := withOptions(func(o *api.Options) {
				o.Credentials = []api.Credential{credential(t, "agent-a", "key-a-0123456789", "read", "write"),
					credential(t, "agent-b", "key-b-0123456789", "read", "write")}
			})
			a := newStack(t, creds, withOptions(func(o *api.Options) { o.Records = store }))
			// The second replica opens the database on its own, as another
			// process would.
			other, err := records.Open(context.Background(), url, records.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			b := a.twin(creds, withOptions(func(o *api.Options) { o.Records = other }))

			const pairs = 50
			answers := make([][2]string, pairs)
			var wg sync.WaitGroup
			for i := range pairs {
				for j, gw := range []*stack{a, b} {
					wg.Go(func() {
						body := map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED",
							"summary": fmt.Sprintf("Handover %d: PO 4500018830 item 10 is finally invoiced.", i)}
						r := gw.do("POST", "/handovers", body, "Authorization: Bearer key-a-0123456789",
							fmt.Sprintf("Idempotency-Key: pair-%d", i))
						if r.status != 200 {
							t.Errorf("pair %d on replica %d: %d %s", i, j, r.status, r.body)
						}
						answers[i][j] = string(r.body)
					})
				}
			}
			wg.Wait()
			for i, ans := range answers {
				if ans[0] != ans[1] {
					t.Errorf("pair %d: the replicas answered\n%s\n%s", i, ans[0], ans[1])
				}
			}
			if n := a.counts().handovers; n != pairs {
				t.Errorf("%d handovers recorded, want %d (one per key)", n, pairs)
			}

			// Another client's key of the same string is its own.
			body := map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": "Handover 0: PO 4500018830 item 10 is finally invoiced."}
			r := b.do("POST", "/handovers", body, "Authorization: Bearer key-b-0123456789", "Idempotency-Key: pair-0")
			if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" || string(r.body) == answers[0][0] {
				t.Errorf("client b with client a's key string: %d replayed=%q %s; want a record of its own",
					r.status, r.header.Get("Idempotent-Replayed"), r.body)
			}
			// The same key with other arguments, on the other replica, is refused.
			body["summary"] = "Something else entirely."
			wantError(t, b.do("POST", "/handovers", body, "Authorization: Bearer key-a-0123456789", "Idempotency-Key: pair-0"),
				409, "IDEMPOTENCY_KEY_REUSED", "fix_input_and_retry")
			if n := a.counts().handovers; n != pairs+1 {
				t.Errorf("%d handovers recorded, want %d", n, pairs+1)
			}
		})
	}
}

// TestRecordsSurviveARestart writes every kind of record through one
// gateway and reads them through a new one over the same database, as after
// a restart; a key used before replays its first answer.
func TestRecordsSurviveARestart(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			store, url := engine.open(t)
			s := newStack(t, withOptions(func(o *api.Options) { o.Records = store }))
			pending := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
				"justification": "Supplier cites a raw-material surcharge."}, "Idempotency-Key: appr-1")
			hold := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": "Goods receipt for item 20 missing."})
			ho := s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED",
				"summary": "PO 4500018830 item 10 is finally invoiced."})
			for _, r := range []result{pending, hold, ho} {
				if r.status != 200 {
					t.Fatalf("%d %s", r.status, r.body)
				}
			}
			store.Close()

			reopened, err := records.Open(context.Background(), url, records.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { reopened.Close() })
			after := s.twin(withOptions(func(o *api.Options) { o.Records = reopened }))
			id := pending.json(t)["approval_id"].(string)
			if r := after.do("GET", "/approvals/"+id, nil); r.status != 200 || r.json(t)["status"] != "pending" {
				t.Errorf("approval after the restart: %d %s", r.status, r.body)
			}
			again := after.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
				"justification": "Supplier cites a raw-material surcharge."}, "Idempotency-Key: appr-1")
			if string(again.body) != string(pending.body) || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("the key after the restart: %s replayed=%q; want the first answer", again.body, again.header.Get("Idempotent-Replayed"))
			}
			if h, err := reopened.Hold(context.Background(), hold.json(t)["hold_id"].(string)); err != nil || h.Status != records.HoldHeld {
				t.Errorf("hold after the restart: %+v, %v", h, err)
			}
			list := after.do("GET", "/handovers?queue=procurement", nil, as("m.keller"))
			if list.status != 200 || !strings.Contains(string(list.body), ho.json(t)["handover_id"].(string)) {
				t.Errorf("handovers after the restart: %d %s", list.status, list.body)
			}
			audit := after.do("GET", "/audit?invoice_id=5105600102", nil, as("a.auditor"))
			if audit.status != 200 || !strings.Contains(string(audit.body), `"operation":"request_approval"`) {
				t.Errorf("audit after the restart: %d %s", audit.status, audit.body)
			}
		})
	}
}

// TestAuditLog checks one row per write attempt, refused ones included,
// and that reading it needs the audit scope.
func TestAuditLog(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) {
		o.Credentials = []api.Credential{credential(t, "agent", "agent-key-0123456789", "read", "write"),
			credential(t, "auditor", "auditor-key-0123456789", "audit")}
	}))
	agent, auditor := "Authorization: Bearer agent-key-0123456789", "Authorization: Bearer auditor-key-0123456789"
	r := s.do("POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "post_as_invoiced",
		"justification": "Three-way match MATCHED on all lines."}, agent, "X-Request-Id: req-appr-1")
	id := r.json(t)["approval_id"].(string)
	s.do("POST", "/invoices/5105600101/post", map[string]any{}, agent, "X-Request-Id: req-post-1")
	s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": id}, agent, "X-Request-Id: req-post-2")
	s.do("GET", "/invoices/5105600101", nil, agent)

	wantError(t, s.do("GET", "/audit?invoice_id=5105600101", nil, agent), 409, "SCOPE_MISSING", "route_to_person")
	r = s.do("GET", "/audit?invoice_id=5105600101", nil, auditor)
	if r.status != 200 {
		t.Fatalf("audit: %d %s", r.status, r.body)
	}
	entries := r.json(t)["entries"].([]any)
	want := []struct{ op, outcome, request, approval, document string }{
		{"post_invoice", "OK", "req-post-2", id, "5105600101/2026"},
		{"post_invoice", "APPROVAL_MISSING", "req-post-1", "", ""},
		{"request_approval", "OK", "req-appr-1", id, id},
	}
	if len(entries) != len(want) {
		t.Fatalf("audit has %d entries, want %d (reads are not audited): %s", len(entries), len(want), r.body)
	}
	for i, w := range want {
		e := entries[i].(map[string]any)
		if e["operation"] != w.op || e["outcome"] != w.outcome || e["request_id"] != w.request || e["client"] != "agent" ||
			e["invoice_id"] != "5105600101" || e["args_digest"] == "" {
			t.Errorf("entry %d: %v; want %+v", i, e, w)
		}
		if got, _ := e["approval_id"].(string); got != w.approval {
			t.Errorf("entry %d approval_id %q, want %q", i, got, w.approval)
		}
		if got, _ := e["document"].(string); got != w.document {
			t.Errorf("entry %d document %q, want %q", i, got, w.document)
		}
	}
}

// TestKeyCapPerClient refuses a client's new idempotency key beyond its
// cap with a five-field RATE_LIMITED, while its kept keys still replay.
func TestKeyCapPerClient(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) { o.MaxKeysPerClient = 2 }))
	hand := func(key string) result {
		return s.do("POST", "/handovers", map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED",
			"summary": "PO 4500018830 item 10 is finally invoiced (" + key + ")."}, "Idempotency-Key: "+key)
	}
	first := hand("k1")
	if first.status != 200 || hand("k2").status != 200 {
		t.Fatalf("two keys within the cap: %d %s", first.status, first.body)
	}
	d := wantError(t, hand("k3"), 429, "RATE_LIMITED", "hold_and_recheck")
	if d["reason"] != "idempotency_key_cap" || d["retry_after_s"] == nil {
		t.Errorf("details %v, want reason idempotency_key_cap and retry_after_s", d)
	}
	if again := hand("k1"); string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("a kept key beyond the cap: %d %s; want its replay", again.status, again.body)
	}
	if n := s.counts().handovers; n != 2 {
		t.Errorf("%d handovers recorded, want 2", n)
	}
}

// brokenRecords is a records store whose database is gone.
type brokenRecords struct{ records.Store }

func (brokenRecords) Ping(context.Context) error {
	return fmt.Errorf("dial tcp 10.0.0.7:5432: connection refused")
}

// TestReadyReportsTheStore: /readyz names the engine while the database
// answers, and fails five-field, naming no host, while it does not.
func TestReadyReportsTheStore(t *testing.T) {
	s := newStack(t)
	r := s.do("GET", "/readyz", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"store":{"engine":"sqlite","status":"ok"}`) {
		t.Errorf("readyz: %d %s", r.status, r.body)
	}
	down := newStack(t, withOptions(func(o *api.Options) { o.Records = brokenRecords{testRecords(t)} }))
	r = down.do("GET", "/readyz", nil)
	d := wantError(t, r, 500, "INTERNAL", "stop_and_escalate")
	if d["reason"] != "records_unavailable" || strings.Contains(string(r.body), "10.0.0.7") {
		t.Errorf("readyz with the database down: %s", r.body)
	}
}

// TestAuditShowsTheDecision checks that a person's decision is in the
// invoice's audit trail, with the approval it decided, and that a note on
// an audit row is returned.
func TestAuditShowsTheDecision(t *testing.T) {
	store, _ := recordstest.SQLite(t)
	s := newStack(t, withOptions(func(o *api.Options) { o.Records = store }))
	r := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Supplier cites a raw-material surcharge."})
	id := r.json(t)["approval_id"].(string)
	s.decide(id, "approve", "m.keller")
	if err := store.AppendAudit(context.Background(), records.AuditEntry{At: time.Now(), Client: "m.keller",
		Operation: "resolve_handover", InvoiceID: "5105600102", Outcome: "OK", RequestID: "req-note", Note: "Paid after the call."}); err != nil {
		t.Fatal(err)
	}
	entries := s.do("GET", "/audit?invoice_id=5105600102", nil, as("a.auditor")).json(t)["entries"].([]any)
	var decided, noted bool
	for _, e := range entries {
		m := e.(map[string]any)
		decided = decided || m["operation"] == "decide_approval" && m["approval_id"] == id && m["client"] == "m.keller"
		noted = noted || m["note"] == "Paid after the call."
	}
	if !decided || !noted {
		t.Errorf("audit of 5105600102 (decision %v, note %v): %v", decided, noted, entries)
	}

	// A refused decision's row names the approval it was refused on.
	wantError(t, s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": "reject", "reason": "Again."}, as("m.keller")),
		409, "APPROVAL_DECIDED", "stop_and_escalate")
	refused := false
	for _, e := range s.do("GET", "/audit", nil, as("a.auditor")).json(t)["entries"].([]any) {
		m := e.(map[string]any)
		refused = refused || m["operation"] == "decide_approval" && m["outcome"] == "APPROVAL_DECIDED" && m["approval_id"] == id
	}
	if !refused {
		t.Errorf("no audit row of the refused decision on %s", id)
	}
}
