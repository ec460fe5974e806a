package erp

import (
	"context"
	"errors"

	"github.com/erpgate/erpgate/erp/records"
)

// HoldInvoice keeps a parked invoice waiting, in the gateway's records, for
// what it needs before it can go on: the goods-receipt-based items still
// without a receipt, and the decision on the invoice's pending approval.
// When it needs neither, it waits for the re-check time. An invoice has at
// most one open hold: a second request answers that hold, with what it
// waits for merged (Hold.Created false). A decision releases the hold at
// once, the re-check scheduler when the goods have arrived. The invoice
// stays parked in the ERP. A posted invoice cannot be held
// (*InvoicePostedError).
func (p *Process) HoldInvoice(ctx context.Context, req HoldRequest) (Hold, error) {
	inv, err := p.client.Invoice(ctx, req.InvoiceID)
	if err != nil {
		return Hold{}, err
	}
	if inv.Status == InvoicePosted {
		return Hold{}, &InvoicePostedError{InvoiceID: inv.ID}
	}
	if err := parkedOrHeld(inv); err != nil {
		return Hold{}, err
	}
	awaiting, err := p.AwaitedReceipts(ctx, inv)
	if err != nil {
		return Hold{}, err
	}
	rec := records.Hold{
		InvoiceID: inv.ID, FiscalYear: inv.FiscalYear, Reason: req.Reason,
		RecheckAt: req.RecheckAt, NextCheckAt: req.RecheckAt, Status: records.HoldHeld,
		CreatedBy: req.Client, CreatedAt: p.now().UTC(), RunID: req.RunID,
	}
	for _, a := range awaiting {
		rec.Awaiting = append(rec.Awaiting, records.POItemRef{POID: a.POID, Item: a.Item})
	}
	c, err := p.records.Case(ctx, inv.ID)
	switch {
	case errors.Is(err, records.ErrNotFound):
	case err != nil:
		return Hold{}, err
	case c.ApprovalStatus == records.ApprovalPending:
		rec.ApprovalID = c.ApprovalID
	}
	if rec.ApprovalID == "" && len(rec.Awaiting) == 0 {
		rec.Until = req.RecheckAt
	}
	h, created, err := p.records.CreateHold(ctx, rec)
	if err != nil {
		return Hold{}, err
	}
	out := holdFrom(h)
	out.Created = created
	return out, nil
}

// Hold returns the hold with its events, or a *NotFoundError.
func (p *Process) Hold(ctx context.Context, id string) (Hold, error) {
	h, err := p.records.Hold(ctx, id)
	if errors.Is(err, records.ErrNotFound) {
		return Hold{}, &NotFoundError{Entity: EntityHold, ID: id}
	}
	if err != nil {
		return Hold{}, err
	}
	evs, err := p.records.HoldEvents(ctx, id)
	if err != nil {
		return Hold{}, err
	}
	out := holdFrom(h)
	for _, ev := range evs {
		out.Events = append(out.Events, HoldEvent{At: ev.At, Kind: ev.Kind, Note: ev.Note})
	}
	return out, nil
}

// AwaitedReceipts returns the purchase order items the invoice bills that
// still wait for their goods (see awaitsReceipt), in line order, reading
// the orders and receipts at once. An order or item the ERP does not know
// counts as awaited: nothing can arrive for it, and a person has to look.
func (p *Process) AwaitedReceipts(ctx context.Context, inv Invoice) ([]POItemRef, error) {
	type orderRead struct {
		po  PurchaseOrder
		err error
	}
	type receiptRead struct {
		list []GoodsReceipt
		err  error
	}
	var (
		g        readGroup
		orders   = map[string]*orderRead{}
		receipts = map[POItemRef]*receiptRead{}
		items    []POItemRef
	)
	g.SetLimit(matchReads)
	for _, line := range inv.Lines {
		if line.POID == "" {
			continue
		}
		if _, ok := orders[line.POID]; !ok {
			r := &orderRead{}
			orders[line.POID] = r
			g.Go(func() { r.po, r.err = p.client.PurchaseOrder(ctx, line.POID) })
		}
		k := POItemRef{POID: line.POID, Item: line.POItem}
		if _, ok := receipts[k]; !ok {
			r := &receiptRead{}
			receipts[k] = r
			items = append(items, k)
			g.Go(func() { r.list, r.err = p.client.GoodsReceipts(ctx, k.POID, k.Item) })
		}
	}
	g.Wait()
	var awaited []POItemRef
	for _, k := range items {
		o := orders[k.POID]
		var nf *NotFoundError
		if errors.As(o.err, &nf) {
			awaited = append(awaited, k)
			continue
		}
		if o.err != nil {
			return nil, o.err
		}
		it, ok := o.po.Item(k.Item)
		if !ok {
			awaited = append(awaited, k)
			continue
		}
		if !it.GoodsReceiptBased {
			continue
		}
		r := receipts[k]
		if r.err != nil {
			return nil, r.err
		}
		if awaitsReceipt(it, r.list) {
			awaited = append(awaited, k)
		}
	}
	return awaited, nil
}

func holdFrom(h records.Hold) Hold {
	out := Hold{
		ID: h.ID, InvoiceID: h.InvoiceID, FiscalYear: h.FiscalYear, Reason: h.Reason,
		RecheckAt: h.RecheckAt, NextCheckAt: h.NextCheckAt, Checks: h.Checks,
		ApprovalID: h.ApprovalID, Until: h.Until, RunID: h.RunID,
		Released: h.Status == records.HoldReleased, CreatedBy: h.CreatedBy, CreatedAt: h.CreatedAt,
		ReleasedAt: h.ReleasedAt,
	}
	for _, a := range h.Awaiting {
		out.Awaiting = append(out.Awaiting, POItemRef{POID: a.POID, Item: a.Item})
	}
	return out
}
