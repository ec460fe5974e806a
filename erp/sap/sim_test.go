package sap

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap/sapspec"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// newSim starts the simulator seeded with the golden set and returns it
// with a Client for it.
func newSim(t *testing.T, opts sim.Options, policy retry.Policy) (*sim.Server, *Client) {
	t.Helper()
	s := sim.New(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	if policy.AttemptTimeout == 0 {
		policy.AttemptTimeout = 5 * time.Second
	}
	if policy.MaxAttempts == 0 {
		policy.MaxAttempts = 1
		policy.Breaker.Disabled = true
	}
	c, err := New(srv.URL, Options{Runner: retry.New(policy, nil), HTTPClient: sapspec.CheckedHTTPClient(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, c
}

func TestSimInvoices(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	tests := []struct {
		id, fy, supplier, ref string
		posting               time.Time
		status                erp.InvoiceStatus
		gross                 string
		po, item, qty, amount string
	}{
		{"5105600100", "2026", "100043", "INV-88120", day(2026, 10, 5), erp.InvoicePosted, "1190", "4500018860", "10", "10", "1190"},
		{"5105600101", "2026", "100042", "ACME-2026-0412", day(2026, 11, 24), erp.InvoiceParked, "1000", "4500018822", "10", "10", "1000"},
		{"5105600102", "2026", "100042", "ACME-2026-0419", day(2026, 11, 24), erp.InvoiceParked, "13500", "4500018823", "10", "100", "13500"},
		{"5105600103", "2026", "100042", "ACME-2026-0420", day(2026, 11, 24), erp.InvoiceParked, "1000", "4500019822", "10", "10", "1000"},
		{"5105600104", "2026", "100999", "GX-7781", day(2026, 11, 24), erp.InvoiceParked, "1000", "4500018822", "10", "10", "1000"},
		{"5105600105", "2026", "100042", "ACME-2026-0421", day(2026, 11, 24), erp.InvoiceParked, "1000", "4500018822", "20", "5", "1000"},
		{"5105600106", "2026", "100043", "NW-55102", day(2026, 11, 24), erp.InvoiceParked, "800", "4500018830", "10", "1", "800"},
		{"5105600107", "2026", "100043", "INV-88120", day(2026, 11, 24), erp.InvoiceParked, "1190", "4500018860", "10", "10", "1190"},
		{"5105600108", "2026", "100043", "NW-55230", day(2026, 11, 25), erp.InvoiceParked, "250000", "4500018840", "10", "1", "250000"},
		{"5105600109", "2025", "100042", "ACME-2025-1299", day(2025, 12, 30), erp.InvoiceParked, "600", "4500018850", "10", "5", "600"},
	}
	for _, tt := range tests {
		inv, err := c.Invoice(context.Background(), tt.id)
		if err != nil {
			t.Errorf("Invoice(%s): got error %v, want nil", tt.id, err)
			continue
		}
		got := []any{inv.FiscalYear, inv.SupplierID, inv.SupplierRef, inv.PostingDate.Format(time.DateOnly), inv.Status,
			inv.GrossAmount.String(), inv.Currency, inv.CompanyCode, len(inv.Lines)}
		want := []any{tt.fy, tt.supplier, tt.ref, tt.posting.Format(time.DateOnly), tt.status, tt.gross, "EUR", "1010", 1}
		same(t, "invoice "+tt.id, got, want)
		if len(inv.Lines) == 1 {
			l := inv.Lines[0]
			same(t, "line of "+tt.id, []string{l.POID, l.POItem, l.Quantity.String(), l.Amount.String()},
				[]string{tt.po, tt.item, tt.qty, tt.amount})
		}
	}

	_, err := c.Invoice(context.Background(), "5105600199")
	var nf *erp.NotFoundError
	if !errors.As(err, &nf) || nf.Entity != erp.EntityInvoice {
		t.Errorf("Invoice(5105600199): got %v, want NotFoundError invoice", err)
	}

	dups, err := c.InvoicesBySupplierRef(context.Background(), "100043", "INV-88120")
	if err != nil {
		t.Fatalf("InvoicesBySupplierRef: %v", err)
	}
	var ids []string
	for _, d := range dups {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	if want := []string{"5105600100", "5105600107"}; !slices.Equal(ids, want) {
		t.Errorf("InvoicesBySupplierRef: got %q, want %q", ids, want)
	}
}

func TestSimPurchaseOrders(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	tests := []struct {
		id, supplier, deletion string
		items                  [][4]string // item, quantity, net price, text
		closed                 bool        // item 10
	}{
		{"4500018822", "100042", "", [][4]string{{"10", "10", "100", "Steel bolts M8"}, {"20", "5", "200", "Hex nuts M8"}}, false},
		{"4500018823", "100042", "", [][4]string{{"10", "100", "125", "Hydraulic pump HP-20"}}, false},
		{"4500018830", "100043", "", [][4]string{{"10", "1", "800", "Pallet transport"}}, true},
		{"4500018831", "100043", "L", [][4]string{{"10", "1", "300", "Cancelled freight"}}, true},
		{"4500018840", "100043", "", [][4]string{{"10", "1", "250000", "Warehouse racking system"}}, false},
		{"4500018850", "100042", "", [][4]string{{"10", "5", "120", "Safety gloves"}}, false},
		{"4500018860", "100043", "", [][4]string{{"10", "10", "119", "Freight Hamburg-Munich"}}, false},
	}
	for _, tt := range tests {
		po, err := c.PurchaseOrder(context.Background(), tt.id)
		if err != nil {
			t.Errorf("PurchaseOrder(%s): got error %v, want nil", tt.id, err)
			continue
		}
		if po.SupplierID != tt.supplier || po.DeletionCode != tt.deletion || po.Currency != "EUR" {
			t.Errorf("PO %s: got supplier %q deletion %q currency %q, want %q %q EUR", tt.id, po.SupplierID, po.DeletionCode, po.Currency, tt.supplier, tt.deletion)
		}
		var items [][4]string
		for _, it := range po.Items {
			items = append(items, [4]string{it.Item, it.Quantity.String(), it.UnitPrice().String(), it.Text})
		}
		same(t, "items of "+tt.id, items, tt.items)
		if it, ok := po.Item("10"); !ok {
			t.Errorf("PO %s: no item 10", tt.id)
		} else if closed, _ := it.Closed(); closed != tt.closed {
			t.Errorf("PO %s item 10 closed: got %v, want %v", tt.id, closed, tt.closed)
		}
	}
	_, err := c.PurchaseOrder(context.Background(), "4500019822")
	var nf *erp.NotFoundError
	if !errors.As(err, &nf) || nf.Entity != erp.EntityPurchaseOrder || nf.ID != "4500019822" {
		t.Errorf("PurchaseOrder(4500019822): got %v, want NotFoundError purchase_order", err)
	}
}

func TestSimGoodsReceipts(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	tests := []struct {
		po, item string
		want     []string // quantities
	}{
		{"4500018822", "10", []string{"10"}},
		{"4500018822", "20", nil},
		{"4500018823", "10", []string{"100"}},
		{"4500018830", "10", []string{"1"}},
		{"4500018840", "10", []string{"1"}},
		{"4500018850", "10", []string{"5"}},
		{"4500018860", "10", []string{"10"}},
		{"4500018822", "00010", []string{"10"}},
	}
	for _, tt := range tests {
		grs, err := c.GoodsReceipts(context.Background(), tt.po, tt.item)
		if err != nil {
			t.Errorf("GoodsReceipts(%s/%s): got error %v, want nil", tt.po, tt.item, err)
			continue
		}
		var qty []string
		for _, g := range grs {
			qty = append(qty, g.Quantity.String())
			if g.POID != tt.po || g.Year != "2026" || !strings.HasPrefix(g.MaterialDocument, "49000001") {
				t.Errorf("GR %+v: want PO %s, year 2026, document 49000001xx", g, tt.po)
			}
		}
		if !slices.Equal(qty, tt.want) {
			t.Errorf("GoodsReceipts(%s/%s): got quantities %q, want %q", tt.po, tt.item, qty, tt.want)
		}
	}
}

func TestSimSuppliers(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	tests := []erp.Supplier{
		{ID: "100042", Name: "Acme Industrial Supplies GmbH", Country: "DE"},
		{ID: "100043", Name: "Nordwind Logistik AG", Country: "DE"},
		{ID: "100044", Name: "Acme Office Furniture Ltd", Country: "GB"},
		{ID: "100050", Name: "Baltic Trading OÜ", Country: "EE", PostingBlocked: true},
	}
	for _, want := range tests {
		got, err := c.Supplier(context.Background(), want.ID)
		if err != nil {
			t.Errorf("Supplier(%s): got error %v, want nil", want.ID, err)
			continue
		}
		same(t, "supplier "+want.ID, got, want)
	}
	_, err := c.Supplier(context.Background(), "100999")
	var nf *erp.NotFoundError
	if !errors.As(err, &nf) || nf.Entity != erp.EntitySupplier {
		t.Errorf("Supplier(100999): got %v, want NotFoundError supplier", err)
	}

	for _, q := range []string{"acme", "ACME"} {
		found, err := c.SearchSuppliers(context.Background(), q, 10)
		if err != nil {
			t.Fatalf("SearchSuppliers(%q): %v", q, err)
		}
		var ids []string
		for _, s := range found {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		if want := []string{"100042", "100044"}; !slices.Equal(ids, want) {
			t.Errorf("SearchSuppliers(%q): got %q, want %q", q, ids, want)
		}
	}
	one, err := c.SearchSuppliers(context.Background(), "acme", 1)
	if err != nil || len(one) != 1 {
		t.Errorf("SearchSuppliers limit 1: got %d, %v, want 1 supplier", len(one), err)
	}
	none, err := c.SearchSuppliers(context.Background(), "no such name", 10)
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("SearchSuppliers no match: got %#v, %v, want an empty slice", none, err)
	}
	quote, err := c.SearchSuppliers(context.Background(), "O'Brien", 10)
	if err != nil || len(quote) != 0 {
		t.Errorf("SearchSuppliers with a quote: got %v, %v, want no suppliers and no error", quote, err)
	}
}

// TestSimConcurrentPosts: calls that post one invoice at once all succeed.
// The ERP posts it once; the calls that lose the race get M8/255 and settle
// it as posted before, with what the winning posting set.
func TestSimConcurrentPosts(t *testing.T) {
	for _, n := range []int{2, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, c := newSim(t, sim.Options{}, retry.Policy{})
			ctx := context.Background()
			// The token is fetched first, so that the calls race on the
			// Post and not on the fetch.
			if _, err := c.PostInvoice(ctx, erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, ""); err != nil {
				t.Fatalf("warm-up post: %v", err)
			}
			postings := make([]erp.Posting, n)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					postings[i], errs[i] = c.PostInvoice(ctx, erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
				})
			}
			close(start)
			wg.Wait()
			first := 0
			for i, p := range postings {
				if errs[i] != nil {
					t.Errorf("post %d: got %v, want nil", i, errs[i])
					continue
				}
				if !p.AlreadyPosted {
					first++
				}
				if p.InvoiceID != "5105600102" || p.FiscalYear != "2026" || p.Status != erp.InvoicePosted || p.PaymentBlock != "R" {
					t.Errorf("post %d: got %+v, want 5105600102/2026 posted with block R", i, p)
				}
			}
			if first != 1 {
				t.Errorf("posts not posted before: got %d, want exactly 1", first)
			}
			var of102 int
			for _, p := range s.Ledger().Postings {
				if p.InvoiceID == "5105600102" {
					of102++
				}
			}
			if of102 != 1 {
				t.Errorf("ledger postings of 5105600102: got %d, want 1", of102)
			}
		})
	}
}

func TestSimEnvelopeForms(t *testing.T) {
	for _, form := range []string{sim.EnvelopeV2, sim.EnvelopeV2Detail, sim.EnvelopeV4} {
		t.Run(form, func(t *testing.T) {
			_, c := newSim(t, sim.Options{Envelope: form}, retry.Policy{})
			_, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600107", FiscalYear: "2026"}, "")
			var up *erp.UpstreamError
			if !errors.As(err, &up) || !up.HasMessage("M8/108") || up.MessageIDs[0] != "M8/108" || up.Text == "" {
				t.Fatalf("got %v, want an UpstreamError with M8/108 first and a text", err)
			}
			noUpstreamText(t, up)
		})
	}
}

func TestSimPostedGoodsReceipt(t *testing.T) {
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s, c := newSim(t, sim.Options{Now: func() time.Time { return clock }}, retry.Policy{})
	ctx := context.Background()

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
}

func TestSimCSRFExpiry(t *testing.T) {
	s, c := newSim(t, sim.Options{}, retry.Policy{})
	ctx := context.Background()
	if _, err := c.PostInvoice(ctx, erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, ""); err != nil {
		t.Fatalf("first post: %v", err)
	}
	s.ExpireTokens()
	if _, err := c.PostInvoice(ctx, erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, ""); err != nil {
		t.Fatalf("post after token expiry: got %v, want nil", err)
	}
	if n := len(s.Ledger().Postings); n != 2 {
		t.Errorf("postings: got %d, want 2", n)
	}
}

func TestSimFaults(t *testing.T) {
	tests := []struct {
		name      string
		rule      sim.FaultRule
		transient bool
		timeout   bool
		status    int
	}{
		{"503", sim.FaultRule{Kind: sim.FaultStatus, Status: 503, RetryAfterS: 2}, true, false, 503},
		{"429", sim.FaultRule{Kind: sim.FaultStatus, Status: 429}, true, false, 429},
		{"502", sim.FaultRule{Kind: sim.FaultStatus, Status: 502}, true, false, 502},
		{"504", sim.FaultRule{Kind: sim.FaultStatus, Status: 504}, true, false, 504},
		{"html 500", sim.FaultRule{Kind: sim.FaultHTML500}, true, false, 500},
		{"malformed", sim.FaultRule{Kind: sim.FaultMalformed}, false, false, 200},
		{"reset", sim.FaultRule{Kind: sim.FaultReset}, true, false, 0},
		{"hang", sim.FaultRule{Kind: sim.FaultHang, DelayMS: 5000}, true, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rule.Service = erp.ServiceBusinessPartner
			_, c := newSim(t, sim.Options{Faults: []sim.FaultRule{tt.rule}}, retry.Policy{AttemptTimeout: 200 * time.Millisecond})
			_, err := c.Supplier(context.Background(), "100042")
			var up *erp.UpstreamError
			if !errors.As(err, &up) {
				t.Fatalf("got %v, want an UpstreamError", err)
			}
			if up.Transient != tt.transient || up.Timeout != tt.timeout || up.Status != tt.status {
				t.Errorf("got status %d transient %v timeout %v, want %d %v %v", up.Status, up.Transient, up.Timeout, tt.status, tt.transient, tt.timeout)
			}
			if tt.status == 503 && up.RetryAfter != 2*time.Second {
				t.Errorf("retry after: got %v, want 2s", up.RetryAfter)
			}
			if tt.status == 429 && up.RetryAfter <= 0 {
				t.Errorf("retry after: got %v, want a positive hint", up.RetryAfter)
			}
			// The fault is spent: the next read succeeds.
			if _, err := c.Supplier(context.Background(), "100042"); err != nil {
				t.Errorf("read after the fault: got %v, want nil", err)
			}
		})
	}
}

func TestSimWriteTimeoutIsNotTransient(t *testing.T) {
	// The simulator holds a hanging write for the whole delay, so keep it short.
	rule := sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultHang, DelayMS: 600, Method: "POST"}
	_, c := newSim(t, sim.Options{Faults: []sim.FaultRule{rule}}, retry.Policy{AttemptTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond})
	_, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Timeout || up.Transient || !up.Write {
		t.Fatalf("got %v, want a timed-out, non-transient write", err)
	}
}
