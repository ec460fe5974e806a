package erp

import (
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/retry"
)

// Entity names a kind of ERP business object.
type Entity string

// The entities an adapter can fail to find.
const (
	EntityInvoice       Entity = "invoice"
	EntityPurchaseOrder Entity = "purchase_order"
	EntityPOItem        Entity = "purchase_order_item"
	EntitySupplier      Entity = "supplier"
	EntityApproval      Entity = "approval"
	EntityHold          Entity = "hold"
	EntityHandover      Entity = "handover"
)

// NotFoundError says the ERP has no object with the given id.
type NotFoundError struct {
	Entity Entity
	ID     string
	Item   string // the item number, for EntityPOItem
}

func (e *NotFoundError) Error() string {
	if e.Item != "" {
		return fmt.Sprintf("%s %s item %s not found", e.Entity, e.ID, e.Item)
	}
	return fmt.Sprintf("%s %s not found", e.Entity, e.ID)
}

// SupplierBlockedError says the supplier exists but cannot be invoiced:
// posting is blocked or the record is flagged for deletion.
type SupplierBlockedError struct {
	SupplierID string
	Reason     string // "posting_blocked" or "deletion_flag"
}

func (e *SupplierBlockedError) Error() string {
	return fmt.Sprintf("supplier %s blocked: %s", e.SupplierID, e.Reason)
}

// POClosedError says a purchase order item can no longer be invoiced.
type POClosedError struct {
	POID   string
	Item   string
	Reason string // see POItem.Closed
}

func (e *POClosedError) Error() string {
	return fmt.Sprintf("purchase order %s item %s closed: %s", e.POID, e.Item, e.Reason)
}

// GRMissingError says a goods-receipt-based PO item has no goods receipt.
type GRMissingError struct {
	POID string
	Item string
}

func (e *GRMissingError) Error() string {
	return fmt.Sprintf("no goods receipt for purchase order %s item %s", e.POID, e.Item)
}

// DuplicateInvoiceError says the invoice repeats one the ERP already holds.
type DuplicateInvoiceError struct {
	InvoiceID   string
	DuplicateOf string // empty when only the ERP's message told us
	SupplierID  string
	SupplierRef string
}

func (e *DuplicateInvoiceError) Error() string {
	return fmt.Sprintf("invoice %s duplicates %s", e.InvoiceID, e.DuplicateOf)
}

// The reasons an invoice cannot be posted for want of an approval.
const (
	ApprovalAbsent       = "absent"
	ApprovalUnknown      = "unknown"
	ApprovalNotYet       = "pending"
	ApprovalWasRejected  = "rejected"
	ApprovalOtherInvoice = "other_invoice"
	// ApprovalAmountDiffers: the approval was for another amount than
	// the invoice holds now (it changed in the ERP since, or the approval
	// was for a corrected amount the invoice does not have yet).
	ApprovalAmountDiffers = "amount_differs"
	// ApprovalWasSuperseded: another approval of the invoice took its
	// place (ApprovalMissingError.SupersededBy).
	ApprovalWasSuperseded = "superseded"
)

// ApprovalMissingError says a post was attempted without an approved
// approval for that invoice.
type ApprovalMissingError struct {
	InvoiceID  string
	ApprovalID string
	Reason     string // one of the Approval* reasons above
	ForInvoice string // for ApprovalOtherInvoice: the invoice the approval belongs to
	// For ApprovalAmountDiffers: what was approved, and what the invoice
	// holds now.
	Approved, Invoiced Money
	// For ApprovalWasSuperseded: the approval that took its place, and
	// its status.
	SupersededBy     string
	SupersededStatus ApprovalStatus
}

// Money is an amount in a currency.
type Money struct {
	Amount   decimal.Decimal
	Currency string
}

func (m Money) String() string { return m.Amount.StringFixed(2) + " " + m.Currency }

func (e *ApprovalMissingError) Error() string {
	return fmt.Sprintf("invoice %s has no approved approval (%s %s)", e.InvoiceID, e.Reason, e.ApprovalID)
}

// ApprovalSentBackError says a person sent the approval back to the agent
// with a question instead of deciding it: the agent answers the question in
// the justification of a new request_approval.
type ApprovalSentBackError struct {
	ApprovalID string
	InvoiceID  string
	Question   string
	AskedBy    string
	AskedAt    time.Time
}

