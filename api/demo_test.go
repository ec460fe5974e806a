package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/api"
)

// TestOpenGatewayDecidesByKeyOnly: a gateway without credentials serves a
// call without a key as the agent anonymous, which reads and writes but
// reaches none of the operations of people; only a demonstration person's
// key does, and the decision is always that person's: a body that names a
// decider is refused, an unknown key is UNAUTHENTICATED.
func TestOpenGatewayDecidesByKeyOnly(t *testing.T) {
	s := newStack(t)
	r := s.do("POST", "/invoices/5105600102/approvals", map[string]any{"proposed_action": "accept_variance",
		"justification": "Unit price 8 % over the PO; supplier cites a surcharge."})
	if r.status != http.StatusOK || r.json(t)["requested_by"] != "anonymous" {
		t.Fatalf("request_approval without a key: %d %s", r.status, r.body)
	}
	id := r.json(t)["approval_id"].(string)
	decide := map[string]any{"decision": "approve", "reason": "Surcharge confirmed with the supplier."}

	for _, c := range []struct {
		method, path string
		body         any
		scope        string
	}{
		{"POST", "/approvals/" + id + "/decision", decide, api.ScopeApprove},
		{"GET", "/approvals", nil, api.ScopeApprove},
		{"GET", "/handovers", nil, api.ScopeReview},
		{"GET", "/audit", nil, api.ScopeAudit},
	} {
		d := wantError(t, s.do(c.method, c.path, c.body), 409, "SCOPE_MISSING", "route_to_person")
		if d["scope"] != c.scope {
			t.Errorf("%s %s without a key: details %v, want the %s scope", c.method, c.path, d, c.scope)
		}
	}
	named := map[string]any{"decision": "approve", "reason": "Surcharge confirmed with the supplier.", "decided_by": "m.keller"}
	if d := wantError(t, s.do("POST", "/approvals/"+id+"/decision", named, as("m.keller")), 400, "INVALID_REQUEST",
		"fix_input_and_retry"); d["field"] != "decided_by" {
		t.Errorf("a body naming the decider: details %v, want field decided_by", d)
	}
	wantError(t, s.do("POST", "/approvals/"+id+"/decision", decide, "X-API-Key: not-a-key-of-anyone"), 401,
		"UNAUTHENTICATED", "stop_and_escalate")
	wantError(t, s.do("POST", "/approvals/"+id+"/decision", decide, as("a.auditor")), 409, "SCOPE_MISSING", "route_to_person")
	if got := s.do("GET", "/approvals/"+id, nil).json(t); got["status"] != "pending" {
		t.Fatalf("after the refused decisions: %v, want it pending", got)
	}

	r = s.do("POST", "/approvals/"+id+"/decision", decide, "Authorization: Bearer "+demoKey("m.keller"))
	if got := r.json(t); r.status != http.StatusOK || got["status"] != "approved" || got["decided_by"] != "m.keller" {
		t.Fatalf("m.keller's decision: %d %s", r.status, r.body)
	}
	audit := s.do("GET", "/audit?invoice_id=5105600102", nil, as("a.auditor"))
	if audit.status != http.StatusOK || !strings.Contains(string(audit.body), `"client":"m.keller","operation":"decide_approval"`) {
		t.Errorf("the audit log of the decision: %d %s", audit.status, audit.body)
	}
	if r := s.do("GET", "/handovers", nil, as("m.keller")); r.status != http.StatusOK {
		t.Errorf("list_handovers as m.keller: %d %s", r.status, r.body)
	}
}

// TestDemoPeopleOnlyInAnOpenGateway: beside configured credentials the
// demonstration people are no one, at the API and at sign-in alike.
func TestDemoPeopleOnlyInAnOpenGateway(t *testing.T) {
	s := newStack(t, withOptions(func(o *api.Options) {
		o.Credentials = []api.Credential{credential(t, "agent", "agent-key-0123456789", "read", "write")}
	}))
	wantError(t, s.do("GET", "/approvals", nil, as("m.keller")), 401, "UNAUTHENTICATED", "stop_and_escalate")
	wantError(t, s.do("GET", "/invoices/5105600101", nil), 401, "UNAUTHENTICATED", "stop_and_escalate")

	people := demoPeople(t)
	for _, c := range []struct {
		name  string
		opts  api.Options
		found bool
	}{
		{"open", api.Options{DemoPeople: people}, true},
		{"with keys", api.Options{DemoPeople: people, Credentials: []api.Credential{credential(t, "agent", "agent-key-0123456789", "read")}}, false},
	} {
		c.opts.ERP, c.opts.Records = panicky{}, testRecords(t)
		srv, err := api.NewServer(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, found := srv.ClientNamed("m.keller"); found != c.found {
			t.Errorf("%s: m.keller known %v, want %v", c.name, found, c.found)
		}
	}
}
