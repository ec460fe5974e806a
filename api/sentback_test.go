package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/erpgate/erpgate/api"
)

// decision sends a person's decision on an approval through the gateway
// and returns the answer.
func (s *stack) decision(id, decision, reason, by string) result {
	s.t.Helper()
	return s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": decision, "reason": reason}, as(by))
}

// sendBack sends an approval back to the agent with question.
func (s *stack) sendBack(id, question, by string) {
	s.t.Helper()
	if r := s.decision(id, "send_back", question, by); r.status != http.StatusOK {
		s.t.Fatalf("send back %s: %d %s", id, r.status, r.body)
	}
}

// TestSendBack follows an approval a person sends back to the agent with a
// question, over REST: the decision, what the agent meets on get_approval
// and post_invoice, the hold and the case it moves, the platform's
// webhooks, and the agent's answer, approved and posted, in one run.
func TestSendBack(t *testing.T) {
	var mu sync.Mutex
	var hooks []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		mu.Lock()
		hooks = append(hooks, m)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	store, _ := recordstestSQLiteWithHoldEvents(t)
	s := newStack(t, withOptions(func(o *api.Options) { o.Records = store }))
	run := "X-Run-Id: run-sent-back"
	const question = "Which clause of the supplier's contract allows the 8 % raw material surcharge? Quote it."

	r := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Unit price 135.00 is 8 % over PO 4500018823 item 10; the supplier cites a surcharge."}, run)
	if r.status >= 300 {
		t.Fatalf("request_approval: %d %s", r.status, r.body)
	}
	first := r.json(t)
	id := first["approval_id"].(string)
	if r := s.do("POST", "/invoices/5105600102/hold", map[string]any{"reason": "Waiting for the approver."}, run); r.status >= 300 {
		t.Fatalf("hold_invoice: %d %s", r.status, r.body)
	}
	before := s.counts()

	// Bad decisions change nothing.
	for _, bad := range []map[string]any{
		{"decision": "send_back", "reason": "?"},
		{"decision": "sendback", "reason": question},
		{"decision": "send_back"},
		{"decision": "send_back", "reason": question, "decided_by": "m.keller"},
	} {
		r := s.do("POST", "/approvals/"+id+"/decision", bad, as("m.keller"))
		wantError(t, r, http.StatusBadRequest, "INVALID_REQUEST", "fix_input_and_retry")
	}
	// The requester, an agent without a key, cannot send its own request
	// back: deciding needs the approve scope.
	r = s.do("POST", "/approvals/"+id+"/decision", map[string]any{"decision": "send_back", "reason": question})
	wantError(t, r, http.StatusConflict, "SCOPE_MISSING", "route_to_person")
	if got := s.do("GET", "/approvals/"+id, nil).json(t); got["status"] != "pending" || s.counts() != before {
		t.Fatalf("after refused decisions: %v, %+v; want it pending and the records as they were", got["status"], s.counts())
	}

	r = s.decision(id, "send_back", question, "m.keller")
	if r.status != http.StatusOK {
		t.Fatalf("send back: %d %s", r.status, r.body)
	}
	back := r.json(t)
	if back["status"] != "sent_back" || back["decided_by"] != "m.keller" || back["decision_reason"] != question {
		t.Errorf("the decision's answer: %v; want sent_back by m.keller with the question", back)
	}

	// The agent meets the question on get_approval and on a post with it:
	// the same code, the same five details, nothing posted.
	wantDetails := map[string]any{"approval_id": id, "invoice_id": "5105600102", "question": question,
		"asked_by": "m.keller", "asked_at": back["decided_at"]}
	for _, call := range []struct{ method, path string }{{"GET", "/approvals/" + id}, {"POST", "/invoices/5105600102/post"}} {
		var body any
		if call.method == "POST" {
			body = map[string]any{"approval_id": id}
		}
		r := s.do(call.method, call.path, body, run)
		d := wantError(t, r, http.StatusConflict, "APPROVAL_SENT_BACK", "request_approval")
		if m := r.json(t); m["retryable"] != false || !strings.Contains(m["message"].(string), id) {
			t.Errorf("%s %s: %s; want not retryable, naming %s", call.method, call.path, r.body, id)
		}
		if !equalMaps(d, wantDetails) {
			t.Errorf("%s %s: details %v, want %v", call.method, call.path, d, wantDetails)
		}
	}
	if n := len(s.sim.Ledger().Postings); n != 0 {
		t.Fatalf("%d postings with the approval sent back, want none", n)
	}
	// A decision stands.
	r = s.decision(id, "approve", "Fine after all.", "j.doe")
	if d := wantError(t, r, http.StatusConflict, "APPROVAL_DECIDED", "stop_and_escalate"); d["status"] != "sent_back" {
		t.Errorf("approving it after: details %v, want status sent_back", d)
	}

	// The hold that waited for the decision is released, and the case says
	// what comes next.
	holds := s.do("GET", "/invoices/5105600102/case", nil).json(t)
	next := holds["next"].(map[string]any)
	if holds["approval_status"] != "sent_back" || holds["hold_id"] != nil || holds["state"] != "open" ||
		next["operation"] != "get_approval" || next["approval_id"] != id {
		t.Errorf("case after the send-back: %v", holds)
	}
	var decided string
	for _, ev := range holds["events"].([]any) {
		if e := ev.(map[string]any); e["kind"] == "approval.decided" {
			decided = e["note"].(string)
		}
	}
	if decided != "sent_back by m.keller: "+question {
		t.Errorf("approval.decided note %q, want the decision and the question", decided)
	}
	out := &api.Outbox{Records: store, HoldURL: hook.URL}
	if n, err := out.RunOnce(context.Background()); err != nil || n != 2 {
		t.Fatalf("outbox: %d %v, want the decision and the release delivered", n, err)
	}
	mu.Lock()
	var events []string
	for _, m := range hooks {
		events = append(events, m["event"].(string))
		switch m["event"] {
		case "approval.decided":
			if a := m["approval"].(map[string]any); a["status"] != "sent_back" || a["decision_reason"] != question {
				t.Errorf("approval.decided webhook: %v", m)
			}
		case "hold.released":
			if arrived, _ := m["arrived"].(string); !strings.Contains(arrived, "sent_back") ||
				m["next"].(map[string]any)["operation"] != "get_approval" {
				t.Errorf("hold.released webhook: %v", m)
			}
		}
	}
	mu.Unlock()
	slices.Sort(events)
	if !slices.Equal(events, []string{"approval.decided", "hold.released"}) {
		t.Errorf("webhooks %v, want approval.decided and hold.released", events)
	}

	// The agent answers with the same proposal: a new approval, never the
	// one sent back, which a person approves; the post goes through.
	r = s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Clause 4.2 of the supply contract allows an 8 % raw material surcharge on alloy prices."}, run)
	answer := r.json(t)
	if r.status >= 300 || answer["approval_id"] == id || answer["status"] != "pending" {
		t.Fatalf("the answer: %d %s; want a new pending approval", r.status, r.body)
	}
	s.decide(answer["approval_id"].(string), "approve", "m.keller")
	r = s.do("POST", "/invoices/5105600102/post", map[string]any{"approval_id": answer["approval_id"]}, run)
	if r.status != http.StatusOK {
		t.Fatalf("post with the answer approved: %d %s", r.status, r.body)
	}
	// The approval sent back stays so, and still tells the question.
	r = s.do("GET", "/approvals/"+id, nil, run)
	if d := wantError(t, r, http.StatusConflict, "APPROVAL_SENT_BACK", "request_approval"); d["question"] != question {
		t.Errorf("the approval sent back, read after the post: %v", d)
	}
	list, _ := s.do("GET", "/approvals?status=sent_back", nil, as("m.keller")).json(t)["approvals"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["approval_id"] != id {
		t.Errorf("list_approvals sent_back: %v, want %s", list, id)
	}
	if n := len(s.sim.Ledger().Postings); n != 1 {
		t.Errorf("%d postings, want the one with the answer", n)
	}
}

func equalMaps(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSendBackBySegregationOfDuties: the client that requested an approval
// cannot send it back either.
func TestSendBackBySegregationOfDuties(t *testing.T) {
	// A clerk whose key may both request and decide, beside the people.
	s := newStack(t, withOptions(func(o *api.Options) {
		o.Credentials = append(demoPeople(t), credential(t, "clerk", demoKey("clerk"), "read", "write", "approve"))
	}))
	r := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Unit price 8 % over the PO; supplier cites a surcharge."}, as("clerk"))
	id := r.json(t)["approval_id"].(string)
	d := wantError(t, s.decision(id, "send_back", "Who agreed to the surcharge?", "clerk"), http.StatusConflict,
		"SEGREGATION_OF_DUTIES", "route_to_person")
	if d["approval_id"] != id || d["reason"] != "same_requester" || d["status"] != "pending" {
		t.Errorf("details %v", d)
	}
	s.sendBack(id, "Who agreed to the surcharge?", "m.keller")
	if a, err := s.records.Approval(t.Context(), id); err != nil || a.Status != "sent_back" || a.DecidedBy != "m.keller" {
		t.Errorf("the approval: %+v, %v; want sent back by m.keller", a, err)
	}
}
