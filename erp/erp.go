// Package erp holds the domain of accounts-payable invoice processing as the
// gateway sees it: the ERP's business objects, the Client interface the API
// calls, the typed errors an ERP adapter returns, and pure domain logic such
// as the three-way match.
//
// Adapters live below it: erp/sap speaks SAP S/4HANA OData v2 and erp/sim is
// a simulated S/4HANA that speaks the same wire protocol.
package erp

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
)

// Invoice is a supplier invoice: header, lines and status.
type Invoice struct {
	ID           string // SupplierInvoice, ten digits
	FiscalYear   string
	CompanyCode  string
	SupplierID   string // the invoicing party
	SupplierRef  string // the supplier's own invoice number
	DocumentDate time.Time
	PostingDate  time.Time
	Currency     string
	GrossAmount  decimal.Decimal
	Status       InvoiceStatus
	// SAPStatus is the ERP's own status code as read (SAP's
	// SupplierInvoiceStatus), whether or not Status knows it.
	SAPStatus    string
	PaymentBlock string // SAP payment blocking reason; empty when none
	// PaymentTerms is the key of the invoice's terms of payment (SAP's
	// PaymentTerms, such as 0001); empty when the ERP gives none.
	PaymentTerms string
	// BaselineDate is the day the terms of payment count from (SAP's
	// DueCalculationBaseDate); zero when the ERP gives none.
	BaselineDate time.Time
	// CashDiscount1Days, CashDiscount2Days and NetPaymentDays are the
	// periods of the terms of payment, in days after BaselineDate; 0 when
	// the terms have no such period.
	CashDiscount1Days, CashDiscount2Days, NetPaymentDays int
	// Lines are the invoice's items that reference purchase order items.
	Lines []InvoiceLine
}

// NetDueDate is the day the invoice falls due net, as SAP's financial
// accounting computes it for a supplier's item: BaselineDate plus
// NetPaymentDays when there are any, else plus CashDiscount2Days when there
// are any, else plus CashDiscount1Days (none: due on the baseline date). It
// is the zero time when the invoice has no baseline date.
func (inv Invoice) NetDueDate() time.Time {
	if inv.BaselineDate.IsZero() {
		return time.Time{}
	}
	days := inv.CashDiscount1Days
	switch {
	case inv.NetPaymentDays > 0:
		days = inv.NetPaymentDays
	case inv.CashDiscount2Days > 0:
		days = inv.CashDiscount2Days
	}
	return inv.BaselineDate.AddDate(0, 0, days)
}

// InvoiceStatus is where an invoice is in its life.
type InvoiceStatus string

// The invoice statuses the gateway distinguishes. Only InvoicePosted is a
// posting that stands: a reversed or deleted invoice, and one in any other
// status, is not one.
const (
	InvoiceParked InvoiceStatus = "parked"
	InvoicePosted InvoiceStatus = "posted"
	InvoiceHeld   InvoiceStatus = "held"
	// InvoiceReversed is an invoice that was posted and then cancelled by a
	// reversal document, or such a reversal document itself.
	InvoiceReversed InvoiceStatus = "reversed"
	// InvoiceDeleted is an invoice deleted before it was posted.
	InvoiceDeleted InvoiceStatus = "deleted"
	// InvoiceOther is an invoice neither parked, held, posted, reversed nor
	// deleted as far as the gateway can tell: one the ERP keeps for its own
	// background verification, or one in a status the gateway does not
	// know. Invoice.SAPStatus has the ERP's code. It is no posting, and no
	// step of the gateway applies to it as it stands.
	InvoiceOther InvoiceStatus = "other"
)

// InvoiceLine is one invoice item that references a purchase order item.
type InvoiceLine struct {
	Item     string // SupplierInvoiceItem
	POID     string
	POItem   string
	Quantity decimal.Decimal
	Unit     string
	Amount   decimal.Decimal // net amount of the line
}

// UnitPrice is the line amount divided by its quantity, or zero for a
// quantity of zero.
func (l InvoiceLine) UnitPrice() decimal.Decimal {
	if l.Quantity.IsZero() {
		return decimal.Zero
	}
	return l.Amount.DivRound(l.Quantity, 4)
}

// PurchaseOrder is a purchase order header with its items.
type PurchaseOrder struct {
	ID           string
	SupplierID   string
	CompanyCode  string
	Currency     string
	DeletionCode string // PurchasingDocumentDeletionCode; empty when active
	Items        []POItem
}

// Item returns the item with the given number.
func (po PurchaseOrder) Item(item string) (POItem, bool) {
	for _, it := range po.Items {
		if it.Item == item {
			return it, true
		}
	}
	return POItem{}, false
}

