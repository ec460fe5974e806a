// Package errmap is the one place where a failure becomes a named business
// error. It holds the catalogue of stable codes (each with its HTTP status,
// retryable flag, next_action and default queue), the single function Map
// that turns any error from the ERP layer into an *Error, and Write, the
// writer of the five-field body every error response carries.
package errmap

import "net/http"

// Code is a stable, published error code. Once published it never changes.
type Code string

// The ten named outcomes of invoice processing (TOLERANCE_EXCEEDED is
// information inside a match result, not an error).
const (
	InvoiceNotFound   Code = "INVOICE_NOT_FOUND"
	PONotFound        Code = "PO_NOT_FOUND"
	SupplierNotFound  Code = "SUPPLIER_NOT_FOUND"
	GRMissing         Code = "GR_MISSING"
	POClosed          Code = "PO_CLOSED"
	DuplicateInvoice  Code = "DUPLICATE_INVOICE"
	ApproverNotFound  Code = "APPROVER_NOT_FOUND"
	ApprovalMissing   Code = "APPROVAL_MISSING"
	PeriodClosed      Code = "PERIOD_CLOSED"
	ToleranceExceeded Code = "TOLERANCE_EXCEEDED"
)

// The gateway's own outcomes.
const (
	InvalidRequest       Code = "INVALID_REQUEST"
	Unauthenticated      Code = "UNAUTHENTICATED"
	ScopeMissing         Code = "SCOPE_MISSING"
	ERPUnavailable       Code = "ERP_UNAVAILABLE"
	ERPOutcomeUnknown    Code = "ERP_OUTCOME_UNKNOWN"
	ERPConfiguration     Code = "ERP_CONFIGURATION"
	ERPDataInvalid       Code = "ERP_DATA_INVALID"
	LoopDetected         Code = "LOOP_DETECTED"
	BudgetExhausted      Code = "BUDGET_EXHAUSTED"
	IdempotencyKeyReused Code = "IDEMPOTENCY_KEY_REUSED"
	WriteInProgress      Code = "WRITE_IN_PROGRESS"
	RateLimited          Code = "RATE_LIMITED"
	// AuthUnavailable: the gateway cannot check an access token now, as
	// the authorization server's keys cannot be fetched.
	AuthUnavailable Code = "AUTH_UNAVAILABLE"
	Internal        Code = "INTERNAL"
)

// The outcomes of a person's decision on an approval. APPROVAL_SENT_BACK
// is the one an agent meets: get_approval and post_invoice answer it for
// an approval a person sent back with a question.
const (
	ApprovalDecided     Code = "APPROVAL_DECIDED"
	ApprovalSuperseded  Code = "APPROVAL_SUPERSEDED"
	ApprovalSentBack    Code = "APPROVAL_SENT_BACK"
	SegregationOfDuties Code = "SEGREGATION_OF_DUTIES"
)

// NextAction is the move the agent is expected to make after an outcome.
type NextAction string

// The five next actions.
const (
	FixInputAndRetry NextAction = "fix_input_and_retry"
	HoldAndRecheck   NextAction = "hold_and_recheck"
	RouteToPerson    NextAction = "route_to_person"
	RequestApproval  NextAction = "request_approval"
	StopAndEscalate  NextAction = "stop_and_escalate"
)

// Queues people work from, named in details.queue when an outcome is routed.
const (
	QueueAP          = "ap_queue"
	QueueProcurement = "procurement"
	QueueMasterData  = "master_data"
	QueueAPTeam      = "ap_team"
	QueueAPLead      = "ap_lead"
	QueueFinance     = "finance"
)

// Queues lists every queue a handover can go to.
var Queues = []string{QueueAP, QueueProcurement, QueueMasterData, QueueAPTeam, QueueAPLead, QueueFinance}

// Entry is one row of the catalogue.
type Entry struct {
	Code       Code
	Status     int // HTTP status; 200 for information carried in a result
	Retryable  bool
	NextAction NextAction
	Queue      string // the queue a person works it from; empty when not routed
	// Error is false for information that travels inside a success body.
	Error bool
	// Summary says when the code is returned, for the README and the contract.
	Summary string
}

