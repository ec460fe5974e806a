package api

import (
	"context"
	"errors"
	"sync"

	"github.com/erpgate/erpgate/erp"
)

// Evidence is what the ERP holds of one invoice, read for the person who
// decides on it: the invoice, its supplier, each line's purchase order and
// goods receipts, and the three-way match judged on those same reads. A
// read that failed leaves its part zero with its error beside it.
type Evidence struct {
	Invoice erp.Invoice
	// Supplier is the invoice's supplier, unless SupplierErr says why not.
	Supplier    erp.Supplier
	SupplierErr error
	// Lines are the invoice's lines in order, each with what it names.
	Lines []LineEvidence
	// Match is the three-way match, unless MatchErr is what the match
	// found instead: a business finding (a goods receipt missing, a PO
	// closed, the supplier blocked, a duplicate) or a failed read.
	Match    erp.MatchResult
	MatchErr error
	// Tolerance is the gateway's three-way match tolerance.
	Tolerance erp.Tolerance
}

// LineEvidence is one invoice line with its purchase order and the
// uncancelled goods receipts of the ordered item, each read or its error.
type LineEvidence struct {
	Line        erp.InvoiceLine
	Order       erp.PurchaseOrder
	OrderErr    error
	Receipts    []erp.GoodsReceipt
	ReceiptsErr error
}

// InvoiceEvidence reads the evidence of an invoice through the ERP layer,
// for a person's page: every ERP read the three-way match makes, each once,
// at once. It is no operation: it counts in no run, touches no case,
// writes no audit row or idempotency key, and writes nothing to the ERP.
// The error is the invoice's own read failing, when there is nothing to
// show; any other failure is in the Evidence beside the part it leaves
// out.
func (s *Server) InvoiceEvidence(ctx context.Context, invoiceID string) (Evidence, error) {
	reads := &onceReads{Client: s.invoices, answers: map[readKey]*answer{}}
	inv, err := reads.Invoice(ctx, invoiceID)
	if err != nil {
		return Evidence{}, err
	}
	ev := Evidence{Invoice: inv, Tolerance: s.tolerance}
	// A process of its own over the reads of this call: the match's reads
	// are the ones the page shows, and the records are never written by a
	// match.
	p := erp.NewProcess(reads, erp.ProcessOptions{Records: s.records, Tolerance: s.tolerance})
	ev.Match, ev.MatchErr = p.ThreeWayMatch(ctx, invoiceID)
	ev.Supplier, ev.SupplierErr = reads.Supplier(ctx, inv.SupplierID)
	ev.Lines = make([]LineEvidence, len(inv.Lines))
	for i, l := range inv.Lines {
		le := LineEvidence{Line: l}
		le.Order, le.OrderErr = reads.PurchaseOrder(ctx, l.POID)
		le.Receipts, le.ReceiptsErr = reads.GoodsReceipts(ctx, l.POID, l.POItem)
		ev.Lines[i] = le
	}
	return ev, nil
}

// errEvidenceWrite is what a write through the evidence's reads gets: the
// evidence never writes.
var errEvidenceWrite = errors.New("api: the evidence of an invoice is read only")

// onceReads is an ERP client for one evidence read: each read is made
// once, the concurrent reads of the match alike, and its answer, failure
// included, serves every later ask.
type onceReads struct {
	erp.Client
	mu      sync.Mutex
	answers map[readKey]*answer
}

type readKey struct{ kind, a, b string }

type answer struct {
	once sync.Once
	v    any
	err  error
}

func (r *onceReads) read(k readKey, read func() (any, error)) (any, error) {
	r.mu.Lock()
	a := r.answers[k]
	if a == nil {
		a = &answer{}
		r.answers[k] = a
	}
	r.mu.Unlock()
	a.once.Do(func() { a.v, a.err = read() })
	return a.v, a.err
}

// readAs is r.read with the answer's type.
func readAs[T any](r *onceReads, k readKey, read func() (T, error)) (T, error) {
	v, err := r.read(k, func() (any, error) { return read() })
	t, _ := v.(T)
	return t, err
}

func (r *onceReads) Invoice(ctx context.Context, id string) (erp.Invoice, error) {
	return readAs(r, readKey{"invoice", id, ""}, func() (erp.Invoice, error) { return r.Client.Invoice(ctx, id) })
}

func (r *onceReads) InvoicesBySupplierRef(ctx context.Context, supplierID, ref string) ([]erp.Invoice, error) {
	return readAs(r, readKey{"by_ref", supplierID, ref}, func() ([]erp.Invoice, error) {
		return r.Client.InvoicesBySupplierRef(ctx, supplierID, ref)
	})
}

func (r *onceReads) Supplier(ctx context.Context, id string) (erp.Supplier, error) {
	return readAs(r, readKey{"supplier", id, ""}, func() (erp.Supplier, error) { return r.Client.Supplier(ctx, id) })
}

func (r *onceReads) PurchaseOrder(ctx context.Context, id string) (erp.PurchaseOrder, error) {
	return readAs(r, readKey{"order", id, ""}, func() (erp.PurchaseOrder, error) { return r.Client.PurchaseOrder(ctx, id) })
}

func (r *onceReads) GoodsReceipts(ctx context.Context, poID, item string) ([]erp.GoodsReceipt, error) {
	return readAs(r, readKey{"receipts", poID, item}, func() ([]erp.GoodsReceipt, error) {
		return r.Client.GoodsReceipts(ctx, poID, item)
	})
}

func (r *onceReads) PostInvoice(context.Context, erp.Invoice, string) (erp.Posting, error) {
	return erp.Posting{}, errEvidenceWrite
}
