package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/erpgate/erpgate/errmap"
)

// TestInvalidArgumentsAreResults checks that every kind of input
// validation error is a tool result with isError and one text block, the
// five-field INVALID_REQUEST naming the field. Where REST can make the same
// mistake, the text is byte for byte the REST body.
func TestInvalidArgumentsAreResults(t *testing.T) {
	s := newStack(t)
	cs := s.connect()
	approve := map[string]any{"proposed_action": "post_as_invoiced", "justification": justification}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(out, kv[i].(string))
			} else {
				out[kv[i].(string)] = kv[i+1]
			}
		}
		return out
	}
	toolArgs := func(m map[string]any, id string) map[string]any { return with(m, "invoice_id", id) }

	same := []struct {
		name   string
		field  string
		tool   string
		args   map[string]any
		method string
		path   string
		body   map[string]any
	}{
		{"missing body field", "justification", "request_approval",
			toolArgs(with(approve, "justification", nil), "5105600101"),
			"POST", "/invoices/5105600101/approvals", with(approve, "justification", nil)},
		{"missing required body field of hold_invoice", "reason", "hold_invoice",
			map[string]any{"invoice_id": "5105600105"},
			"POST", "/invoices/5105600105/hold", map[string]any{}},
		{"wrong type in the body", "justification", "request_approval",
			toolArgs(with(approve, "justification", 5), "5105600101"),
			"POST", "/invoices/5105600101/approvals", with(approve, "justification", 5)},
		{"wrong item type in the body", "evidence[0]", "hand_over",
			map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": "PO 4500018823 is closed.", "evidence": []any{1}},
			"POST", "/handovers", map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": "PO 4500018823 is closed.", "evidence": []any{1}}},
		{"wrong type of idempotency_key", "idempotency_key", "post_invoice",
			map[string]any{"invoice_id": "5105600101", "idempotency_key": 7},
			"POST", "/invoices/5105600101/post", map[string]any{"idempotency_key": 7}},
		{"unknown argument of an operation with a body", "fiscal_year", "request_approval",
			toolArgs(with(approve, "fiscal_year", "2026"), "5105600101"),
			"POST", "/invoices/5105600101/approvals", with(approve, "fiscal_year", "2026")},
		{"pattern of a path parameter", "invoice_id", "get_invoice",
			map[string]any{"invoice_id": "51056"}, "GET", "/invoices/51056", nil},
		{"enum of a body field", "proposed_action", "request_approval",
			toolArgs(with(approve, "proposed_action", "pay_now"), "5105600101"),
			"POST", "/invoices/5105600101/approvals", with(approve, "proposed_action", "pay_now")},
		{"body field named in another letter case", "REASON", "hold_invoice",
			map[string]any{"invoice_id": "5105600105", "REASON": "Goods receipt for PO 4500018822 item 20 missing."},
			"POST", "/invoices/5105600105/hold", map[string]any{"REASON": "Goods receipt for PO 4500018822 item 20 missing."}},
		{"NUL in a body field", "reason", "hold_invoice",
			map[string]any{"invoice_id": "5105600105", "reason": "Goods receipt\u0000 missing."},
			"POST", "/invoices/5105600105/hold", map[string]any{"reason": "Goods receipt\u0000 missing."}},
		{"bidirectional override in a body field", "justification", "request_approval",
			toolArgs(with(approve, "justification", "Matched \u202eagainst PO."), "5105600101"),
			"POST", "/invoices/5105600101/approvals", with(approve, "justification", "Matched \u202eagainst PO.")},
		{"control character in a query parameter", "name", "search_suppliers",
			map[string]any{"name": "ac\u001bme"}, "GET", "/suppliers?name=ac%1Bme", nil},
	}
	for _, c := range same {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, cs, c.tool, c.args)
			status, body := s.rest(c.method, c.path, c.body)
			if status != 400 {
				t.Fatalf("REST answered %d: %s", status, body)
			}
			checkInvalid(t, res, c.field, strings.TrimSuffix(string(body), "\n"))
		})
	}

	// A name given twice: encoding/json would keep the last, REST refuses
	// it, and so do the arguments.
	t.Run("body field given twice", func(t *testing.T) {
		twice := `"reason":"Goods receipt for PO 4500018822 item 20 missing.","reason":"x"`
		res := call(t, cs, "hold_invoice", json.RawMessage(`{"invoice_id":"5105600105",`+twice+`}`))
		_, body := s.rest("POST", "/invoices/5105600105/hold", json.RawMessage(`{`+twice+`}`))
		checkInvalid(t, res, "reason", strings.TrimSuffix(string(body), "\n"))
	})

	// Path, query and header arguments reach REST as text, so REST cannot
	// see their JSON type or their absence; the refusal is the errmap error
	// REST gives for the same mistake in a body.
	// POST /handovers has no path ids to add to the details.
	_, wrongType := s.rest("POST", "/handovers", map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": 5})
	_, unknown := s.rest("POST", "/invoices/5105600101/approvals", with(approve, "fiscal_year", "2026"))
	like := func(rest []byte, from, to string) string {
		return strings.ReplaceAll(strings.TrimSuffix(string(rest), "\n"), from, to)
	}
	own := []struct {
		name  string
		field string
		tool  string
		args  map[string]any
		want  string
	}{
		{"wrong type of a path parameter", "invoice_id", "get_invoice",
			map[string]any{"invoice_id": 5105600101.5}, like(wrongType, "summary", "invoice_id")},
		{"id of the wrong type", "invoice_id", "get_invoice",
			map[string]any{"invoice_id": true}, like(wrongType, "summary", "invoice_id")},
		{"wrong type of a query parameter", "limit", "search_suppliers",
			map[string]any{"name": "acme", "limit": "ten"}, like(wrongType, "summary", "limit")},
		{"unknown argument of an operation without a body", "fiscal_year", "get_invoice",
			map[string]any{"invoice_id": "5105600101", "fiscal_year": "2026"}, like(unknown, "fiscal_year", "fiscal_year")},
		{"missing path parameter", "invoice_id", "get_invoice",
			map[string]any{}, string(errmap.Invalid("invoice_id", "is required").Marshal())},
	}
	for _, c := range own {
		t.Run(c.name, func(t *testing.T) {
			checkInvalid(t, call(t, cs, c.tool, c.args), c.field, c.want)
		})
	}
	// An unknown argument with a long name: the message names it, cut so
	// that next_action stays within the head of the body.
	longName := strings.Repeat("x", 300)
	res := call(t, cs, "get_invoice", map[string]any{"invoice_id": "5105600101", longName: 1})
	want := errmap.Invalid(longName, "is not a field of this operation").WithDetail("invoice_id", "5105600101").FitHead()
	checkInvalid(t, res, longName, string(want.Marshal()))
	if end := strings.Index(text(t, res), `"next_action":"fix_input_and_retry"`) + len(`"next_action":"fix_input_and_retry"`); end > errmap.HeadLimit {
		t.Errorf("next_action ends at byte %d: %s", end, text(t, res))
	}
}

// checkInvalid checks an INVALID_REQUEST result naming field, whose text is
// want.
func checkInvalid(t *testing.T, res *sdk.CallToolResult, field, want string) {
	t.Helper()
	if !res.IsError {
		t.Errorf("isError is false: %s", text(t, res))
	}
	if res.StructuredContent != nil {
		t.Errorf("an error result has structuredContent %v", res.StructuredContent)
	}
	got := text(t, res)
	if got != want {
		t.Errorf("text differs\n got: %s\nwant: %s", got, want)
	}
	m := object(t, res)
	if len(m) != 5 || m["code"] != "INVALID_REQUEST" {
		t.Errorf("got %s, want the five-field INVALID_REQUEST", got)
	}
	if d, _ := m["details"].(map[string]any); d["field"] != field {
		t.Errorf("details.field %v, want %s", m["details"], field)
	}
}
