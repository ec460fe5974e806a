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
	PaymentBlock string // SAP payment blocking reason; empty when none
	Lines        []InvoiceLine
}

// InvoiceStatus is where an invoice is in its life.
type InvoiceStatus string

// The invoice statuses the gateway distinguishes.
const (
	InvoiceParked InvoiceStatus = "parked"
	InvoicePosted InvoiceStatus = "posted"
	InvoiceHeld   InvoiceStatus = "held"
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
)

// ApprovalRequest asks the ERP's approval routing for a decision on a
// proposed action for an invoice.
type ApprovalRequest struct {
	InvoiceID      string
	FiscalYear     string
	ProposedAction string
	Justification  string
	Amount         decimal.Decimal // the gross amount the decision is about
	Currency       string
	IdempotencyKey string // sent to the ERP as its repeatability id; may be empty
}

// Approval is the approval routing's record of a request and its decision.
type Approval struct {
	ID             string
	InvoiceID      string
	FiscalYear     string
	Status         ApprovalStatus
	Approver       string // the approver role the routing chose
	ProposedAction string
	Justification  string
	Amount         decimal.Decimal
	Currency       string
	RequestedAt    time.Time
	DecidedAt      time.Time // zero while pending
}

// Posting is the result of releasing (posting) an invoice.
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

// HoldRequest puts an invoice on hold until a re-check time.
type HoldRequest struct {
	InvoiceID      string
	FiscalYear     string
	Reason         string
	RecheckAt      time.Time
	IdempotencyKey string
}

// Hold is the ERP's record of a hold.
type Hold struct {
	ID         string
	InvoiceID  string
	FiscalYear string
	Reason     string
	RecheckAt  time.Time
	Status     InvoiceStatus
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
	History        string
	IdempotencyKey string
}

// Handover is the ERP's record of a delivered handover.
type Handover struct {
	ID        string
	InvoiceID string
	Queue     string
	Status    string
	CreatedAt time.Time
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

// Approvals reaches the ERP's approval routing.
type Approvals interface {
	// RequestApproval submits a request; the routing decides at once below
	// its auto-approve limit and otherwise leaves it pending for a person.
	RequestApproval(ctx context.Context, req ApprovalRequest) (Approval, error)
	// Approval returns an approval or a *NotFoundError.
	Approval(ctx context.Context, id string) (Approval, error)
}

// Postings posts (releases) invoices.
type Postings interface {
	// PostInvoice releases a parked invoice for payment. idempotencyKey, when
	// not empty, is sent to the ERP as its repeatability id.
	PostInvoice(ctx context.Context, inv Invoice, idempotencyKey string) (Posting, error)
}

// Holds places invoices on hold and releases them.
type Holds interface {
	// HoldInvoice records a hold with its re-check time.
	HoldInvoice(ctx context.Context, req HoldRequest) (Hold, error)
	// ReleaseHold ends the hold h.ID and lifts the invoice's payment block
	// once no other hold is in force on it. Releasing a hold that was
	// released before succeeds again; an unknown hold is a *NotFoundError
	// for EntityHold.
	ReleaseHold(ctx context.Context, h Hold) error
}

// Handovers delivers handovers to people's queues.
type Handovers interface {
	// HandOver stores the handover in the queue and returns its record.
	HandOver(ctx context.Context, req HandoverRequest) (Handover, error)
}

// Client is everything the gateway needs from an ERP.
type Client interface {
	Invoices
	PurchaseOrders
	GoodsReceipts
	Suppliers
	Approvals
	Postings
	Holds
	Handovers
}

// Message is an ERP message that came with a successful answer, such as a
// warning in SAP's sap-message header.
type Message struct {
	ID       string // "CLASS/NUMBER"
	Severity string // "warning", "info", "success", "error"
}
