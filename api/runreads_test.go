package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/sim"
)

// invoiceReads counts the simulator's reads of one invoice by its id
// (A_SupplierInvoice filtered by SupplierInvoice) since the last call, and
// forgets them.
func (s *stack) invoiceReads() int {
	s.t.Helper()
	n := 0
	for _, c := range s.sim.Calls() {
		byFilter := c.Path == "A_SupplierInvoice" && strings.Contains(c.Query, "$filter=SupplierInvoice%20eq")
		if c.Read() && (byFilter || strings.HasPrefix(c.Path, "A_SupplierInvoice(")) {
			n++
		}
	}
	s.sim.ResetCalls()
	return n
}

// TestRunSharesItsInvoiceRead: within one run, get_invoice reads the
// invoice and the match and the approval request that follow decide on that
// read; without a run id, in another run, and for the
// post, every request reads the ERP; and after the post the run reads the
// invoice afresh.
func TestRunSharesItsInvoiceRead(t *testing.T) {
	s := newStack(t, withSim(func(o *sim.Options) { o.RecordCalls = true }),
		// The run's loop limits would refuse the repeated calls below.
		withOptions(func(o *api.Options) { o.RunReadTTL, o.Runs.Disabled = time.Minute, true }))
	const inv = "5105600101"
	approve := map[string]any{"proposed_action": "post_as_invoiced", "justification": "Three-way match passed."}
	ok := func(r result) result {
		t.Helper()
		if r.status != http.StatusOK && r.status != http.StatusCreated {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return r
	}

	run := "X-Run-Id: run-shared-1"
	ok(s.do("GET", "/invoices/"+inv, nil, run))
	ok(s.do("POST", "/invoices/"+inv+"/three-way-match", map[string]any{}, run))
	appr := ok(s.do("POST", "/invoices/"+inv+"/approvals", approve, run)).json(t)
	if n := s.invoiceReads(); n != 1 {
		t.Errorf("get_invoice, match and approval request in one run: %d invoice reads, want 1", n)
	}
	if got := s.counter("erpgate_run_invoice_reads_total", map[string]string{"result": "hit"}); got != 2 {
		t.Errorf("run invoice reads hit: %v, want 2", got)
	}

	ok(s.do("POST", "/invoices/"+inv+"/three-way-match", map[string]any{}))
	ok(s.do("POST", "/invoices/"+inv+"/three-way-match", map[string]any{}, "X-Run-Id: run-shared-2"))
	if n := s.invoiceReads(); n != 2 {
		t.Errorf("a match without a run and one in another run: %d invoice reads, want 2", n)
	}

	// The post reads the invoice afresh (and once more after the Post).
	post := ok(s.do("POST", "/invoices/"+inv+"/post", map[string]any{"approval_id": appr["approval_id"]}, run)).json(t)
	if post["status"] != "posted" {
		t.Fatalf("post: %v", post)
	}
	if n := s.invoiceReads(); n != 2 {
		t.Errorf("post: %d invoice reads, want 2 (before and after the Post)", n)
	}
	ok(s.do("POST", "/invoices/"+inv+"/three-way-match", map[string]any{}, run))
	if n := s.invoiceReads(); n != 1 {
		t.Errorf("the run's match after the post: %d invoice reads, want 1 (the post forgot the run's read)", n)
	}
	if got := s.do("GET", "/invoices/"+inv, nil, run).json(t); got["status"] != "posted" {
		t.Errorf("get_invoice after the post: status %v, want posted", got["status"])
	}
}

// TestRunReadsOffByDefault: without RunReadTTL every request reads the ERP.
func TestRunReadsOffByDefault(t *testing.T) {
	s := newStack(t, withSim(func(o *sim.Options) { o.RecordCalls = true }))
	run := "X-Run-Id: run-off-1"
	s.do("GET", "/invoices/5105600101", nil, run)
	s.do("POST", "/invoices/5105600101/three-way-match", map[string]any{}, run)
	if n := s.invoiceReads(); n != 2 {
		t.Errorf("get_invoice and match without RunReadTTL: %d invoice reads, want 2", n)
	}
}
