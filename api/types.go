package api

// Request and response types of the HTTP API. They are apart from the
// domain types in erp and the wire types in erp/sap; convert.go holds the
// conversions. Amounts, prices and quantities are decimal strings, as the
// ERP sends them, so no precision is lost on the way to the agent.

import "encoding/json"

// invoiceResponse is the body of get_invoice.
type invoiceResponse struct {
	InvoiceID    string        `json:"invoice_id"`
	FiscalYear   string        `json:"fiscal_year"`
	CompanyCode  string        `json:"company_code"`
	SupplierID   string        `json:"supplier_id"`
	SupplierRef  string        `json:"supplier_invoice_ref"`
	DocumentDate string        `json:"document_date"`
	PostingDate  string        `json:"posting_date"`
	DueDate      string        `json:"due_date,omitempty"`
	PaymentTerms string        `json:"payment_terms,omitempty"`
	Currency     string        `json:"currency"`
	GrossAmount  string        `json:"gross_amount"`
	Status       string        `json:"status"`
	SAPStatus    string        `json:"sap_status,omitempty"`
	PaymentBlock string        `json:"payment_block,omitempty"`
	Lines        []invoiceLine `json:"lines"`
}

type invoiceLine struct {
	Item      string `json:"item"`
	POID      string `json:"po_id"`
	POItem    string `json:"po_item"`
	Quantity  string `json:"quantity"`
	Unit      string `json:"unit"`
	Amount    string `json:"amount"`
	UnitPrice string `json:"unit_price"`
}

// purchaseOrderResponse is the body of get_purchase_order.
type purchaseOrderResponse struct {
	POID        string   `json:"po_id"`
	SupplierID  string   `json:"supplier_id"`
	CompanyCode string   `json:"company_code"`
	Currency    string   `json:"currency"`
	Deleted     bool     `json:"deleted"`
	Items       []poItem `json:"items"`
}

type poItem struct {
	Item                string `json:"item"`
	Material            string `json:"material"`
	Description         string `json:"description"`
	Quantity            string `json:"quantity"`
	Unit                string `json:"unit"`
	NetPrice            string `json:"net_price"`
	PriceUnit           string `json:"price_unit"`
	GoodsReceiptBased   bool   `json:"goods_receipt_based"`
	CompletelyDelivered bool   `json:"completely_delivered"`
	FinallyInvoiced     bool   `json:"finally_invoiced"`
	Deleted             bool   `json:"deleted"`
	Closed              bool   `json:"closed"`
	ClosedReason        string `json:"closed_reason,omitempty"`
}

// supplierResponse is the body of get_supplier and an element of a search.
type supplierResponse struct {
	SupplierID     string `json:"supplier_id"`
	Name           string `json:"name"`
	Country        string `json:"country"`
	PostingBlocked bool   `json:"posting_blocked"`
	Deleted        bool   `json:"deleted"`
}

// supplierSearchResponse is the body of search_suppliers: no match is a
// success with found false and no suppliers.
type supplierSearchResponse struct {
	Found     bool               `json:"found"`
	Query     string             `json:"query"`
	Suppliers []supplierResponse `json:"suppliers"`
}

// goodsReceiptResponse is the body of get_goods_receipt.
type goodsReceiptResponse struct {
	POID              string         `json:"po_id"`
	Item              string         `json:"item"`
	GoodsReceiptBased bool           `json:"goods_receipt_based"`
	ReceivedQuantity  string         `json:"received_quantity"`
	Unit              string         `json:"unit"`
	Receipts          []goodsReceipt `json:"receipts"`
}

type goodsReceipt struct {
	MaterialDocument string `json:"material_document"`
	Year             string `json:"year"`
	DocumentItem     string `json:"document_item"`
	Quantity         string `json:"quantity"`
	Unit             string `json:"unit"`
	PostingDate      string `json:"posting_date"`
}

// matchResponse is the body of run_three_way_match. TOLERANCE_EXCEEDED is a
// result here, not an error.
type matchResponse struct {
	InvoiceID  string          `json:"invoice_id"`
	Result     string          `json:"result"`
	NextAction string          `json:"next_action"`
	Currency   string          `json:"currency"`
	Tolerance  matchTolerance  `json:"tolerance"`
	Lines      []matchLine     `json:"lines"`
	Exceeding  []matchVariance `json:"exceeding"`
}

type matchTolerance struct {
	Percent  string `json:"percent"`
	Absolute string `json:"absolute"`
}

type matchLine struct {
	InvoiceItem       string `json:"invoice_item"`
	POID              string `json:"po_id"`
	POItem            string `json:"po_item"`
	InvoicedQuantity  string `json:"invoiced_quantity"`
	OrderedQuantity   string `json:"ordered_quantity"`
	ReceivedQuantity  string `json:"received_quantity"`
	GoodsReceiptBased bool   `json:"goods_receipt_based"`
	InvoicedUnitPrice string `json:"invoiced_unit_price"`
	POUnitPrice       string `json:"po_unit_price"`
	WithinTolerance   bool   `json:"within_tolerance"`
}