// POItem is one purchase order item.
type POItem struct {
	Item                 string
	Material             string
	Text                 string
	Quantity             decimal.Decimal
	Unit                 string
	NetPrice             decimal.Decimal // price per PriceUnit
	PriceUnit            decimal.Decimal // quantity the net price is for, usually 1
	Currency             string
	FinallyInvoiced      bool
	CompletelyDelivered  bool
	GoodsReceiptBased    bool // InvoiceIsGoodsReceiptBased
	GoodsReceiptExpected bool
	DeletionCode         string
}

// UnitPrice is the net price of one unit.
func (it POItem) UnitPrice() decimal.Decimal {
	if it.PriceUnit.IsZero() || it.PriceUnit.Equal(decimal.NewFromInt(1)) {
		return it.NetPrice
	}
	return it.NetPrice.DivRound(it.PriceUnit, 4)
}

// Closed reports whether the item can no longer be invoiced, and why: it is
// deleted or blocked, or (gateway policy) it is completely delivered and
// finally invoiced.
func (it POItem) Closed() (bool, string) {
	switch {
	case it.DeletionCode != "":
		return true, "deletion_code_set"
	case it.FinallyInvoiced && it.CompletelyDelivered:
		return true, "delivered_and_finally_invoiced"
	}
	return false, ""
}

// GoodsReceipt is one uncancelled goods receipt (movement type 101) for a
// purchase order item.
type GoodsReceipt struct {
	MaterialDocument string
	Year             string
	Item             string
	POID             string
	POItem           string
	Quantity         decimal.Decimal
	Unit             string
	PostingDate      time.Time
}

// Supplier is a supplier master record.
type Supplier struct {
	ID             string
	Name           string
	Country        string
	PostingBlocked bool
	Deleted        bool
}

// ApprovalStatus is the state of an approval request.
type ApprovalStatus string

// The approval statuses.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	// ApprovalSuperseded: another approval of the invoice took its place
	// (Approval.SupersededBy); it can no longer be decided or posted with.
	ApprovalSuperseded ApprovalStatus = "superseded"
	// ApprovalSentBack: a person sent it back to the agent with a question
	// (Approval.DecisionReason) instead of deciding it. It can no longer be
	// decided or posted with; the agent answers with a new request.
	ApprovalSentBack ApprovalStatus = "sent_back"
)

// AutoApprover is the approver of an approval the routing granted at once.
const AutoApprover = "auto"

// ApprovalRequest asks the approval routing for a decision on a proposed
// action for an invoice.
type ApprovalRequest struct {
	InvoiceID      string
	ProposedAction string
	Justification  string
	// Corrected is the amount the fix changes the invoice to; nil decides
	// on the invoice's gross amount.
	Corrected *decimal.Decimal
	Client    string // who asks: they may not decide it themselves
}

// Approval is the gateway's record of an approval request and its decision.
type Approval struct {
	ID             string
	InvoiceID      string
	FiscalYear     string
	CompanyCode    string
	Status         ApprovalStatus
	Approver       string // the approver group the routing chose, or AutoApprover
	ProposedAction string
	Justification  string
	Amount         decimal.Decimal
	Currency       string
	RequestedBy    string
	RequestedAt    time.Time
	DecidedBy      string    // empty while pending
	DecisionReason string    // empty while pending; for ApprovalSentBack, the question
	DecidedAt      time.Time // zero while pending
	SupersededBy   string    // the approval that took its place; "" unless superseded
}

// Verdict is what a person decides on a pending approval.
type Verdict string

// The verdicts a person can give.
const (
	Approve Verdict = "approve"
	Reject  Verdict = "reject"
	// SendBack answers with a question for the agent (Decision.Reason)
	// instead of a yes or a no.
	SendBack Verdict = "send_back"
)

// Decision is a person's answer to a pending approval.
type Decision struct {
	Verdict Verdict
	By      string // the person deciding; never the requester
	Reason  string // why; for SendBack, the question for the agent
}

// Posting is the result of posting an invoice.
type Posting struct {
	InvoiceID  string
	FiscalYear string
	Status     InvoiceStatus
	PostedAt   time.Time
	// PaymentBlock is set when the ERP posted the invoice but blocked it for
	// payment, for example for a price variance.
	PaymentBlock  string
	Messages      []Message // warnings the ERP returned with the posting
	AlreadyPosted bool      // the invoice was posted before this call
}

// HoldRequest keeps a parked invoice waiting for what it needs: its goods
// receipts, the decision on its pending approval, or, when it needs
// neither, the re-check time.
type HoldRequest struct {
	InvoiceID string
	Reason    string
	RecheckAt time.Time
	Client    string
	// RunID is the agent run that places the hold; its platform is told
	// when the hold is released. May be empty.
	RunID string
}

// POItemRef names a purchase order item.
type POItemRef struct {
	POID string
	Item string
}

