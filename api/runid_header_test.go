package api_test

import "testing"

// TestMcpParamRunIDIsTheRunID: the Mcp-Param-Run-Id header, which MCP
// clients mirror from the run_id argument (x-mcp-header), is the run id
// when no X-Run-Id is sent; X-Run-Id wins when both are.
func TestMcpParamRunIDIsTheRunID(t *testing.T) {
	s := newStack(t)
	first := s.do("GET", "/invoices/5105600999", nil, "Mcp-Param-Run-Id: run-param")
	if got := first.header.Get("X-Run-Id"); got != "run-param" {
		t.Errorf("X-Run-Id echoed %q, want run-param", got)
	}
	d := wantError(t, s.do("GET", "/invoices/5105600999", nil, "Mcp-Param-Run-Id: run-param"), 409, "LOOP_DETECTED", "route_to_person")
	if d["run_id"] != "run-param" {
		t.Errorf("details.run_id %v, want run-param", d["run_id"])
	}
	both := s.do("GET", "/invoices/5105600999", nil, "X-Run-Id: run-x", "Mcp-Param-Run-Id: run-param")
	if got := both.header.Get("X-Run-Id"); got != "run-x" || both.status != 404 {
		t.Errorf("with both headers: %d, X-Run-Id %q; want 404 in run run-x", both.status, got)
	}
	// A value of another form (such as one a client base64-encoded) is
	// ignored, as an ill-formed X-Run-Id is.
	if r := s.do("GET", "/invoices/5105600999", nil, "Mcp-Param-Run-Id: =?base64?cnVuLXBhcmFt?="); r.header.Get("X-Run-Id") != "" || r.status != 404 {
		t.Errorf("an encoded value: %d, X-Run-Id %q; want 404 in no run", r.status, r.header.Get("X-Run-Id"))
	}
}
