package erp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
)

// matchERP answers the reads of a three-way match from its fields, counts
// them, and can hold every read until a number of them are in flight at
// once.
type matchERP struct {
	erp.Client // any other call panics

	inv       erp.Invoice
	supplier  erp.Supplier
	orders    map[string]erp.PurchaseOrder
	receipts  map[string][]erp.GoodsReceipt // by "po/item"
	failRead  map[string]error              // by "supplier", "duplicates", "po:ID", "gr:PO/ITEM"
	duplicate []erp.Invoice

	// together, when above zero, holds each read until that many are in
	// flight or hold (a second when zero) has passed.
	together int
	hold     time.Duration

	mu       sync.Mutex
	inFlight int
	maxIn    int
	calls    map[string]int
	release  chan struct{}
	released bool
}

func newMatchERP(lines int, grBased bool) *matchERP {
	m := &matchERP{
		supplier: erp.Supplier{ID: "100042"},
		orders:   map[string]erp.PurchaseOrder{},
		receipts: map[string][]erp.GoodsReceipt{},
		failRead: map[string]error{},
		calls:    map[string]int{},
		release:  make(chan struct{}),
	}
	m.inv = erp.Invoice{ID: "5105600101", SupplierID: "100042", SupplierRef: "ACME-1", Currency: "EUR", Status: erp.InvoiceParked}
	for i := range lines {
		po := fmt.Sprintf("45000188%02d", i)
		m.inv.Lines = append(m.inv.Lines, erp.InvoiceLine{Item: fmt.Sprint(i + 1), POID: po, POItem: "10",
			Quantity: d("10"), Amount: d("1000.00")})
		m.orders[po] = erp.PurchaseOrder{ID: po, SupplierID: "100042", Currency: "EUR", Items: []erp.POItem{{
			Item: "10", Quantity: d("10"), NetPrice: d("100.00"), PriceUnit: d("1"), GoodsReceiptBased: grBased}}}
		m.receipts[po+"/10"] = []erp.GoodsReceipt{{POID: po, POItem: "10", Quantity: d("10")}}
	}
	return m
}

