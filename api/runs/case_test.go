package runs_test

import (
	"context"
	"testing"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/errmap"
)

// TestRepeatsSeeTheCase admits a run's calls against the invoice's case as
// the gateway reads it before each: a repeat is a loop only at the same
// case version; a create is never one; a call whose case could not be read
// is neither a repeat nor repeated; a goods receipt looked for again goes
// through once its case moved; the invoice's cap across runs refuses all
// but hand_over.
func TestRepeatsSeeTheCase(t *testing.T) {
	ctx := context.Background()
	g := runs.NewGuard(runs.NewMemory(nil, 0), runs.Limits{InvoiceCalls: 50, InvoiceRuns: 3}, nil, nil)
	cs := func(v int64) runs.Case { return runs.Case{InvoiceID: "5105600102", Version: v, Calls: 1, Runs: 1} }
	post := func(v int64) runs.Call {
		return runs.Call{Operation: "post_invoice", InvoiceID: "5105600102", Digest: "post-A1", Case: cs(v)}
	}
	admit := func(what, run string, c runs.Call, want errmap.Code) {
		t.Helper()
		seq, refused, err := g.Admit(ctx, run, c)
		if err != nil {
			t.Fatal(err)
		}
		var got errmap.Code
		if refused != nil {
			got = refused.Code
		}
		if got != want {
			t.Fatalf("%s: refused with %q, want %q", what, got, want)
		}
		if refused == nil {
			code, e := "OK", (*errmap.Error)(nil)
			if c.Operation == "get_goods_receipt" {
				code, e = "", errmap.New(errmap.GRMissing, "missing", map[string]any{"po_id": "4500018822", "item": "20"})
			}
			if err := g.Finish(ctx, run, seq, c, code, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	admit("the first post", "r1", post(1), "")
	admit("the post again, nothing changed", "r1", post(1), errmap.LoopDetected)
	admit("the post after a decision", "r1", post(3), "")
	admit("the post again after that", "r1", post(3), errmap.LoopDetected)
	admit("a post whose case was not read", "r1", post(runs.UnknownVersion), "")
	admit("and again", "r1", post(runs.UnknownVersion), "")

	hold := runs.Call{Operation: "hold_invoice", InvoiceID: "5105600102", Digest: "hold", Create: true, Case: cs(3)}
	admit("a hold", "r1", hold, "")
	admit("the same hold, its answer lost", "r1", hold, "")

	gr := runs.Call{Operation: "get_goods_receipt", Digest: "gr-20", POItem: "4500018822/20", Case: cs(4)}
	admit("a goods receipt found missing", "r2", gr, "")
	gr.Digest = "gr-20-again"
	admit("looked for again, nothing changed", "r2", gr, errmap.LoopDetected)
	gr.Case = cs(5)
	admit("looked for again after a receipt was seen", "r2", gr, "")

	capped := runs.Call{Operation: "get_invoice", InvoiceID: "5105600102", Digest: "inv",
		Case: runs.Case{InvoiceID: "5105600102", Version: 5, Calls: 51, Runs: 2}}
	_, refused, err := g.Admit(ctx, "r3", capped)
	if err != nil || refused == nil || refused.Code != errmap.BudgetExhausted || refused.Details["limit"] != "invoice_cap" ||
		refused.NextAction != errmap.RouteToPerson || refused.Details["queue"] != errmap.QueueAPTeam {
		t.Fatalf("a call past the invoice's cap: %+v, %v", refused, err)
	}
	capped.Case.Calls, capped.Case.Runs = 10, 4
	if _, refused, _ = g.Admit(ctx, "r4", capped); refused == nil || refused.Details["limit"] != "invoice_cap" {
		t.Fatalf("a run past the invoice's runs: %+v", refused)
	}
	handOver := runs.Call{Operation: "hand_over", InvoiceID: "5105600102", Digest: "ho", BudgetFree: true, Create: true, Case: capped.Case}
	admit("hand_over past the cap", "r4", handOver, "")
}
