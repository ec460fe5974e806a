package api_test

import (
	"strings"
	"testing"
)

// TestFieldNamesMatchExactly checks that a body's member names match the
// contract's exactly: another letter case is an unknown field, refused
// naming it, and never taken for the field it resembles.
func TestFieldNamesMatchExactly(t *testing.T) {
	s := newStack(t)
	for _, c := range []struct {
		name, path, body, field string
	}{
		{"upper-case reason", "/invoices/5105600105/hold", `{"REASON":"Goods receipt for PO 4500018822 item 20 missing."}`, "REASON"},
		{"title-case reason", "/invoices/5105600105/hold", `{"Reason":"Goods receipt for PO 4500018822 item 20 missing."}`, "Reason"},
		{"upper-case idempotency key", "/invoices/5105600105/hold",
			`{"reason":"Goods receipt for PO 4500018822 item 20 missing.","IDEMPOTENCY_KEY":"has space"}`, "IDEMPOTENCY_KEY"},
		{"upper-case key of a post", "/invoices/5105600101/post", `{"IDEMPOTENCY_KEY":"has space"}`, "IDEMPOTENCY_KEY"},
		{"mixed-case justification", "/invoices/5105600101/approvals",
			`{"proposed_action":"post_as_invoiced","Justification":"Matched against PO and goods receipt."}`, "Justification"},
		{"reason given twice", "/invoices/5105600105/hold",
			`{"reason":"Goods receipt for PO 4500018822 item 20 missing.","reason":"x"}`, "reason"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.do("POST", c.path, c.body)
			d := wantError(t, r, 400, "INVALID_REQUEST", "fix_input_and_retry")
			if d["field"] != c.field {
				t.Errorf("details %v, want field %s", d, c.field)
			}
		})
	}
	if n := s.counts(); n.holds != 0 || n.approvals != 0 {
		t.Errorf("refused calls left records: %+v", n)
	}
	// A name given twice is refused before the call claims its key: the
	// key is still free for the corrected call.
	twice := `{"reason":"Goods receipt for PO 4500018822 item 20 missing.","reason":"x"}`
	wantError(t, s.do("POST", "/invoices/5105600105/hold", twice, "Idempotency-Key: twice-1"), 400, "INVALID_REQUEST", "fix_input_and_retry")
	r := s.do("POST", "/invoices/5105600105/hold", `{"reason":"Goods receipt for PO 4500018822 item 20 missing."}`, "Idempotency-Key: twice-1")
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("corrected call with the key: %d %v\n%s", r.status, r.header, r.body)
	}
}

// TestControlCharactersRefused checks that every text the gateway reads
// refuses C0 controls (but tab, newline and carriage return), DEL, C1
// controls and the bidirectional overrides and isolates, naming the field,
// before the call claims its idempotency key; and that the directional
// marks and the ordinary whitespace pass.
func TestControlCharactersRefused(t *testing.T) {
	s := newStack(t)
	refused := map[string]string{
		"NUL": "\u0000", "BEL": "\u0007", "ESC": "\u001b", "DEL": "\u007f", "C1 NEL": "\u0085", "C1 CSI": "\u009b",
		"LRE": "\u202a", "RLE": "\u202b", "PDF": "\u202c", "LRO": "\u202d", "RLO": "\u202e",
		"LRI": "\u2066", "RLI": "\u2067", "FSI": "\u2068", "PDI": "\u2069",
	}
	reason := func(c string) string { return "Goods receipt for PO 4500018822 item 20 " + c + "missing." }
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				method, path string
				body         any
				field        string
			}{
				{"POST", "/invoices/5105600105/hold", map[string]any{"reason": reason(c)}, "reason"},
				{"POST", "/invoices/5105600101/approvals",
					map[string]any{"proposed_action": "post_as_invoiced", "justification": "Matched " + c + "against PO."}, "justification"},
				{"POST", "/handovers", map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED",
					"summary": "PO 4500018830 is finally invoiced.", "evidence": []string{"PO item 10", "delivered " + c}}, "evidence[1]"},
				{"POST", "/handovers", map[string]any{"invoice_id": "5105600106", "summary": "PO closed" + c}, "summary"},
				// A control character in a member name: the name is not echoed.
				{"POST", "/invoices/5105600105/hold", map[string]any{"reason": reason(""), "x" + c + "y": 1}, "body"},
				{"GET", "/suppliers?name=" + pathEscape("ac"+c+"me"), nil, "name"},
				{"GET", "/suppliers?name=acme&limit=" + pathEscape("5"+c), nil, "limit"},
				{"GET", "/runs/run-1?run_id=" + pathEscape("r"+c), nil, "run_id"},
			} {
				r := s.do(tc.method, tc.path, tc.body, "Idempotency-Key: ctl-"+strings.ToLower(strings.ReplaceAll(name, " ", "-")))
				d := wantError(t, r, 400, "INVALID_REQUEST", "fix_input_and_retry")
				if d["field"] != tc.field {
					t.Errorf("%s %s: details %v, want field %s", tc.method, tc.path, d, tc.field)
				}
				if strings.Contains(string(r.body), c) {
					t.Errorf("%s %s: the refusal echoes the character: %s", tc.method, tc.path, r.body)
				}
			}
			// In a run id header the character makes the id malformed; C0
			// and DEL net/http refuses in a header itself.
			if c >= "\u0080" {
				r := s.do("GET", "/invoices/5105600101", nil, "X-Run-Id: run"+c+"1")
				if d := wantError(t, r, 400, "INVALID_REQUEST", "fix_input_and_retry"); d["field"] != "X-Run-Id" {
					t.Errorf("X-Run-Id: details %v, want field X-Run-Id", d)
				}
			}
		})
	}
	if n := s.counts(); n.holds != 0 || n.approvals != 0 || n.handovers != 0 {
		t.Fatalf("refused calls left records: %+v", n)
	}
	// The refusals claimed no key: the same key with a clean body is a
	// first call.
	r := s.do("POST", "/invoices/5105600105/hold", map[string]any{"reason": reason("")}, "Idempotency-Key: ctl-nul")
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("clean hold after refusals: %d %v\n%s", r.status, r.header, r.body)
	}

	// Tab, newline, carriage return and the directional marks are text.
	for name, text := range map[string]string{"tab": "\t", "newline": "\n", "carriage return": "\r\n", "LRM": "\u200e", "RLM": "\u200f"} {
		body := map[string]any{"proposed_action": "post_as_invoiced", "justification": "Matched against" + text + "PO and goods receipt."}
		if r := s.do("POST", "/invoices/5105600101/approvals", body, "Idempotency-Key: ok-"+strings.ReplaceAll(name, " ", "-")); r.status != 200 {
			t.Errorf("%s: status %d, want 200\n%s", name, r.status, r.body)
		}
	}
}

// TestInvalidUTF8Refused checks that a body that is not UTF-8 is refused
// naming the field, not mended into U+FFFD.
func TestInvalidUTF8Refused(t *testing.T) {
	s := newStack(t)
	r := s.do("POST", "/invoices/5105600105/hold", []byte("{\"reason\":\"Goods receipt \xff\xfe missing.\"}"))
	if d := wantError(t, r, 400, "INVALID_REQUEST", "fix_input_and_retry"); d["field"] != "reason" {
		t.Errorf("details %v, want field reason", d)
	}
}