// read counts a read, waits as together asks, and returns its planned
// failure.
func (m *matchERP) read(ctx context.Context, name string) error {
	m.mu.Lock()
	m.calls[name]++
	m.inFlight++
	m.maxIn = max(m.maxIn, m.inFlight)
	if m.together > 0 && m.inFlight >= m.together && !m.released {
		m.released = true
		close(m.release)
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inFlight--
		m.mu.Unlock()
	}()
	if m.together > 0 {
		hold := m.hold
		if hold == 0 {
			hold = time.Second
		}
		select {
		case <-m.release:
		case <-time.After(hold):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return m.failRead[name]
}

func (m *matchERP) Invoice(_ context.Context, id string) (erp.Invoice, error) {
	if id != m.inv.ID {
		return erp.Invoice{}, &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id}
	}
	return m.inv, nil
}

func (m *matchERP) Supplier(ctx context.Context, id string) (erp.Supplier, error) {
	if err := m.read(ctx, "supplier"); err != nil {
		return erp.Supplier{}, err
	}
	return m.supplier, nil
}

func (m *matchERP) InvoicesBySupplierRef(ctx context.Context, _, _ string) ([]erp.Invoice, error) {
	if err := m.read(ctx, "duplicates"); err != nil {
		return nil, err
	}
	return m.duplicate, nil
}

func (m *matchERP) PurchaseOrder(ctx context.Context, id string) (erp.PurchaseOrder, error) {
	if err := m.read(ctx, "po:"+id); err != nil {
		return erp.PurchaseOrder{}, err
	}
	po, ok := m.orders[id]
	if !ok {
		return erp.PurchaseOrder{}, &erp.NotFoundError{Entity: erp.EntityPurchaseOrder, ID: id}
	}
	return po, nil
}

func (m *matchERP) GoodsReceipts(ctx context.Context, po, item string) ([]erp.GoodsReceipt, error) {
	if err := m.read(ctx, "gr:"+po+"/"+item); err != nil {
		return nil, err
	}
	return m.receipts[po+"/"+item], nil
}

func (m *matchERP) match(t *testing.T) (erp.MatchResult, error) {
	t.Helper()
	return erp.NewProcess(m, erp.ProcessOptions{Records: noRecords{}}).ThreeWayMatch(context.Background(), m.inv.ID)
}

func TestThreeWayMatchReadsAtOnce(t *testing.T) {
	// One line: supplier, duplicate search, the order and its receipts are
	// four reads that must all be in flight together.
	m := newMatchERP(1, true)
	m.together = 4
	start := time.Now()
	res, err := m.match(t)
	if err != nil || res.Status != erp.Matched {
		t.Fatalf("match: %+v, %v", res, err)
	}
	if m.maxIn != 4 {
		t.Errorf("%d reads in flight at most, want all 4 at once", m.maxIn)
	}
	if el := time.Since(start); el > 900*time.Millisecond {
		t.Errorf("match took %v: its reads waited for each other", el)
	}
	want := map[string]int{"supplier": 1, "duplicates": 1, "po:4500018800": 1, "gr:4500018800/10": 1}
	if fmt.Sprint(m.calls) != fmt.Sprint(want) {
		t.Errorf("reads %v, want each once: %v", m.calls, want)
	}
}

func TestThreeWayMatchBoundsReadsInFlight(t *testing.T) {
	// Every read waits 200 ms unless a ninth joins: the limit lets eight
	// in at once, and no ninth.
	m := newMatchERP(20, true)
	m.together, m.hold = 9, 200*time.Millisecond
	if _, err := m.match(t); err != nil {
		t.Fatal(err)
	}
	if m.maxIn != 8 {
		t.Errorf("%d reads in flight at most, want the limit of 8", m.maxIn)
	}
	if n := len(m.calls); n != 2+20+20 {
		t.Errorf("%d distinct reads, want 42 (supplier, duplicates, 20 orders, 20 receipts)", n)
	}
}

func TestThreeWayMatchSharesOrderReads(t *testing.T) {
	// Two lines on one order item and one on another item of the same
	// order: one order read, one receipt read per item.
	m := newMatchERP(1, true)
	po := m.inv.Lines[0].POID
	order := m.orders[po]
	order.Items = append(order.Items, erp.POItem{Item: "20", Quantity: d("5"), NetPrice: d("10"), PriceUnit: d("1"), GoodsReceiptBased: true})
	m.orders[po] = order
	m.receipts[po+"/20"] = []erp.GoodsReceipt{{POID: po, POItem: "20", Quantity: d("5")}}
	m.inv.Lines = []erp.InvoiceLine{
		{Item: "1", POID: po, POItem: "10", Quantity: d("4"), Amount: d("400.00")},
		{Item: "2", POID: po, POItem: "10", Quantity: d("6"), Amount: d("600.00")},
		{Item: "3", POID: po, POItem: "20", Quantity: d("5"), Amount: d("50.00")},
	}
	if _, err := m.match(t); err != nil {
		t.Fatal(err)
	}
	if m.calls["po:"+po] != 1 || m.calls["gr:"+po+"/10"] != 1 || m.calls["gr:"+po+"/20"] != 1 {
		t.Errorf("reads %v, want the order once and each item's receipts once", m.calls)
	}
}

// The answers are judged in the order the reads would have been made one
// after the other, whichever failed first.
func TestThreeWayMatchErrorOrder(t *testing.T) {
	unavailable := errors.New("ERP unavailable")
	tests := []struct {
		name  string
		setup func(m *matchERP)
		want  func(t *testing.T, err error)
	}{
		{"supplier before everything", func(m *matchERP) {
			m.supplier.PostingBlocked = true
			m.failRead["duplicates"] = unavailable
			m.failRead["po:4500018800"] = unavailable
		}, wantAs[*erp.SupplierBlockedError]},
		{"duplicate before the orders", func(m *matchERP) {
			m.duplicate = []erp.Invoice{{ID: "5105600077", Status: erp.InvoicePosted}}
			m.failRead["po:4500018800"] = unavailable
		}, wantAs[*erp.DuplicateInvoiceError]},
		{"duplicate search failing before a closed order", func(m *matchERP) {
			m.failRead["duplicates"] = unavailable
			closeItem(m, "4500018800")
		}, wantIs(unavailable)},
		{"first line before the second", func(m *matchERP) {
			closeItem(m, "4500018800")
			m.failRead["po:4500018801"] = unavailable
		}, wantAs[*erp.POClosedError]},
		{"order before its receipts", func(m *matchERP) {
			delete(m.orders, "4500018800")
			m.failRead["gr:4500018800/10"] = unavailable
		}, wantAs[*erp.NotFoundError]},
		{"receipts failing", func(m *matchERP) {
			m.failRead["gr:4500018801/10"] = unavailable
		}, wantIs(unavailable)},
		{"receipts missing", func(m *matchERP) {
			m.receipts["4500018801/10"] = nil
		}, wantAs[*erp.GRMissingError]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMatchERP(2, true)
			tc.setup(m)
			_, err := m.match(t)
			tc.want(t, err)
		})
	}
}

// A receipt read the order item turns out not to need cannot fail the
// match.
func TestThreeWayMatchIgnoresUnneededReceipts(t *testing.T) {
	m := newMatchERP(1, false)
	m.failRead["gr:4500018800/10"] = errors.New("ERP unavailable")
	res, err := m.match(t)
	if err != nil || res.Status != erp.Matched {
		t.Fatalf("match of an item without goods-receipt-based invoicing: %+v, %v", res, err)
	}
}

func closeItem(m *matchERP, po string) {
	order := m.orders[po]
	order.DeletionCode = "L"
	m.orders[po] = order
}

func wantAs[E error](t *testing.T, err error) {
	t.Helper()
	var target E
	if !errors.As(err, &target) {
		t.Errorf("error %v (%T), want %T", err, err, target)
	}
}

func wantIs(want error) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("error %v, want %v", err, want)
		}
	}
}

// panickyERP panics on reading a purchase order.
type panickyERP struct{ *matchERP }

func (panickyERP) PurchaseOrder(context.Context, string) (erp.PurchaseOrder, error) {
	panic("unforeseen answer")
}

// A panic in a concurrent read comes back to the caller's goroutine, where
// the gateway recovers it; in the read's own goroutine it would end the
// process (and this test binary).
func TestThreeWayMatchRaisesAReadsPanicInTheCaller(t *testing.T) {
	m := newMatchERP(2, true)
	defer func() {
		v := recover()
		if v == nil || !strings.Contains(fmt.Sprint(v), "unforeseen answer") {
			t.Errorf("recovered %v, want the read's panic", v)
		}
	}()
	_, _ = erp.NewProcess(panickyERP{m}, erp.ProcessOptions{Records: noRecords{}}).ThreeWayMatch(context.Background(), m.inv.ID)
	t.Error("the match returned instead of panicking")
}

// noRecords is a store the three-way match never touches.
type noRecords struct{ records.Store }
