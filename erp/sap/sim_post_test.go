package sap

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// TestSimPost posts each invoice of the golden set through the function
// import Post of the simulator.
func TestSimPost(t *testing.T) {
	s, c := newSim(t, sim.Options{}, retry.Policy{})
	ctx := context.Background()
	post := func(id, fy, key string) (erp.Posting, error) {
		return c.PostInvoice(ctx, erp.Invoice{ID: id, FiscalYear: fy}, key)
	}

	// Clean: posted by this call, without block or messages, with the
	// posting date read back.
	p, err := post("5105600101", "2026", "post-101")
	if err != nil {
		t.Fatalf("post 5105600101: got %v, want nil", err)
	}
	same(t, "posting of 5105600101", p, erp.Posting{InvoiceID: "5105600101", FiscalYear: "2026", Status: erp.InvoicePosted,
		PostedAt: day(2026, 11, 24)})
	if got := errmap.Info(p.Messages, p.PaymentBlock); got != "" {
		t.Errorf("clean posting: info %q, want none", got)
	}
	// The key is not sent to the ERP, which declares no repeatability
	// header: the same key posts nothing again, and the ERP says the
	// invoice was posted before.
	again, err := post("5105600101", "2026", "post-101")
	if err != nil || again.Status != erp.InvoicePosted || !again.AlreadyPosted {
		t.Errorf("repeated post: got %+v, %v, want posted before", again, err)
	}
	if n := len(s.Ledger().Postings); n != 1 {
		t.Errorf("postings after a repeated post: got %d, want 1", n)
	}
	if inv, err := c.Invoice(ctx, "5105600101"); err != nil || inv.Status != erp.InvoicePosted || inv.SAPStatus != "5" {
		t.Errorf("invoice after post: got %q (%q), %v, want posted (5)", inv.Status, inv.SAPStatus, err)
	}
	// Another key is another call: the ERP answers M8/255, which settles
	// as posted before, not as a failure.
	again, err = post("5105600101", "2026", "post-101-b")
	same(t, "post of a posted invoice", again, erp.Posting{InvoiceID: "5105600101", FiscalYear: "2026", Status: erp.InvoicePosted,
		PostedAt: day(2026, 11, 24), AlreadyPosted: true})
	if err != nil {
		t.Errorf("post of a posted invoice: got %v, want nil", err)
	}
	// Posted in the golden set already.
	if p, err := post("5105600100", "2026", ""); err != nil || !p.AlreadyPosted || !p.PostedAt.Equal(day(2026, 10, 5)) {
		t.Errorf("post of 5105600100: got %+v, %v, want posted before on 2026-10-05", p, err)
	}
	if n := len(s.Ledger().Postings); n != 1 {
		t.Errorf("postings after posts of posted invoices: got %d, want 1", n)
	}

	// A price variance: posted with payment block R and the warning, which
	// the agent is told as TOLERANCE_EXCEEDED. The fiscal year is read
	// first.
	p, err = post("5105600102", "", "")
	if err != nil {
		t.Fatalf("post 5105600102: got %v, want nil", err)
	}
	if p.PaymentBlock != "R" || !slices.Contains(p.Messages, erp.Message{ID: "M8/082", Severity: "warning"}) || p.FiscalYear != "2026" || p.AlreadyPosted {
		t.Errorf("post 5105600102: got %+v, want block R and warning M8/082", p)
	}
	if got := errmap.Info(p.Messages, p.PaymentBlock); got != errmap.ToleranceExceeded {
		t.Errorf("post 5105600102: info %q, want TOLERANCE_EXCEEDED", got)
	}
	if l := s.Ledger().Postings; len(l) != 2 || l[1].InvoiceID != "5105600102" || l[1].PaymentBlock != "R" {
		t.Errorf("ledger: got %+v, want 5105600102 posted second with block R", l)
	}

	failures := []struct {
		id, fy string
		msg    string
		code   errmap.Code
	}{
		{"5105600104", "2026", "06/025", errmap.SupplierNotFound},
		{"5105600109", "2025", "F5/201", errmap.PeriodClosed},
		{"5105600107", "2026", "M8/108", errmap.DuplicateInvoice},
		{"5105600106", "2026", "06/020", errmap.POClosed},
		{"5105600105", "2026", "M8/081", errmap.GRMissing},
		{"5105600103", "2026", "06/019", errmap.PONotFound},
	}
	for _, tt := range failures {
		_, err := post(tt.id, tt.fy, "")
		var up *erp.UpstreamError
		if !errors.As(err, &up) {
			t.Errorf("post %s: got %v, want an UpstreamError", tt.id, err)
			continue
		}
		if up.Status != 400 || len(up.MessageIDs) == 0 || up.MessageIDs[0] != tt.msg || up.Transient || !up.Write || up.Unconfirmed {
			t.Errorf("post %s: got status %d ids %q transient %v, want 400 [%s ...] not transient", tt.id, up.Status, up.MessageIDs, up.Transient, tt.msg)
		}
		if up.Keys["invoice_id"] != tt.id {
			t.Errorf("post %s: got keys %v, want invoice_id", tt.id, up.Keys)
		}
		if e := errmap.Map(err); e.Code != tt.code {
			t.Errorf("post %s: mapped to %s, want %s", tt.id, e.Code, tt.code)
		}
	}
	if n := len(s.Ledger().Postings); n != 2 {
		t.Errorf("postings after refusals: got %d, want 2", n)
	}

	_, err = post("5105600199", "2026", "")
	var nf *erp.NotFoundError
	if !errors.As(err, &nf) || nf.Entity != erp.EntityInvoice || nf.ID != "5105600199" {
		t.Errorf("post of an unknown invoice: got %v, want NotFoundError invoice", err)
	}
	// The period opens: the last year's invoice posts.
	s2, c2 := newSim(t, sim.Options{ClosedBefore: time.Date(2025, time.December, 1, 0, 0, 0, 0, time.UTC)}, retry.Policy{})
	p, err = c2.PostInvoice(ctx, erp.Invoice{ID: "5105600109", FiscalYear: "2025"}, "")
	if err != nil || p.FiscalYear != "2025" || !p.PostedAt.Equal(day(2025, 12, 30)) || len(s2.Ledger().Postings) != 1 {
		t.Errorf("post in an open period: got %+v, %v, want posted in 2025", p, err)
	}
}