type matchVariance struct {
	InvoiceItem     string `json:"invoice_item"`
	Kind            string `json:"kind"`
	VarianceAmount  string `json:"variance_amount"`
	VariancePercent string `json:"variance_percent"`
}

// matchRequest is the optional body of run_three_way_match.
type matchRequest struct {
	RunID string `json:"run_id,omitempty"`
}

// approvalRequest is the body of request_approval.
type approvalRequest struct {
	ProposedAction  string `json:"proposed_action"`
	Justification   string `json:"justification"`
	CorrectedAmount string `json:"corrected_amount,omitempty"`
	IdempotencyKey  string `json:"idempotency_key,omitempty"`
	RunID           string `json:"run_id,omitempty"`
}

// approvalResponse is the body of request_approval and get_approval.
type approvalResponse struct {
	ApprovalID     string `json:"approval_id"`
	InvoiceID      string `json:"invoice_id"`
	Status         string `json:"status"`
	Approver       string `json:"approver"`
	ProposedAction string `json:"proposed_action"`
	Justification  string `json:"justification"`
	Amount         string `json:"amount"`
	Currency       string `json:"currency"`
	RequestedBy    string `json:"requested_by"`
	RequestedAt    string `json:"requested_at"`
	DecidedBy      string `json:"decided_by,omitempty"`
	DecisionReason string `json:"decision_reason,omitempty"`
	DecidedAt      string `json:"decided_at,omitempty"`
	SupersededBy   string `json:"superseded_by,omitempty"`
}

// decisionRequest is the body of decide_approval.
type decisionRequest struct {
	Decision       string `json:"decision"`
	Reason         string `json:"reason"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// approvalListResponse is the body of list_approvals.
type approvalListResponse struct {
	Approvals []approvalResponse `json:"approvals"`
	Next      string             `json:"next,omitempty"`
}

// handoverListResponse is the body of list_handovers.
type handoverListResponse struct {
	Handovers []handoverRecord `json:"handovers"`
	Next      string           `json:"next,omitempty"`
}

// handoverRecord is a stored handover as people see it.
type handoverRecord struct {
	HandoverID string          `json:"handover_id"`
	InvoiceID  string          `json:"invoice_id"`
	Queue      string          `json:"queue"`
	Code       string          `json:"code,omitempty"`
	Status     string          `json:"status"`
	Summary    string          `json:"summary"`
	Evidence   []string        `json:"evidence"`
	History    json.RawMessage `json:"history,omitempty"`
	CreatedBy  string          `json:"created_by"`
	CreatedAt  string          `json:"created_at"`
	TakenBy    string          `json:"taken_by,omitempty"`
	TakenAt    string          `json:"taken_at,omitempty"`
	ResolvedBy string          `json:"resolved_by,omitempty"`
	ResolvedAt string          `json:"resolved_at,omitempty"`
	Note       string          `json:"note,omitempty"`
}

// auditResponse is the body of get_audit.
type auditResponse struct {
	Entries []auditEntry `json:"entries"`
}

type auditEntry struct {
	ID         int64  `json:"id"`
	At         string `json:"at"`
	Client     string `json:"client"`
	Operation  string `json:"operation"`
	InvoiceID  string `json:"invoice_id,omitempty"`
	ArgsDigest string `json:"args_digest"`
	ApprovalID string `json:"approval_id,omitempty"`
	Document   string `json:"document,omitempty"`
	Outcome    string `json:"outcome"`
	RequestID  string `json:"request_id"`
	Note       string `json:"note,omitempty"`
}

// postRequest is the body of post_invoice.
type postRequest struct {
	ApprovalID     string `json:"approval_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	RunID          string `json:"run_id,omitempty"`
}

// postingResponse is the body of post_invoice.
type postingResponse struct {
	InvoiceID     string `json:"invoice_id"`
	FiscalYear    string `json:"fiscal_year"`
	Status        string `json:"status"`
	ApprovalID    string `json:"approval_id"`
	AlreadyPosted bool   `json:"already_posted"`
	PaymentBlock  string `json:"payment_block,omitempty"`
	InfoCode      string `json:"info_code,omitempty"`
}

