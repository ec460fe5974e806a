package sap

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

const releaseHoldJSON = `{"d":{"ReleaseHold":{"__metadata":{"type":"ZERPGATE_PROCESS_SRV.ReleaseHoldResult"},
"HoldID":"H0000001","SupplierInvoice":"5105600105","FiscalYear":"2026","Status":"RELEASED","SupplierInvoiceStatus":"A"}}}`

func TestReleaseHold(t *testing.T) {
	f := newFake(t, respond(200, releaseHoldJSON))
	c := f.client(Options{})
	if err := c.ReleaseHold(context.Background(), erp.Hold{ID: "H0000001", InvoiceID: "5105600105", FiscalYear: "2026"}); err != nil {
		t.Fatalf("ReleaseHold: got %v, want nil", err)
	}
	r := f.odata()[0]
	if r.method != http.MethodPost || r.path != zPath+"ReleaseHold" {
		t.Errorf("request: got %s %s, want POST %sReleaseHold", r.method, r.path, zPath)
	}
	if got := r.query["HoldID"]; !slices.Equal(got, []string{"'H0000001'"}) {
		t.Errorf("HoldID: got %q, want 'H0000001'", got)
	}
	if got := r.header.Get("X-CSRF-Token"); got != "tok-1" {
		t.Errorf("token: got %q, want tok-1", got)
	}
	id := r.header.Get("Repeatability-Request-ID")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("Repeatability-Request-ID: got %q, want 32 hex characters", id)
	}
	if r.body != "" {
		t.Errorf("body: got %q, want none", r.body)
	}

	// A repeated release is a new request to the ERP, which answers it as
	// released again.
	if err := c.ReleaseHold(context.Background(), erp.Hold{ID: "H0000001"}); err != nil {
		t.Fatalf("second ReleaseHold: got %v, want nil", err)
	}
	if again := f.odata()[1].header.Get("Repeatability-Request-ID"); again == id || again == "" {
		t.Errorf("second Repeatability-Request-ID: got %q, want a new one", again)
	}

	// The result directly in "d" is read as well.
	f = newFake(t, respond(200, `{"d":{"HoldID":"H0000001","Status":"released"}}`))
	if err := f.client(Options{}).ReleaseHold(context.Background(), erp.Hold{ID: "H0000001"}); err != nil {
		t.Errorf("ReleaseHold with the result in d: got %v, want nil", err)
	}
}

func TestReleaseHoldErrors(t *testing.T) {
	f := newFake(t, respond(http.StatusBadRequest, `{"error":{"code":"ZERPGATE/040","message":{"lang":"en","value":"Hold H0000001 is locked"}}}`))
	err := f.client(Options{}).ReleaseHold(context.Background(), erp.Hold{ID: "H0000001", InvoiceID: "5105600105"})
	var up *erp.UpstreamError
	if !errors.As(err, &up) {
		t.Fatalf("got %v, want an UpstreamError", err)
	}
	if up.Service != erp.ServiceProcess || !up.Write || up.Status != 400 || !up.HasMessage("ZERPGATE/040") ||
		up.Keys["hold_id"] != "H0000001" || up.Keys["invoice_id"] != "5105600105" {
		t.Errorf("got %+v, want a process write error 400 ZERPGATE/040 with hold and invoice keys", up)
	}

	// A refused token is fetched again and the release repeated once.
	f = newFake(t, respond(200, releaseHoldJSON))
	f.refuse = 1
	if err := f.client(Options{}).ReleaseHold(context.Background(), erp.Hold{ID: "H0000001"}); err != nil {
		t.Errorf("ReleaseHold after a refused token: got %v, want nil", err)
	}
	if n := f.fetchCount(); n != 2 {
		t.Errorf("token fetches: got %d, want 2", n)
	}
}

func TestSimReleaseHold(t *testing.T) {
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, c := newSim(t, sim.Options{Now: func() time.Time { return clock }}, retry.Policy{})
	ctx := context.Background()
	h, err := c.HoldInvoice(ctx, erp.HoldRequest{InvoiceID: "5105600105", Reason: "gr_missing", RecheckAt: clock.Add(time.Hour)})
	if err != nil {
		t.Fatalf("HoldInvoice: %v", err)
	}
	if h.FiscalYear != "2026" {
		t.Errorf("hold fiscal year: got %q, want 2026", h.FiscalYear)
	}

	// Goods arrive: the receipts read back count them.
	grs, err := c.GoodsReceipts(ctx, "4500018822", "20")
	if err != nil || len(grs) != 0 {
		t.Fatalf("receipts before: got %v, %v, want none", grs, err)
	}
	doc, err := s.PostGoodsReceipt("4500018822", "20", decimal.NewFromInt(5))
	if err != nil {
		t.Fatalf("PostGoodsReceipt: %v", err)
	}
	grs, err = c.GoodsReceipts(ctx, "4500018822", "20")
	if err != nil || len(grs) != 1 || grs[0].MaterialDocument != doc || !grs[0].Quantity.Equal(decimal.NewFromInt(5)) ||
		!grs[0].PostingDate.Equal(day(2026, 11, 29)) {
		t.Fatalf("receipts after: got %+v, %v, want %s of 5 on 2026-11-29", grs, err, doc)
	}

	if err := c.ReleaseHold(ctx, h); err != nil {
		t.Fatalf("ReleaseHold: %v", err)
	}
	inv, err := c.Invoice(ctx, "5105600105")
	if err != nil || inv.Status != erp.InvoiceParked || inv.PaymentBlock != "" {
		t.Errorf("invoice after release: got %v block %q, %v, want parked without block", inv.Status, inv.PaymentBlock, err)
	}
	if err := c.ReleaseHold(ctx, h); err != nil {
		t.Errorf("repeated ReleaseHold: got %v, want nil", err)
	}
	l := s.Ledger()
	if len(l.Holds) != 1 || l.Holds[0].Status != sim.HoldReleased || !l.Holds[0].ReleasedAt.Equal(clock) {
		t.Errorf("ledger: got %+v, want the hold released at %v", l.Holds, clock)
	}

	err = c.ReleaseHold(ctx, erp.Hold{ID: "H0000099"})
	var nf *erp.NotFoundError
	if !errors.As(err, &nf) || nf.Entity != erp.EntityHold || nf.ID != "H0000099" {
		t.Errorf("release of an unknown hold: got %v, want NotFoundError hold H0000099", err)
	}
}
