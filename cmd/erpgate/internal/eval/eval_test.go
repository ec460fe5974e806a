package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
)

func noEnv(string) string { return "" }

// evalJSON is the output of one full "erpgate eval -json", played once for
// every test that reads it.
var evalJSON struct {
	once sync.Once
	out  []byte
	err  error
}

// evalOutput plays the eval once, with -json, and decodes what it printed.
func evalOutput(t *testing.T) ([]byte, evalResult) {
	t.Helper()
	evalJSON.once.Do(func() {
		var out bytes.Buffer
		evalJSON.err = Run(context.Background(), []string{"-json"}, noEnv, &out, io.Discard)
		evalJSON.out = out.Bytes()
	})
	if evalJSON.err != nil {
		t.Fatalf("Run: %v\n%s", evalJSON.err, evalJSON.out)
	}
	var got evalResult
	if err := json.Unmarshal(evalJSON.out, &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, evalJSON.out)
	}
	return evalJSON.out, got
}

// evalResult is what -json prints.
type evalResult struct {
	Rows   []evalRow  `json:"rows"`
	Totals evalTotals `json:"totals"`
}

func TestEvalJSONRows(t *testing.T) {
	raw, got := evalOutput(t)
	out := bytes.NewBuffer(raw)
	want := []struct {
		invoice, name, first, final, queue string
		retries, calls                     int
	}{
		// get_invoice, run_three_way_match, request_approval, post_invoice
		{"5105600101", "clean", "MATCHED", "POSTED", "", 0, 4},
		// … request_approval (pending), hold_invoice
		{"5105600102", "tolerance exceeded", "TOLERANCE_EXCEEDED", "HELD_FOR_APPROVAL", "", 0, 4},
		// get_invoice, corrected get_invoice, hand_over (refused: the invoice is not in the ERP)
		{"5105600999", "invoice not found", "INVOICE_NOT_FOUND", "HANDED_OVER", "ap_queue", 1, 3},
		// get_invoice, run_three_way_match, corrected get_purchase_order, hand_over
		{"5105600103", "PO not found", "PO_NOT_FOUND", "HANDED_OVER", "ap_queue", 1, 4},
		// get_invoice, run_three_way_match, corrected get_supplier, hand_over
		{"5105600104", "supplier not found", "SUPPLIER_NOT_FOUND", "HANDED_OVER", "master_data", 1, 4},
		// get_invoice, run_three_way_match, hold_invoice
		{"5105600105", "GR missing", "GR_MISSING", "HELD", "", 0, 3},
		// get_invoice, run_three_way_match, hand_over
		{"5105600106", "PO closed", "PO_CLOSED", "HANDED_OVER", "procurement", 0, 3},
		{"5105600107", "duplicate invoice", "DUPLICATE_INVOICE", "HANDED_OVER", "ap_team", 0, 3},
		// get_invoice, run_three_way_match, request_approval, hand_over
		{"5105600108", "approver not found", "MATCHED", "HANDED_OVER", "ap_lead", 0, 4},
		// get_invoice, run_three_way_match, request_approval, post_invoice, hand_over
		{"5105600109", "period closed", "MATCHED", "ESCALATED", "finance", 0, 5},
		// post_invoice, request_approval, post_invoice
		{"5105600101", "posted first", "APPROVAL_MISSING", "POSTED", "", 0, 3},
	}
	if len(got.Rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(got.Rows), len(want), out.String())
	}
	for i, w := range want {
		r := got.Rows[i]
		if r.InvoiceID != w.invoice || r.Case != w.name {
			t.Errorf("row %d is %s %q, want %s %q", i, r.InvoiceID, r.Case, w.invoice, w.name)
			continue
		}
		if r.FirstCode != w.first || r.Final != w.final || r.Queue != w.queue {
			t.Errorf("%s %q: first %s, final %s, queue %q; want %s, %s, %q",
				r.InvoiceID, r.Case, r.FirstCode, r.Final, r.Queue, w.first, w.final, w.queue)
		}
		if r.Retries != w.retries || r.Calls != w.calls {
			t.Errorf("%s %q: %d corrected retries in %d calls, want %d in %d",
				r.InvoiceID, r.Case, r.Retries, r.Calls, w.retries, w.calls)
		}
		if r.Loops != 0 || !r.Expected {
			t.Errorf("%s %q: loops %d, expected %v %v", r.InvoiceID, r.Case, r.Loops, r.Expected, r.Missed)
		}
	}
	wantTotals := evalTotals{Cases: 11, Calls: 40, Retries: 3, Handovers: 7, Holds: 2, Posted: 2, Loops: 0, Expected: 11}
	if got.Totals != wantTotals {
		t.Errorf("totals %+v, want %+v", got.Totals, wantTotals)
	}
}

// TestEvalTable prints the rows of the eval without -json: the table Run
// prints is report's over the same rows.
func TestEvalTable(t *testing.T) {
	_, res := evalOutput(t)
	var out bytes.Buffer
	if err := report(&out, res.Rows, false); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 13 {
		t.Fatalf("%d lines, want a header, 11 rows and the totals:\n%s", len(lines), out.String())
	}
	if h := strings.Fields(lines[0]); len(h) == 0 || h[0] != "INVOICE" || !strings.Contains(lines[0], "FINAL") {
		t.Errorf("header %q", lines[0])
	}
	for _, row := range lines[1:12] {
		if f := strings.Fields(row); len(f) < 8 || len(f[0]) != 10 || f[len(f)-1] != "yes" {
			t.Errorf("row %q", row)
		}
	}
	total := lines[12]
	for _, part := range []string{"11 cases", "40 calls", "3 corrected retries", "7 handovers", "2 holds", "2 posted",
		"loops: 0", "expected: 11/11"} {
		if !strings.Contains(total, part) {
			t.Errorf("totals line %q lacks %q", total, part)
		}
	}
}

func TestEvalRefusesArguments(t *testing.T) {
	if err := Run(context.Background(), []string{"extra"}, noEnv, io.Discard, io.Discard); err == nil {
		t.Error("Run accepted a stray argument")
	}
}