func (e *ApprovalSentBackError) Error() string {
	return fmt.Sprintf("approval %s of invoice %s was sent back by %s with a question", e.ApprovalID, e.InvoiceID, e.AskedBy)
}

// NoApproverError says the approval routing has no approver for the amount
// in the invoice's company code.
type NoApproverError struct {
	InvoiceID   string
	CompanyCode string
	Amount      decimal.Decimal
}

func (e *NoApproverError) Error() string {
	return fmt.Sprintf("no approver for invoice %s (company code %s, amount %s)", e.InvoiceID, e.CompanyCode, e.Amount)
}

// The reasons a decision on an approval is refused.
const (
	DecisionNotPending    = "not_pending"
	DecisionSameRequester = "same_requester"
	// DecisionSuperseded: another approval of the invoice took its place.
	DecisionSuperseded = "superseded"
)

// DecisionRefusedError says a decision on an approval cannot be taken: it
// was decided before, or the decider requested it (segregation of duties).
type DecisionRefusedError struct {
	ApprovalID string
	Reason     string         // DecisionNotPending or DecisionSameRequester
	Status     ApprovalStatus // the approval's status as it is
	Approver   string         // the approver group that should decide
	// SupersededBy is the approval that took its place, for
	// DecisionSuperseded.
	SupersededBy string
}

func (e *DecisionRefusedError) Error() string {
	return fmt.Sprintf("decision on approval %s refused: %s", e.ApprovalID, e.Reason)
}

// InvoiceNotParkedError says a step that needs a parked invoice found it
// reversed, deleted, or in a status no step of the gateway applies to.
type InvoiceNotParkedError struct {
	InvoiceID string
	Status    InvoiceStatus
	SAPStatus string
}

func (e *InvoiceNotParkedError) Error() string {
	return fmt.Sprintf("invoice %s is %s (SAP status %q), not parked", e.InvoiceID, e.Status, e.SAPStatus)
}

// parkedOrHeld returns an *InvoiceNotParkedError for an invoice that is
// neither parked nor held nor posted.
func parkedOrHeld(inv Invoice) error {
	switch inv.Status {
	case InvoiceParked, InvoiceHeld, InvoicePosted:
		return nil
	}
	return &InvoiceNotParkedError{InvoiceID: inv.ID, Status: inv.Status, SAPStatus: inv.SAPStatus}
}

// InvoicePostedError says a step that needs a parked invoice found it
// posted.
type InvoicePostedError struct {
	InvoiceID string
}

func (e *InvoicePostedError) Error() string {
	return fmt.Sprintf("invoice %s is already posted", e.InvoiceID)
}

// Service names an ERP service, the unit of breakers and metrics. It is
// the retry layer's service name, so the services named here key its
// breakers and budgets as they are.
type Service = retry.Service

// The ERP services the gateway calls.
const (
	ServiceSupplierInvoice  Service = "supplier_invoice"
	ServicePurchaseOrder    Service = "purchase_order"
	ServiceMaterialDocument Service = "material_document"
	ServiceBusinessPartner  Service = "business_partner"
)

// Services lists every ERP service the gateway calls.
var Services = []Service{ServiceSupplierInvoice, ServicePurchaseOrder, ServiceMaterialDocument,
	ServiceBusinessPartner}

