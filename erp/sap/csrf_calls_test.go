package sap

import (
	"context"
	"net/http"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// simCalls returns the simulator's calls since the last look, as
// "METHOD path" with "+fetch" for a request that asked for a CSRF token.
func simCalls(s *sim.Server) []string {
	var out []string
	for _, c := range s.Calls() {
		k := c.Method + " " + c.Path
		if c.Fetch {
			k += " +fetch"
		}
		out = append(out, k)
	}
	s.ResetCalls()
	return out
}

func wantCalls(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: ERP calls %q, want %q", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: ERP calls %q, want %q", what, got, want)
			return
		}
	}
}

const (
	readInvoiceCall = "GET A_SupplierInvoice"
	postCall        = "POST Post"
)

func readBackCall(id string) string {
	return "GET A_SupplierInvoice(SupplierInvoice='" + id + "',FiscalYear='2026')"
}

// TestPostFetchesTokenOnTheRead: without a cached token, the read before a
// post brings the CSRF token along, and the post makes no fetch of its
// own; with one cached, neither the read nor the post fetches.
func TestPostFetchesTokenOnTheRead(t *testing.T) {
	s, c := newSim(t, sim.Options{RecordCalls: true}, retry.Policy{})
	ctx := context.Background()
	for i, id := range []string{"5105600101", "5105600102"} {
		inv, err := c.InvoiceForWrite(ctx, id)
		if err != nil || inv.ID != id || inv.Status != erp.InvoiceParked {
			t.Fatalf("InvoiceForWrite %s: %+v, %v", id, inv, err)
		}
		read := readInvoiceCall
		if i == 0 {
			read += " +fetch"
		}
		wantCalls(t, "read of "+id, simCalls(s), read)
		p, err := c.PostInvoice(ctx, inv, "key-"+id)
		if err != nil || p.Status != erp.InvoicePosted {
			t.Fatalf("PostInvoice %s: %+v, %v", id, p, err)
		}
		wantCalls(t, "post of "+id, simCalls(s), postCall, readBackCall(id))
	}
	if n := len(s.Ledger().Postings); n != 2 {
		t.Errorf("postings: %d, want 2", n)
	}
}

// TestPostWithStaleToken: a cached token the ERP no longer takes is
// fetched again once and the Post repeated exactly once; the invoice is
// posted once.
func TestPostWithStaleToken(t *testing.T) {
	s, c := newSim(t, sim.Options{RecordCalls: true}, retry.Policy{})
	ctx := context.Background()
	inv, err := c.InvoiceForWrite(ctx, "5105600101")
	if err == nil {
		_, err = c.PostInvoice(ctx, inv, "k1")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.ExpireTokens()
	simCalls(s)
	inv, err = c.InvoiceForWrite(ctx, "5105600102")
	if err != nil {
		t.Fatal(err)
	}
	// The cached token looks good to the gateway: the read asks for none.
	wantCalls(t, "read", simCalls(s), readInvoiceCall)
	if _, err := c.PostInvoice(ctx, inv, "k2"); err != nil {
		t.Fatalf("post with a stale token: %v", err)
	}
	var statuses []int
	for _, c := range s.Calls() {
		if c.Method == http.MethodPost {
			statuses = append(statuses, c.Status)
		}
	}
	wantCalls(t, "post", simCalls(s), postCall, "GET  +fetch", postCall, readBackCall("5105600102"))
	if len(statuses) != 2 || statuses[0] != http.StatusForbidden || statuses[1] != http.StatusOK {
		t.Errorf("Post answers: %v, want 403 then 200", statuses)
	}
	n := 0
	for _, p := range s.Ledger().Postings {
		if p.InvoiceID == "5105600102" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("postings of 5105600102: %d, want 1", n)
	}
	// The new token is cached: the next post fetches none.
	inv, err = c.InvoiceForWrite(ctx, "5105600109")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.PostInvoice(ctx, inv, "k3") // its period is closed; the calls are what counts
	wantCalls(t, "post after the refetch", simCalls(s), readInvoiceCall, postCall)
}

// TestInvoiceForWriteAnswersAsInvoice: the read that fetches a token
// answers as Invoice does, a missing invoice included.
func TestInvoiceForWriteAnswersAsInvoice(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	ctx := context.Background()
	want, err := c.Invoice(ctx, "5105600102")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.InvoiceForWrite(ctx, "5105600102")
	if err != nil || got.ID != want.ID || got.FiscalYear != want.FiscalYear || !got.GrossAmount.Equal(want.GrossAmount) ||
		len(got.Lines) != len(want.Lines) || got.Status != want.Status {
		t.Errorf("InvoiceForWrite: %+v, %v, want %+v", got, err, want)
	}
	_, err = c.InvoiceForWrite(ctx, "5105600999")
	if _, ok := err.(*erp.NotFoundError); !ok {
		t.Errorf("missing invoice: got %v, want a NotFoundError", err)
	}
}
