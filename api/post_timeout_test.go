package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// postsAtTheERP counts the Posts the simulated ERP was sent.
func postsAtTheERP(s *sim.Server) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Service == erp.ServiceSupplierInvoice && c.Method == http.MethodPost && c.Path == "Post" {
			n++
		}
	}
	return n
}

// TestSlowPostIsPostedOnce: a Post that takes 8 s at the ERP, with 3 s for
// a read, is waited for under the Post's own timeout: post_invoice answers
// posted, and one Post reached the ERP.
func TestSlowPostIsPostedOnce(t *testing.T) {
	s := newStack(t, withPolicy(func(p *retry.Policy) { p.AttemptTimeout = 3 * time.Second }))
	posts := slowPosts(t, s, 8*time.Second)
	appr := approved(t, s, "5105600101")
	start := time.Now()
	r := s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": appr}, "Idempotency-Key: slow-post")
	took := time.Since(start)
	if r.status != 200 {
		t.Fatalf("got %d %s, want 200", r.status, r.body)
	}
	if m := r.json(t); m["status"] != "posted" || m["already_posted"] != false {
		t.Errorf("got %s, want posted by this call", r.body)
	}
	t.Logf("a Post that takes 8 s: answered 200 posted in %v, %d Post at the ERP", took.Round(time.Millisecond), posts())
	if n := posts(); n != 1 {
		t.Errorf("the ERP got %d Posts, want 1", n)
	}
	if n := countPostings(s.sim.Ledger(), "5105600101"); n != 1 {
		t.Errorf("the ledger has %d postings, want 1", n)
	}
}

// TestPostWithoutCSRF: an ERP that hands out no CSRF token (SAP CAP, a
// system with the check switched off) gets the Post without one.
func TestPostWithoutCSRF(t *testing.T) {
	s := newStack(t, withSim(func(o *sim.Options) { o.NoCSRF = true; o.RecordCalls = true }))
	appr := approved(t, s, "5105600101")
	r := s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": appr})
	if r.status != 200 || r.json(t)["status"] != "posted" {
		t.Fatalf("got %d %s, want 200 posted", r.status, r.body)
	}
	if n := postsAtTheERP(s.sim); n != 1 {
		t.Errorf("the ERP got %d Posts, want 1", n)
	}
	if n := countPostings(s.sim.Ledger(), "5105600101"); n != 1 {
		t.Errorf("the ledger has %d postings, want 1", n)
	}
}

// TestUnknownPostingIsSettledByAKeyedRepeat: a Post whose answer is lost
// while no read of the invoice can tell whether it was applied is not sent
// again: post_invoice answers ERP_OUTCOME_UNKNOWN, hold and re-check. The
// answer is not kept under its key, so the same call made again runs, reads
// the invoice first, finds it posted, and answers posted before, with no
// second Post.
func TestUnknownPostingIsSettledByAKeyedRepeat(t *testing.T) {
	s := newStack(t, withSim(func(o *sim.Options) { o.RecordCalls = true }), withPolicy(func(p *retry.Policy) {
		p.WriteTimeout, p.CallTimeout = time.Second, 2*time.Second
		p.Breaker.Disabled = true
	}))
	appr := approved(t, s, "5105600101")
	if err := s.sim.InjectFaults(
		// The Post is applied and its answer lost.
		sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultLost, Method: http.MethodPost, Path: "Post"},
		// Every read of the invoice by its key, the reads that settle a
		// lost Post, fails.
		sim.FaultRule{Service: erp.ServiceSupplierInvoice, Status: 503, Method: http.MethodGet, Path: "A_SupplierInvoice(", Count: -1},
	); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"approval_id": appr}
	start := time.Now()
	r := s.do("POST", "/invoices/5105600101/post", body, "Idempotency-Key: lost-post")
	d := wantError(t, r, http.StatusBadGateway, "ERP_OUTCOME_UNKNOWN", "hold_and_recheck")
	if d["invoice_id"] != "5105600101" || d["attempts"] != 1.0 {
		t.Errorf("details %v, want the invoice and one attempt", d)
	}
	t.Logf("unknown after %v", time.Since(start).Round(time.Millisecond))
	if n := postsAtTheERP(s.sim); n != 1 {
		t.Errorf("the ERP got %d Posts, want 1", n)
	}

	s.sim.ClearFaults()
	r = s.do("POST", "/invoices/5105600101/post", body, "Idempotency-Key: lost-post")
	if r.status != 200 {
		t.Fatalf("keyed repeat: got %d %s, want 200", r.status, r.body)
	}
	if m := r.json(t); m["status"] != "posted" || m["already_posted"] != true {
		t.Errorf("keyed repeat: got %s, want posted before", r.body)
	}
	if n := postsAtTheERP(s.sim); n != 1 {
		t.Errorf("the ERP got %d Posts, want 1", n)
	}
	if n := countPostings(s.sim.Ledger(), "5105600101"); n != 1 {
		t.Errorf("the ledger has %d postings, want 1", n)
	}
}
