package recheck_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// observer counts Rechecked calls.
type observer struct {
	mu                sync.Mutex
	released, waiting int
}

func (o *observer) Rechecked(released bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if released {
		o.released++
	} else {
		o.waiting++
	}
}

func (o *observer) counts() (released, waiting int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.released, o.waiting
}

// fakeERP is a scripted ERP that counts reads and releases. Invoices stay
// as they are after a release, so that a hold checked twice is released
// twice and shows up in the counts.
type fakeERP struct {
	mu        sync.Mutex
	invoices  map[string]erp.Invoice
	orders    map[string]erp.PurchaseOrder
	receipts  map[string][]erp.GoodsReceipt // "po/item"
	noHold    map[string]bool               // hold ids ReleaseHold does not know
	failPO    map[string]bool               // PO ids whose read fails
	reads     map[string]int                // invoice id -> Invoice calls
	released  map[string]int                // hold id -> ReleaseHold calls
	onInvoice func(id string)               // called before each Invoice answer
}

func newFakeERP() *fakeERP {
	return &fakeERP{
		invoices: map[string]erp.Invoice{}, orders: map[string]erp.PurchaseOrder{},
		receipts: map[string][]erp.GoodsReceipt{}, noHold: map[string]bool{}, failPO: map[string]bool{},
		reads: map[string]int{}, released: map[string]int{},
	}
}

func qty(n int64) decimal.Decimal { return decimal.NewFromInt(n) }

// invoice adds an invoice with the status and lines.
func (f *fakeERP) invoice(id string, status erp.InvoiceStatus, lines ...erp.InvoiceLine) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invoices[id] = erp.Invoice{ID: id, FiscalYear: "2026", Status: status, Lines: lines}
}

func line(po, item string, n int64) erp.InvoiceLine {
	return erp.InvoiceLine{POID: po, POItem: item, Quantity: qty(n), Unit: "EA"}
}

func (f *fakeERP) order(id string, items ...erp.POItem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orders[id] = erp.PurchaseOrder{ID: id, Items: items}
}

func grItem(item string) erp.POItem {
	return erp.POItem{Item: item, Quantity: qty(100), GoodsReceiptBased: true}
}

func (f *fakeERP) receive(po, item string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := po + "/" + item
	f.receipts[k] = append(f.receipts[k], erp.GoodsReceipt{POID: po, POItem: item, Quantity: qty(n), Unit: "EA"})
}

func (f *fakeERP) Invoice(_ context.Context, id string) (erp.Invoice, error) {
	f.mu.Lock()
	f.reads[id]++
	inv, ok := f.invoices[id]
	hook := f.onInvoice
	f.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	if !ok {
		return erp.Invoice{}, &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id}
	}
	return inv, nil
}

func (f *fakeERP) PurchaseOrder(_ context.Context, id string) (erp.PurchaseOrder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPO[id] {
		return erp.PurchaseOrder{}, &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Operation: "read purchase order",
			Status: 503, Transient: true}
	}
	po, ok := f.orders[id]
	if !ok {
		return erp.PurchaseOrder{}, &erp.NotFoundError{Entity: erp.EntityPurchaseOrder, ID: id}
	}
	return po, nil
}

func (f *fakeERP) GoodsReceipts(_ context.Context, po, item string) ([]erp.GoodsReceipt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]erp.GoodsReceipt{}, f.receipts[po+"/"+item]...), nil
}

func (f *fakeERP) ReleaseHold(_ context.Context, h erp.Hold) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noHold[h.ID] {
		return &erp.NotFoundError{Entity: erp.EntityHold, ID: h.ID}
	}
	f.released[h.ID]++
	return nil
}

func (f *fakeERP) releases(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released[id]
}

func (f *fakeERP) invoiceReads(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[id]
}

func holdID(i int) string { return fmt.Sprintf("H%07d", i) }
