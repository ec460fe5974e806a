package erp

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/sync/errgroup"

	"github.com/erpgate/erpgate/erp/records"
)

// Process runs the accounts-payable steps that take more than one ERP call:
// the three-way match, the approval gate in front of posting, and the writes
// that first need the invoice's fiscal year. It decides business facts
// (supplier blocked, PO closed, goods receipt missing, duplicate) and
// returns them as typed errors; it does not decide codes or statuses.
type Process struct {
	client          Client
	records         records.Store
	tolerance       Tolerance
	routing         Routing
	notifyApprovals bool
	notifyHandovers bool
	now             func() time.Time
}

// ProcessOptions configures a Process. Records is required; every other
// zero field takes the default documented beside it.
type ProcessOptions struct {
	// Records keeps the approvals, holds and handovers. Required.
	Records records.Store
	// Tolerance is the three-way match tolerance. Zero: DefaultTolerance.
	Tolerance Tolerance
	// Routing decides who approves what. Zero: DefaultRouting.
	Routing Routing
	// NotifyApprovals queues a webhook delivery for every approval left
	// pending for a person; NotifyHandovers for every handover.
	NotifyApprovals, NotifyHandovers bool
	// Now is the clock of the records. Nil: time.Now.
	Now func() time.Time
}

// NewProcess returns a Process over the ERP client. It panics without
// opts.Records, which is a programming error.
func NewProcess(client Client, opts ProcessOptions) *Process {
	if opts.Records == nil {
		panic("erp: ProcessOptions.Records is required")
	}
	if opts.Tolerance == (Tolerance{}) {
		opts.Tolerance = DefaultTolerance
	}
	if opts.Routing.Default.Bands == nil && opts.Routing.Default.AutoApproveLimit.IsZero() && opts.Routing.CompanyCodes == nil {
		opts.Routing = DefaultRouting
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Process{client: client, records: opts.Records, tolerance: opts.Tolerance, routing: opts.Routing,
		notifyApprovals: opts.NotifyApprovals, notifyHandovers: opts.NotifyHandovers, now: opts.Now}
}

// matchReads is how many ERP reads one three-way match has in flight at
// most.
const matchReads = 8

// ThreeWayMatch checks the invoice's supplier, looks for a duplicate, and
// matches every line against its PO item and goods receipts.
//
// Once the invoice is read, every other read the match needs is made at
// once, at most matchReads in flight: the supplier, the duplicate search,
// each purchase order, and the receipts of each ordered item. The receipts
// are read before the order says whether the item expects any, so that a
// match takes two ERP round trips, not one per read. The answers are then
// judged in a fixed order, supplier, duplicate, then line by line, so the
// result and the error are those of the reads made one after the other; a
// receipt read the item turns out not to need is ignored, failure included.
func (p *Process) ThreeWayMatch(ctx context.Context, invoiceID string) (MatchResult, error) {
	inv, err := p.client.Invoice(ctx, invoiceID)
	if err != nil {
		return MatchResult{}, err
	}
	type orderRead struct {
		po  PurchaseOrder
		err error
	}
	type itemKey struct{ po, item string }
	type receiptRead struct {
		list []GoodsReceipt
		err  error
	}
	var (
		g                         readGroup
		supplierErr, duplicateErr error
		orders                    = map[string]*orderRead{}
		receipts                  = map[itemKey]*receiptRead{}
	)
	g.SetLimit(matchReads)
	g.Go(func() { supplierErr = p.checkSupplier(ctx, inv.SupplierID) })
	g.Go(func() { duplicateErr = p.checkDuplicate(ctx, inv) })
	for _, line := range inv.Lines {
		if _, ok := orders[line.POID]; !ok {
			r := &orderRead{}
			orders[line.POID] = r
			g.Go(func() { r.po, r.err = p.client.PurchaseOrder(ctx, line.POID) })
		}
		k := itemKey{line.POID, line.POItem}
		if _, ok := receipts[k]; !ok {
			r := &receiptRead{}
			receipts[k] = r
			g.Go(func() { r.list, r.err = p.client.GoodsReceipts(ctx, k.po, k.item) })
		}
	}
	g.Wait()

	if supplierErr != nil {
		return MatchResult{}, supplierErr
	}
	if duplicateErr != nil {
		return MatchResult{}, duplicateErr
	}
	inputs := make([]MatchInput, 0, len(inv.Lines))
	for _, line := range inv.Lines {
		o := orders[line.POID]
		if o.err != nil {
			return MatchResult{}, o.err
		}
		item, err := openItem(o.po, line.POItem)
		if err != nil {
			return MatchResult{}, err
		}
		received := decimal.Zero
		if item.GoodsReceiptBased {
			r := receipts[itemKey{line.POID, line.POItem}]
			if r.err != nil {
				return MatchResult{}, r.err
			}
			if awaitsReceipt(item, r.list) {
				return MatchResult{}, &GRMissingError{POID: line.POID, Item: line.POItem}
			}
			for _, gr := range r.list {
				received = received.Add(gr.Quantity)
			}
		}
		inputs = append(inputs, MatchInput{Line: line, POItem: item, Received: received})
	}
	return Match(inv.ID, inv.Currency, inputs, p.tolerance), nil
}

// GoodsReceipt returns the PO item and its uncancelled receipts. A
// goods-receipt-based item without receipts is a *GRMissingError.
//
// The order and the receipts are read at once, one ERP round trip, and
// judged in that order, so the result and the error are those of the reads
// made one after the other: a receipt read for an order or item that
// turns out not to exist is ignored, failure included.
func (p *Process) GoodsReceipt(ctx context.Context, poID, item string) (POItem, []GoodsReceipt, error) {
	var (
		g                  readGroup
		po                 PurchaseOrder
		receipts           []GoodsReceipt
		poErr, receiptsErr error
	)
	g.Go(func() { po, poErr = p.client.PurchaseOrder(ctx, poID) })
	g.Go(func() { receipts, receiptsErr = p.client.GoodsReceipts(ctx, poID, item) })
	g.Wait()
	if poErr != nil {
		return POItem{}, nil, poErr
	}
	it, ok := po.Item(item)
	if !ok {
		return POItem{}, nil, &NotFoundError{Entity: EntityPOItem, ID: poID, Item: item}
	}
	if receiptsErr != nil {
		return POItem{}, nil, receiptsErr
	}
	if awaitsReceipt(it, receipts) {
		return POItem{}, nil, &GRMissingError{POID: poID, Item: item}
	}
	return it, receipts, nil
}

// awaitsReceipt is the one rule of when an item still waits for its goods:
// it is goods-receipt-based and has no uncancelled receipt. The three-way
// match answers GR_MISSING by it, and a hold is released by it.
func awaitsReceipt(it POItem, receipts []GoodsReceipt) bool {
	return it.GoodsReceiptBased && len(receipts) == 0
}

// readGroup runs reads that each record their own result, in goroutines
// of their own. A panic in one (an answer no code foresaw) is carried back
// and raised again by Wait in the caller's goroutine, where the gateway's
// recovery answers INTERNAL; left in the read's goroutine it would end the
// process.
type readGroup struct {
	g        errgroup.Group
	mu       sync.Mutex
	panicked any
}

func (r *readGroup) SetLimit(n int) { r.g.SetLimit(n) }

func (r *readGroup) Go(read func()) {
	r.g.Go(func() error {
		defer func() {
			if v := recover(); v != nil {
				r.mu.Lock()
				if r.panicked == nil {
					r.panicked = fmt.Sprintf("%v\n\nin a concurrent ERP read:\n%s", v, debug.Stack())
				}
				r.mu.Unlock()
			}
		}()
		read()
		return nil
	})
}

// Wait waits for every read and raises the first panic again.
func (r *readGroup) Wait() {
	_ = r.g.Wait()
	if r.panicked != nil {
		panic(r.panicked)
	}
}

// openItem returns the order's item, or why it cannot be invoiced: it
// does not exist, or it or the whole order is closed.
func openItem(po PurchaseOrder, item string) (POItem, error) {
	it, ok := po.Item(item)
	if !ok {
		return POItem{}, &NotFoundError{Entity: EntityPOItem, ID: po.ID, Item: item}
	}
	if closed, why := it.Closed(); closed || po.DeletionCode != "" {
		if why == "" {
			why = "deletion_code_set"
		}
		return POItem{}, &POClosedError{POID: po.ID, Item: item, Reason: why}
	}
	return it, nil
}

func (p *Process) checkSupplier(ctx context.Context, id string) error {
	s, err := p.client.Supplier(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case s.Deleted:
		return &SupplierBlockedError{SupplierID: id, Reason: "deletion_flag"}
	case s.PostingBlocked:
		return &SupplierBlockedError{SupplierID: id, Reason: "posting_blocked"}
	}
	return nil
}

// checkDuplicate is the gateway's own duplicate check: another invoice
// from the same supplier with the same supplier invoice number, document
// date and gross amount that is posted and stands. Only InvoicePosted
// counts: an invoice that was reversed (or is a reversal document), one
// deleted before it was posted, and one parked, held or in any other
// status is no posting the invoice could duplicate.
func (p *Process) checkDuplicate(ctx context.Context, inv Invoice) error {
	if inv.SupplierRef == "" {
		return nil
	}
	same, err := p.client.InvoicesBySupplierRef(ctx, inv.SupplierID, inv.SupplierRef)
	if err != nil {
		return err
	}
	for _, o := range same {
		if o.ID != inv.ID && o.Status == InvoicePosted &&
			o.DocumentDate.Equal(inv.DocumentDate) && o.GrossAmount.Equal(inv.GrossAmount) {
			return &DuplicateInvoiceError{InvoiceID: inv.ID, DuplicateOf: o.ID,
				SupplierID: inv.SupplierID, SupplierRef: inv.SupplierRef}
		}
	}
	return nil
}

// PostInvoice posts the invoice if approvalID names an approved approval for
// it; otherwise it returns an *ApprovalMissingError saying why, or for an
// approval a person sent back, an *ApprovalSentBackError with the question.
// An invoice that is already posted is not posted again: its posting is
// returned with AlreadyPosted set.
func (p *Process) PostInvoice(ctx context.Context, invoiceID, approvalID, key string) (Posting, Approval, error) {
	inv, err := p.readForWrite(ctx, invoiceID)
	if err != nil {
		return Posting{}, Approval{}, err
	}
	missing := &ApprovalMissingError{InvoiceID: invoiceID, ApprovalID: approvalID}
	if approvalID == "" {
		missing.Reason = ApprovalAbsent
		return Posting{}, Approval{}, missing
	}
	appr, err := p.Approval(ctx, approvalID)
	var nf *NotFoundError
	switch {
	case errors.As(err, &nf):
		missing.Reason = ApprovalUnknown
		return Posting{}, Approval{}, missing
	case err != nil:
		return Posting{}, Approval{}, err
	case appr.InvoiceID != invoiceID:
		missing.Reason, missing.ForInvoice = ApprovalOtherInvoice, appr.InvoiceID
		return Posting{}, appr, missing
	case appr.Status == ApprovalPending:
		missing.Reason = ApprovalNotYet
		return Posting{}, appr, missing
	case appr.Status == ApprovalRejected:
		missing.Reason = ApprovalWasRejected
		return Posting{}, appr, missing
	case appr.Status == ApprovalSentBack:
		return Posting{}, appr, appr.SentBack()
	case appr.Status == ApprovalSuperseded:
		missing.Reason, missing.SupersededBy = ApprovalWasSuperseded, appr.SupersededBy
		if by, err := p.Approval(ctx, appr.SupersededBy); err == nil {
			missing.SupersededStatus = by.Status
		}
		return Posting{}, appr, missing
	}
	if inv.Status == InvoicePosted {
		if _, err := p.records.RecordPosting(context.WithoutCancel(ctx), inv.ID, appr.ID, RunIDFrom(ctx), p.now().UTC()); err != nil {
			return Posting{}, appr, err
		}
		return Posting{InvoiceID: inv.ID, FiscalYear: inv.FiscalYear, Status: InvoicePosted,
			PaymentBlock: inv.PaymentBlock, AlreadyPosted: true}, appr, nil
	}
	if err := parkedOrHeld(inv); err != nil {
		return Posting{}, appr, err
	}
	// A person approved an amount: the invoice is posted only while it
	// holds that amount.
	if !appr.Amount.Equal(inv.GrossAmount) || appr.Currency != inv.Currency {
		missing.Reason = ApprovalAmountDiffers
		missing.Approved = Money{appr.Amount, appr.Currency}
		missing.Invoiced = Money{inv.GrossAmount, inv.Currency}
		return Posting{}, appr, missing
	}
	posting, err := p.client.PostInvoice(ctx, inv, key)
	if err != nil {
		return posting, appr, err
	}
	// The posting stands in the ERP whatever happens next; the case learns
	// of it even when the caller has gone.
	if _, err := p.records.RecordPosting(context.WithoutCancel(ctx), inv.ID, appr.ID, RunIDFrom(ctx), p.now().UTC()); err != nil {
		return posting, appr, err
	}
	return posting, appr, nil
}

// invoiceForWriter is a Client whose read of an invoice can bring along
// what a write to it needs from the ERP first (SAP: the CSRF token), so
// that the write makes no call of its own for it.
type invoiceForWriter interface {
	InvoiceForWrite(ctx context.Context, id string) (Invoice, error)
}

// readForWrite reads the invoice a write follows.
func (p *Process) readForWrite(ctx context.Context, id string) (Invoice, error) {
	if c, ok := p.client.(invoiceForWriter); ok {
		return c.InvoiceForWrite(ctx, id)
	}
	return p.client.Invoice(ctx, id)
}