// catalogue is the single table from code to status, retryable, next_action
// and queue. Order is the order of the published table.
var catalogue = []Entry{
	{InvoiceNotFound, http.StatusNotFound, false, FixInputAndRetry, QueueAP, true,
		"The invoice id is not in the ERP. Correct it and retry once, then route to the AP queue."},
	{PONotFound, http.StatusNotFound, false, FixInputAndRetry, QueueAP, true,
		"The purchase order or its item is not in the ERP. Correct the reference and retry once, then route."},
	{SupplierNotFound, http.StatusNotFound, false, FixInputAndRetry, QueueMasterData, true,
		"The supplier is not in the supplier master, or is blocked or flagged for deletion (details.reason)."},
	{GRMissing, http.StatusConflict, false, HoldAndRecheck, "", true,
		"The goods-receipt-based PO item has no goods receipt yet. Hold the invoice for the scheduled re-check."},
	{POClosed, http.StatusConflict, false, RouteToPerson, QueueProcurement, true,
		"The PO item is deleted, or delivered and finally invoiced. Procurement decides."},
	{DuplicateInvoice, http.StatusConflict, false, RouteToPerson, QueueAPTeam, true,
		"Another posted invoice has the same supplier, supplier invoice number, date and amount. The AP team confirms."},
	{ApproverNotFound, http.StatusUnprocessableEntity, false, RouteToPerson, QueueAPLead, true,
		"The approval routing has no approver for this amount: a configuration gap for the AP lead."},
	{ApprovalMissing, http.StatusConflict, false, RequestApproval, "", true,
		"post_invoice without an approved approval for this invoice (details.reason). Call request_approval."},
	{PeriodClosed, http.StatusConflict, false, StopAndEscalate, QueueFinance, true,
		"The posting period is locked. Stop and escalate to finance."},
	{ToleranceExceeded, http.StatusOK, false, RequestApproval, "", false,
		"Information in a three-way match result: a line exceeds the price or quantity tolerance. Propose a fix for approval."},
	{InvalidRequest, http.StatusBadRequest, false, FixInputAndRetry, "", true,
		"Malformed JSON, an unknown field, an id of the wrong form, a value that looks like an error token; 404 unknown route, 405 wrong method, 413 body too large, 415 not JSON."},
	{Unauthenticated, http.StatusUnauthorized, false, StopAndEscalate, "", true,
		"Missing or invalid credentials."},
	{ScopeMissing, http.StatusConflict, false, RouteToPerson, "", true,
		"The credentials are valid but lack the scope this operation needs (details.scope)."},
	{ERPUnavailable, http.StatusServiceUnavailable, true, HoldAndRecheck, "", true,
		"The ERP failed transiently and the gateway's own retries are used up, or its circuit is open (details.retry_after_s)."},
	{ERPOutcomeUnknown, http.StatusBadGateway, false, HoldAndRecheck, "", true,
		"A write the ERP never confirmed and the gateway could not reconcile. Hold the invoice; the same call later (with the same Idempotency-Key) reads it first and settles it, never writing twice."},
	{ERPConfiguration, http.StatusBadGateway, false, StopAndEscalate, "", true,
		"The gateway cannot use the ERP as configured: wrong URL, service not activated, or credentials or authorisations missing. A person must fix the configuration."},
	{ERPDataInvalid, http.StatusBadGateway, false, StopAndEscalate, "", true,
		"The ERP answered, but its answer for a record does not fit what the service declares and cannot be read (details.service, details.entity). A person must look at the record; a retry gets the same answer."},
	{LoopDetected, http.StatusConflict, false, RouteToPerson, "", true,
		"The same operation with the same arguments twice in one run, with nothing it depends on changed in between (the invoice's case version)."},
	{BudgetExhausted, http.StatusConflict, false, RouteToPerson, "", true,
		"The run's tool-call budget for this invoice is spent, or the invoice's own cap across runs (details.limit invoice_cap)."},
	{IdempotencyKeyReused, http.StatusConflict, false, FixInputAndRetry, "", true,
		"The idempotency key was used before with other arguments."},
	{WriteInProgress, http.StatusConflict, true, HoldAndRecheck, "", true,
		"Another write of this invoice, or a call with this idempotency key, is still running. Repeat the same call after details.retry_after_s."},
	{RateLimited, http.StatusTooManyRequests, true, HoldAndRecheck, "", true,
		"The client called the gateway more often than its rate limit allows, or the ERP's quota toward a service was reached (details.reason erp_quota). Wait details.retry_after_s, then go on."},
	{AuthUnavailable, http.StatusServiceUnavailable, true, HoldAndRecheck, "", true,
		"The gateway cannot fetch the authorization server's keys to check the access token; nothing was done. Repeat the call after details.retry_after_s."},
	{ApprovalDecided, http.StatusConflict, false, StopAndEscalate, "", true,
		"A decision on an approval that was decided before: the decision stands (details.status)."},
	{ApprovalSuperseded, http.StatusConflict, false, FixInputAndRetry, "", true,
		"A decision on an approval another approval of the invoice took the place of: decide details.superseded_by instead."},
	{ApprovalSentBack, http.StatusConflict, false, RequestApproval, "", true,
		"A person sent the approval back with a question (details.question) instead of deciding it. Call request_approval again with a justification that answers it."},
	{SegregationOfDuties, http.StatusConflict, false, RouteToPerson, "", true,
		"The client that requested an approval cannot decide it; another person of details.approver must."},
	{Internal, http.StatusInternalServerError, false, StopAndEscalate, "", true,
		"A fault in the gateway. The message is generic; the log has the cause under the request id."},
}

var byCode = func() map[Code]Entry {
	m := make(map[Code]Entry, len(catalogue))
	for _, e := range catalogue {
		m[e.Code] = e
	}
	return m
}()

// Catalogue returns every entry, in the published order.
func Catalogue() []Entry {
	return append([]Entry(nil), catalogue...)
}

// Lookup returns the catalogue entry of a code.
func Lookup(c Code) (Entry, bool) {
	e, ok := byCode[c]
	return e, ok
}

// NextActions lists the five next actions.
var NextActions = []NextAction{FixInputAndRetry, HoldAndRecheck, RouteToPerson, RequestApproval, StopAndEscalate}