// TestSimPostLostAnswer: a Post the simulator applies but whose answer it
// drops is settled by reading the invoice back, once or every time.
func TestSimPostLostAnswer(t *testing.T) {
	for _, count := range []int{1, -1} {
		for _, id := range []string{"5105600101", "5105600102"} {
			rule := sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultLost, Method: "POST", Path: "Post", Count: count}
			s, c := newSim(t, sim.Options{Faults: []sim.FaultRule{rule}},
				retry.Policy{AttemptTimeout: 2 * time.Second, MaxAttempts: 3, Breaker: retry.BreakerSettings{Disabled: true}})
			p, err := c.PostInvoice(context.Background(), erp.Invoice{ID: id, FiscalYear: "2026"}, "")
			if err != nil {
				t.Fatalf("%s, lost %d: got %v, want the posting", id, count, err)
			}
			wantBlock := map[string]string{"5105600101": "", "5105600102": "R"}[id]
			if p.Status != erp.InvoicePosted || p.AlreadyPosted || p.PaymentBlock != wantBlock || !p.PostedAt.Equal(day(2026, 11, 24)) {
				t.Errorf("%s, lost %d: got %+v, want posted by this call with block %q", id, count, p, wantBlock)
			}
			// The block R still tells the agent of the variance, though the
			// warning was lost with the answer.
			if got, want := errmap.Info(p.Messages, p.PaymentBlock), map[string]errmap.Code{"5105600102": errmap.ToleranceExceeded}[id]; got != want {
				t.Errorf("%s, lost %d: info %q, want %q", id, count, got, want)
			}
			if n := len(s.Ledger().Postings); n != 1 {
				t.Errorf("%s, lost %d: postings %d, want 1", id, count, n)
			}
		}
	}
}

// TestSimReleasePaymentBlock lifts the block a price variance set.
func TestSimReleasePaymentBlock(t *testing.T) {
	s, c := newSim(t, sim.Options{}, retry.Policy{})
	ctx := context.Background()
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	// Parked, it is not blocked for payment: nothing to lift.
	if err := c.ReleasePaymentBlock(ctx, inv, false, ""); err != nil {
		t.Errorf("release of a parked invoice: got %v, want nil", err)
	}
	if p, err := c.PostInvoice(ctx, inv, ""); err != nil || p.PaymentBlock != "R" {
		t.Fatalf("post: got %+v, %v, want block R", p, err)
	}
	if err := c.ReleasePaymentBlock(ctx, inv, true, "rel-102"); err != nil {
		t.Fatalf("release: got %v, want nil", err)
	}
	got, err := c.Invoice(ctx, "5105600102")
	if err != nil || got.Status != erp.InvoicePosted || got.PaymentBlock != "" {
		t.Errorf("invoice after release: got %q block %q, %v, want posted without block", got.Status, got.PaymentBlock, err)
	}
	if err := c.ReleasePaymentBlock(ctx, inv, false, ""); err != nil {
		t.Errorf("second release: got %v, want nil", err)
	}
	if n := len(s.Ledger().Postings); n != 1 {
		t.Errorf("postings: got %d, want the one Post", n)
	}
	var nf *erp.NotFoundError
	if err := c.ReleasePaymentBlock(ctx, erp.Invoice{ID: "5105600199", FiscalYear: "2026"}, false, ""); !errors.As(err, &nf) {
		t.Errorf("release of an unknown invoice: got %v, want NotFoundError", err)
	}
}