// holdRequest is the body of hold_invoice.
type holdRequest struct {
	Reason         string `json:"reason"`
	RecheckAt      string `json:"recheck_at,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	RunID          string `json:"run_id,omitempty"`
}

// holdResponse is the body of hold_invoice and get_hold.
type holdResponse struct {
	HoldID      string            `json:"hold_id"`
	InvoiceID   string            `json:"invoice_id"`
	Status      string            `json:"status"` // held, released or closed
	Reason      string            `json:"reason"`
	RecheckAt   string            `json:"recheck_at"`
	WaitsFor    holdWaitsFor      `json:"waits_for"`
	NextCheckAt string            `json:"next_check_at,omitempty"`
	Checks      int               `json:"checks"`
	RunID       string            `json:"run_id,omitempty"`
	CreatedAt   string            `json:"created_at"`
	ReleasedAt  string            `json:"released_at,omitempty"`
	Events      []holdEventRecord `json:"events,omitempty"`
}

// holdWaitsFor is what a hold waits for.
type holdWaitsFor struct {
	GoodsReceipts []poItemRecord `json:"goods_receipts"`
	ApprovalID    string         `json:"approval_id,omitempty"`
	Until         string         `json:"until,omitempty"`
}

// poItemRecord names a purchase order item.
type poItemRecord struct {
	POID string `json:"po_id"`
	Item string `json:"item"`
}

// holdEventRecord is one entry of a hold's history.
type holdEventRecord struct {
	At   string `json:"at"`
	Kind string `json:"kind"`
	Note string `json:"note,omitempty"`
}

// caseResponse is the body of get_case.
type caseResponse struct {
	InvoiceID      string            `json:"invoice_id"`
	State          string            `json:"state"`
	Version        int64             `json:"version"`
	HoldID         string            `json:"hold_id,omitempty"`
	ApprovalID     string            `json:"approval_id,omitempty"`
	ApprovalStatus string            `json:"approval_status,omitempty"`
	HandoverID     string            `json:"handover_id,omitempty"`
	HandoverStatus string            `json:"handover_status,omitempty"`
	Posted         bool              `json:"posted"`
	Calls          int               `json:"calls"`
	Runs           int               `json:"runs"`
	UpdatedAt      string            `json:"updated_at,omitempty"`
	Next           caseNext          `json:"next"`
	Events         []caseEventRecord `json:"events"`
}

// caseNext is the call that moves a case on.
type caseNext struct {
	Operation  string `json:"operation"` // an operationId, or none
	Method     string `json:"method,omitempty"`
	Path       string `json:"path,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	Why        string `json:"why"`
}

// caseEventRecord is one change of a case.
type caseEventRecord struct {
	Version int64  `json:"version"`
	At      string `json:"at"`
	Kind    string `json:"kind"`
	Ref     string `json:"ref,omitempty"`
	Note    string `json:"note,omitempty"`
	RunID   string `json:"run_id,omitempty"`
}

// handoverRequest is the body of hand_over.
type handoverRequest struct {
	InvoiceID      string   `json:"invoice_id"`
	Queue          string   `json:"queue,omitempty"`
	Code           string   `json:"code,omitempty"`
	Summary        string   `json:"summary"`
	Evidence       []string `json:"evidence,omitempty"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
	RunID          string   `json:"run_id,omitempty"`
}

// handoverResponse is the body of hand_over.
type handoverResponse struct {
	HandoverID string `json:"handover_id"`
	InvoiceID  string `json:"invoice_id"`
	Queue      string `json:"queue"`
	Status     string `json:"status"`
	Summary    string `json:"summary"`
	CreatedAt  string `json:"created_at"`
}

// healthResponse is the body of /healthz and /readyz.
type healthResponse struct {
	Status   string            `json:"status"`
	Breakers map[string]string `json:"breakers,omitempty"`
	Store    *storeHealth      `json:"store,omitempty"`
}

// storeHealth is the records store's part of /readyz.
type storeHealth struct {
	Engine string `json:"engine"`
	Status string `json:"status"`
}

// runResponse is the body of get_run: a run's history and what is left of
// its budget.
type runResponse struct {
	RunID            string       `json:"run_id"`
	StartedAt        string       `json:"started_at"`
	UpdatedAt        string       `json:"updated_at"`
	BudgetPerInvoice int          `json:"budget_per_invoice"`
	Invoices         []runInvoice `json:"invoices"`
	Calls            []runCall    `json:"calls"`
	Errors           []runError   `json:"errors"`
}

type runInvoice struct {
	InvoiceID string `json:"invoice_id"`
	Calls     int    `json:"calls"`
	Remaining int    `json:"remaining"`
}

type runCall struct {
	Seq       int    `json:"seq"`
	At        string `json:"at"`
	Operation string `json:"operation"`
	InvoiceID string `json:"invoice_id,omitempty"`
	Code      string `json:"code"`
	Refused   bool   `json:"refused"`
}

type runError struct {
	Seq        int            `json:"seq"`
	Operation  string         `json:"operation"`
	Code       string         `json:"code"`
	Message    string         `json:"message"`
	Retryable  bool           `json:"retryable"`
	NextAction string         `json:"next_action"`
	Details    map[string]any `json:"details"`
}