// UpstreamError is a failure reported by the ERP or on the way to it. ERP
// adapters return it for everything that is not a NotFoundError; errmap turns
// it into a named outcome by its message ids and status, never by its text.
type UpstreamError struct {
	Service    Service
	Operation  string            // what the adapter was doing, e.g. "release invoice"
	Write      bool              // the call changes ERP state
	Status     int               // HTTP status; 0 when no response arrived
	MessageIDs []string          // SAP message ids "CLASS/NUMBER", the primary first
	Keys       map[string]string // ids the call was about: invoice_id, po_id, item, supplier_id, approval_id
	Transient  bool              // a retry might succeed: 429, 502-504, non-JSON 5xx, network failure
	Timeout    bool              // no answer within the deadline
	RetryAfter time.Duration     // the ERP's Retry-After hint; 0 when absent
	// Attempts is the attempts made, for a failure the adapter reports
	// without the retry layer (which reports its own on *retry.Error).
	Attempts int
	// Unconfirmed says a write may or may not have been applied: the
	// adapter's read back could not confirm it. The retry layer reports a
	// lost answer no read could settle on *retry.Error.
	Unconfirmed bool
	// Body is what the body of a non-2xx answer was, and Call what the
	// call asked for: with Status, they tell SAP Gateway's own answer (a
	// business refusal, an entity that does not exist) from whatever else
	// answers at the configured URL. Body is BodyUnknown when no answer
	// arrived.
	Body AnswerBody
	Call CallKind
	// Config says the ERP cannot be used as the gateway is configured: the
	// service is not published at the URL or not activated (a 404 on its
	// root or its $metadata), the credentials or authorisations are missing
	// (a 401 or 403, a refused client certificate or token request), or the
	// system lacks what the call needs. No retry helps; a person must fix
	// the configuration.
	Config bool
	// Text is the ERP's own wording or the network error, for the log only:
	// nothing turns it into a response.
	Text string
	Err  error
}

func (e *UpstreamError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "erp %s: %s", e.Service, e.Operation)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if len(e.MessageIDs) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(e.MessageIDs, " "))
	}
	if e.Text != "" {
		fmt.Fprintf(&b, ": %s", e.Text)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// HasMessage reports whether the ERP returned the message id.
func (e *UpstreamError) HasMessage(id string) bool {
	for _, m := range e.MessageIDs {
		if m == id {
			return true
		}
	}
	return false
}

// AnswerBody is what kind of body an ERP's answer to a failed call carried.
// Only SAP Gateway's own error is the ERP speaking; any other body came
// from something in front of it or in its place: a Web Dispatcher, a
// proxy, an API management layer, another server at the configured URL.
type AnswerBody string

// The kinds of body.
const (
	// BodyUnknown: no answer arrived, or the adapter did not say.
	BodyUnknown AnswerBody = ""
	// BodySAPError is SAP Gateway's OData error:
	// {"error":{"code":…,"message":…}}, in a form the request accepted.
	BodySAPError AnswerBody = "sap_error"
	// BodyOtherJSON is JSON that is not SAP Gateway's error, an API
	// management fault among it.
	BodyOtherJSON AnswerBody = "other_json"
	// BodyText is HTML, XML the request did not accept, or plain text.
	BodyText AnswerBody = "text"
	// BodyEmpty is no body, or only white space.
	BodyEmpty AnswerBody = "empty"
)

// CallKind is what a call to the ERP asked for.
type CallKind string

// The kinds of call.
const (
	// CallUnknown: the adapter did not say.
	CallUnknown CallKind = ""
	// CallEntity reads one entity by its key, e.g. A_PurchaseOrder('…').
	CallEntity CallKind = "entity"
	// CallList reads an entity set, filtered or not, or the service
	// itself: SAP answers a filter that matches nothing with an empty
	// list, never a 404.
	CallList CallKind = "list"
	// CallFunction calls a function import, such as Post.
	CallFunction CallKind = "function"
)

// EntityGoodsReceipt is a goods receipt: a material document item of
// movement type 101.
const EntityGoodsReceipt Entity = "goods_receipt"

// DataError says the ERP answered, but its answer for one record cannot be
// read as the service's $metadata declares it: a property of another type
// or form, the record's key or a required navigation missing. The same
// answer would come again, so no retry helps, and the ERP is not down: a
// person must look at the record.
type DataError struct {
	Service Service
	Entity  Entity
	// Key is the record's key as far as the answer gives it, in OData
	// key form (SupplierInvoice='5105600101',FiscalYear='2026'); for the
	// log only.
	Key string
	// Err is what could not be read, for the log only: it may quote the
	// ERP's data.
	Err error
}

func (e *DataError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("erp %s: %s record cannot be read: %v", e.Service, e.Entity, e.Err)
	}
	return fmt.Sprintf("erp %s: %s record %s cannot be read: %v", e.Service, e.Entity, e.Key, e.Err)
}

func (e *DataError) Unwrap() error { return e.Err }
