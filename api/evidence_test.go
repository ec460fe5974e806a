package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// evidenceServer is the gateway over the simulated ERP, which records the
// calls it answers.
func evidenceServer(t *testing.T) (*api.Server, *sim.Server, records.Store) {
	t.Helper()
	simulated := sim.New(sim.Options{RecordCalls: true})
	simSrv := httptest.NewServer(simulated)
	t.Cleanup(simSrv.Close)
	metrics := api.NewMetrics()
	runner := retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond,
		MaxInterval: 20 * time.Millisecond, MaxAttempts: 2}, metrics)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := recordstest.SQLite(t)
	srv, err := api.NewServer(api.Options{ERP: client, Records: store, Metrics: metrics, RunReadTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return srv, simulated, store
}

func TestInvoiceEvidence(t *testing.T) {
	srv, simulated, store := evidenceServer(t)
	ctx := context.Background()
	ev, err := srv.InvoiceEvidence(ctx, "5105600102")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Invoice.SupplierRef != "ACME-2026-0419" || ev.Invoice.CompanyCode != "1010" || ev.Invoice.GrossAmount.StringFixed(2) != "13500.00" {
		t.Errorf("invoice %+v", ev.Invoice)
	}
	if ev.SupplierErr != nil || ev.Supplier.ID != "100042" || ev.Supplier.Name != "Acme Industrial Supplies GmbH" {
		t.Errorf("supplier %+v, %v", ev.Supplier, ev.SupplierErr)
	}
	if len(ev.Lines) != 1 {
		t.Fatalf("%d lines, want 1", len(ev.Lines))
	}
	l := ev.Lines[0]
	item, ok := l.Order.Item("10")
	if l.OrderErr != nil || l.Order.ID != "4500018823" || !ok || item.UnitPrice().StringFixed(2) != "125.00" {
		t.Errorf("order %+v, %v", l.Order, l.OrderErr)
	}
	if l.ReceiptsErr != nil || len(l.Receipts) != 1 || l.Receipts[0].Quantity.String() != "100" {
		t.Errorf("receipts %+v, %v", l.Receipts, l.ReceiptsErr)
	}
	if ev.MatchErr != nil || ev.Match.Status != erp.ToleranceExceeded || len(ev.Match.Exceeding) != 1 {
		t.Fatalf("match %+v, %v", ev.Match, ev.MatchErr)
	}
	v := ev.Match.Exceeding[0]
	if v.Kind != erp.PriceVariance || v.Percent.String() != "8" || v.Amount.StringFixed(2) != "1000.00" ||
		ev.Match.Lines[0].InvoicedUnitPrice.StringFixed(2) != "135.00" {
		t.Errorf("variance %+v, line %+v", v, ev.Match.Lines[0])
	}
	if ev.Tolerance.Percent.String() != "2" || ev.Tolerance.Absolute.String() != "50" {
		t.Errorf("tolerance %+v, want 2 %% / 50", ev.Tolerance)
	}

	// Each thing read once, nothing written to the ERP.
	seen := map[string]bool{}
	for _, c := range simulated.Calls() {
		if c.Method != http.MethodGet {
			t.Errorf("the evidence read made a %s: %s", c.Method, c.URI)
		}
		if !c.Read() {
			continue
		}
		if seen[c.Key()] {
			t.Errorf("read twice: %s", c.Key())
		}
		seen[c.Key()] = true
	}
	if len(seen) < 5 {
		t.Errorf("%d distinct reads, want the invoice, supplier, duplicate search, order and receipts: %v", len(seen), seen)
	}
	// Nothing in the records: no case, no audit row.
	if _, err := store.Case(ctx, "5105600102"); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("the evidence read made or touched the case: %v", err)
	}
	if audit, err := store.Audit(ctx, records.AuditFilter{}); err != nil || len(audit) != 0 {
		t.Errorf("audit after the evidence read: %v %v", audit, err)
	}
}

func TestInvoiceEvidenceFailures(t *testing.T) {
	srv, simulated, _ := evidenceServer(t)
	ctx := context.Background()

	// A business finding of the match is beside the reads, which stand.
	ev, err := srv.InvoiceEvidence(ctx, "5105600105")
	if err != nil {
		t.Fatal(err)
	}
	if code := errmap.Map(ev.MatchErr); code == nil || code.Code != errmap.GRMissing {
		t.Errorf("match of 5105600105: %v, want GR_MISSING", ev.MatchErr)
	}
	if len(ev.Lines) != 1 || ev.Lines[0].Order.ID != "4500018822" || len(ev.Lines[0].Receipts) != 0 {
		t.Errorf("lines of 5105600105: %+v", ev.Lines)
	}

	// The supplier's read failing leaves the supplier out, and the match.
	if err := simulated.InjectFault(sim.FaultRule{Service: erp.ServiceBusinessPartner, Status: http.StatusServiceUnavailable, Count: -1}); err != nil {
		t.Fatal(err)
	}
	ev, err = srv.InvoiceEvidence(ctx, "5105600102")
	if err != nil {
		t.Fatal(err)
	}
	if code := errmap.Map(ev.SupplierErr); code == nil || code.Code != errmap.ERPUnavailable || ev.MatchErr == nil {
		t.Errorf("supplier %v, match %v: want ERP_UNAVAILABLE for both", ev.SupplierErr, ev.MatchErr)
	}
	if len(ev.Lines) != 1 || ev.Lines[0].Order.ID != "4500018823" {
		t.Errorf("the order's read failed with the supplier's: %+v", ev.Lines)
	}

	// The invoice's read failing is the error: nothing to show.
	simulated.ClearFaults()
	if err := simulated.InjectFault(sim.FaultRule{Service: erp.ServiceSupplierInvoice, Status: http.StatusServiceUnavailable, Count: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.InvoiceEvidence(ctx, "5105600102"); errmap.Map(err) == nil || errmap.Map(err).Code != errmap.ERPUnavailable {
		t.Errorf("invoice read failing: %v, want ERP_UNAVAILABLE", err)
	}
	simulated.ClearFaults()
	if _, err := srv.InvoiceEvidence(ctx, "5105600199"); errmap.Map(err) == nil || errmap.Map(err).Code != errmap.InvoiceNotFound {
		t.Errorf("unknown invoice: %v, want INVOICE_NOT_FOUND", err)
	}
}