// Hold is the gateway's record of an invoice waiting for something named:
// goods receipts, an approval's decision, or a date. The invoice stays
// parked in the ERP meanwhile: SAP needs no write to keep a parked invoice
// unpaid. An invoice has at most one open hold.
type Hold struct {
	ID          string
	InvoiceID   string
	FiscalYear  string
	Reason      string
	RecheckAt   time.Time
	NextCheckAt time.Time
	Checks      int
	Awaiting    []POItemRef // goods-receipt-based items still without a receipt at the last look
	ApprovalID  string      // the approval whose decision it waits for; "" for none
	Until       time.Time   // the date it waits for; zero for none
	Released    bool
	RunID       string // the run that placed it; may be empty
	CreatedBy   string
	CreatedAt   time.Time
	ReleasedAt  time.Time
	// Created is false when the request found the invoice's open hold and
	// merged into it.
	Created bool
	Events  []HoldEvent // oldest first; filled by Process.Hold
}

// HoldEvent is one entry of a hold's history.
type HoldEvent struct {
	At   time.Time
	Kind string // "placed", "merged", "rechecked", "receipt_seen", "released" or "closed"
	Note string
}

// Case is one invoice carried through time in the gateway's records: its
// state and a version that changes whenever something an agent's answer
// depends on changes (records.Case says which).
type Case struct {
	InvoiceID      string
	State          string
	Version        int64
	HoldID         string // the open hold; "" for none
	ApprovalID     string // the live approval: pending, or approved and not superseded
	ApprovalStatus ApprovalStatus
	HandoverID     string // the latest handover
	HandoverStatus string
	Posted         bool
	Calls, Runs    int // agent calls about the invoice and the runs that made them, all runs
	UpdatedAt      time.Time
	Events         []CaseEvent // oldest first
}

// CaseEvent is one change of a case.
type CaseEvent struct {
	Version int64
	At      time.Time
	Kind    string // "approval.requested", "hold.released", … (records.CaseEvent)
	Ref     string // the record's id
	Note    string
	RunID   string
}

// HandoverRequest routes an invoice to a person's queue with the context the
// agent gathered.
type HandoverRequest struct {
	InvoiceID string
	Queue     string
	Code      string // the named outcome that led to the handover; may be empty
	Summary   string
	Evidence  []string
	// History is the agent run's history the gateway attaches, as JSON:
	// its calls, the five fields of every error it got, the budget used.
	History string
	Client  string
	Dedupe  string // a second request with the same Dedupe returns the first handover; empty: none
}

// Handover is the gateway's record of a handover.
type Handover struct {
	ID         string
	InvoiceID  string
	Queue      string
	Code       string
	Summary    string
	Evidence   []string
	History    string
	Status     string // "queued", "taken" or "resolved"
	CreatedBy  string
	CreatedAt  time.Time
	TakenBy    string
	TakenAt    time.Time
	ResolvedBy string
	ResolvedAt time.Time
	Note       string
}

// Invoices reads supplier invoices.
type Invoices interface {
	// Invoice returns the invoice with the given id or a *NotFoundError.
	Invoice(ctx context.Context, id string) (Invoice, error)
	// InvoicesBySupplierRef returns the invoices a supplier sent under its own
	// invoice number, for the duplicate check.
	InvoicesBySupplierRef(ctx context.Context, supplierID, supplierRef string) ([]Invoice, error)
}

// PurchaseOrders reads purchase orders.
type PurchaseOrders interface {
	// PurchaseOrder returns the order with its items or a *NotFoundError.
	PurchaseOrder(ctx context.Context, id string) (PurchaseOrder, error)
}

// GoodsReceipts reads goods receipts.
type GoodsReceipts interface {
	// GoodsReceipts returns the uncancelled 101 receipts of a PO item; an
	// empty slice when there are none.
	GoodsReceipts(ctx context.Context, poID, poItem string) ([]GoodsReceipt, error)
}

// Suppliers reads the supplier master.
type Suppliers interface {
	// Supplier returns the supplier or a *NotFoundError.
	Supplier(ctx context.Context, id string) (Supplier, error)
	// SearchSuppliers returns the suppliers whose name contains name, ignoring
	// case; an empty slice when none match.
	SearchSuppliers(ctx context.Context, name string, limit int) ([]Supplier, error)
}

// Postings posts invoices.
type Postings interface {
	// PostInvoice posts a parked invoice. idempotencyKey, when not empty,
	// identifies the call for the ERP.
	PostInvoice(ctx context.Context, inv Invoice, idempotencyKey string) (Posting, error)
}

// Client is everything the gateway needs from an ERP.
type Client interface {
	Invoices
	PurchaseOrders
	GoodsReceipts
	Suppliers
	Postings
}

// Message is an ERP message that came with a successful answer, such as a
// warning in SAP's sap-message header.
type Message struct {
	ID       string // "CLASS/NUMBER"
	Severity string // "warning", "info", "success", "error"
}
