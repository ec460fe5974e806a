package errmap

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

const internalMessage = "The gateway hit an internal fault. Escalate with the X-Request-Id of this response."

// messageCodes maps SAP message ids ("CLASS/NUMBER") returned as errors to
// named outcomes. Ids are matched exactly; text is never looked at.
var messageCodes = map[string]Code{
	"06/019": PONotFound, // purchase order does not exist
	"06/011": PONotFound,
	"M8/311": PONotFound,
	"06/020": POClosed, // item is deleted or blocked
	"06/025": SupplierNotFound,
	"06/027": SupplierNotFound,
	"F5/351": SupplierNotFound, // supplier account blocked for posting
	"M8/081": GRMissing,        // as an error: no goods receipt for the item
	"M8/108": DuplicateInvoice,
	"F5/117": DuplicateInvoice,
	"F5/201": PeriodClosed,
	"M7/053": PeriodClosed,
	"M8/535": PeriodClosed,
	"M8/184": InvoiceNotFound,  // the invoice document does not exist
	"M8/383": ERPConfiguration, // the communication user may not release or post invoices
}

// warningCodes are SAP warnings on a successful posting that mean the
// invoice went through with a variance (and usually a payment block).
var warningCodes = map[string]bool{"M8/081": true, "M8/082": true, "M8/083": true, "M8/194": true}

// defaultRetryAfter is the wait suggested for an unavailable ERP when it
// gave no hint of its own.
const defaultRetryAfter = 30

// Map turns any error from the ERP layer into a named error. It is the only
// place that decides a code from an upstream failure: typed domain errors by
// type; upstream errors that are faults of configuration the adapter found
// (erp.UpstreamError Config) as ERP_CONFIGURATION; a failed answer by the
// table of answers (status, kind of body, kind of call), SAP Gateway's own
// errors by their message ids; a record that cannot be read
// (*erp.DataError) as ERP_DATA_INVALID. Anything unrecognised is INTERNAL,
// with err as the logged cause. Map(nil) is nil.
func Map(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := fromRefusal(err); ok {
		if e.Cause == nil {
			e.Cause = err
		}
		return e
	}
	// An error that is already named, wrapped or not, is returned as it
	// is: made the cause of itself, unwrapping it would never end.
	if named, ok := errors.AsType[*Error](err); ok {
		return named
	}
	e := mapErr(err)
	if e.Cause == nil {
		e.Cause = err
	}
	return e
}

// mapErr names an error that is neither a refusal nor named already.
func mapErr(err error) *Error {
	// First: wrapped in an ERP failure, it is still the caller's to mend.
	if cred, ok := errors.AsType[*erp.CallerCredentialError](err); ok {
		return callerCredential(cred)
	}
	if nf, ok := errors.AsType[*erp.NotFoundError](err); ok {
		return notFound(nf)
	}
	if blocked, ok := errors.AsType[*erp.SupplierBlockedError](err); ok {
		return New(SupplierNotFound,
			fmt.Sprintf("Supplier %s cannot be invoiced: %s in the supplier master. Route to master data.",
				blocked.SupplierID, strings.ReplaceAll(blocked.Reason, "_", " ")),
			map[string]any{"supplier_id": blocked.SupplierID, "reason": blocked.Reason}).Route("")
	}
	if closed, ok := errors.AsType[*erp.POClosedError](err); ok {
		return New(POClosed,
			fmt.Sprintf("Purchase order %s item %s is closed (%s). Route to procurement.",
				closed.POID, closed.Item, strings.ReplaceAll(closed.Reason, "_", " ")),
			map[string]any{"po_id": closed.POID, "item": closed.Item, "reason": closed.Reason})
	}
	if grm, ok := errors.AsType[*erp.GRMissingError](err); ok {
		return grMissing(grm.POID, grm.Item)
	}
	if dup, ok := errors.AsType[*erp.DuplicateInvoiceError](err); ok {
		d := map[string]any{"invoice_id": dup.InvoiceID}
		msg := fmt.Sprintf("Invoice %s duplicates an invoice already in the ERP. Route to the AP team; do not reject it.", dup.InvoiceID)
		if dup.DuplicateOf != "" {
			d["duplicate_of"] = dup.DuplicateOf
			msg = fmt.Sprintf("Invoice %s duplicates posted invoice %s. Route to the AP team; do not reject it.",
				dup.InvoiceID, dup.DuplicateOf)
		}
		if dup.SupplierID != "" {
			d["supplier_id"], d["supplier_ref"] = dup.SupplierID, dup.SupplierRef
		}
		return New(DuplicateInvoice, msg, d)
	}
	if missing, ok := errors.AsType[*erp.ApprovalMissingError](err); ok {
		return approvalMissing(missing)
	}
	if sent, ok := errors.AsType[*erp.ApprovalSentBackError](err); ok {
		return approvalSentBack(sent)
	}
	if noAppr, ok := errors.AsType[*erp.NoApproverError](err); ok {
		return New(ApproverNotFound,
			fmt.Sprintf("The approval routing has no approver for invoice %s at this amount. Route to the AP lead.", noAppr.InvoiceID),
			map[string]any{"invoice_id": noAppr.InvoiceID})
	}
	if refused, ok := errors.AsType[*erp.DecisionRefusedError](err); ok {
		return decisionRefused(refused)
	}
	if unparked, ok := errors.AsType[*erp.InvoiceNotParkedError](err); ok {
		return New(InvalidRequest,
			fmt.Sprintf("Invoice %s is %s in the ERP: nothing to post or hold. Do not repeat; hand it over to ap_queue.",
				unparked.InvoiceID, unparked.Status),
			map[string]any{"invoice_id": unparked.InvoiceID, "reason": string(unparked.Status), "sap_status": unparked.SAPStatus}).Route(QueueAP)
	}
	if posted, ok := errors.AsType[*erp.InvoicePostedError](err); ok {
		return New(InvalidRequest,
			fmt.Sprintf("Invoice %s is already posted, so this step no longer applies to it. Do not repeat it.", posted.InvoiceID),
			map[string]any{"invoice_id": posted.InvoiceID, "reason": "already_posted"})
	}
	call, _ := errors.AsType[*retry.Error](err)
	if upstream, ok := errors.AsType[*erp.UpstreamError](err); ok {
		return fromUpstream(upstream, call)
	}
	if de, ok := errors.AsType[*erp.DataError](err); ok {
		return dataInvalid(de, nil)
	}
	if call != nil && call.BreakerOpen {
		e := unavailable(erp.Service(call.Service), seconds(call.RetryAfter), call.Attempts)
		e.Details["breaker"] = "open"
		return e
	}
	if call != nil && call.QuotaLimit != "" {
		return erpQuota(call)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return unavailable("", defaultRetryAfter, -1)
	}
	return New(Internal, internalMessage, nil)
}

// callerCredential names a call whose caller's credentials cannot reach
// the ERP, which exchanges the caller's access token for its own: the
// identity provider refused the token, or the caller has none (an API
// key). UNAUTHENTICATED, as the gateway's own refusal of a token is; a
// scope the identity provider would not grant the caller is SCOPE_MISSING,
// as the gateway's own missing scope is. Nothing reached the ERP.
func callerCredential(c *erp.CallerCredentialError) *Error {
	if c.Reason == erp.CredentialScopeRefused {
		return New(ScopeMissing,
			"The identity provider refused this caller the tool's ERP scope (not held, or unknown). A person must grant it.",
			map[string]any{"reason": c.Reason, "scope": c.Scope, "operation": c.Operation})
	}
	if c.Reason == erp.CredentialTokenRequired {
		return New(Unauthenticated,
			"Calls reaching the ERP need an OAuth access token to exchange, not an API key. Call with an access token.",
			map[string]any{"reason": c.Reason})
	}
	return New(Unauthenticated,
		"The identity provider refused this access token for the ERP. Get a new one; do not retry with it.",
		map[string]any{"reason": c.Reason})
}

func notFound(nf *erp.NotFoundError) *Error {
	switch nf.Entity {
	case erp.EntityInvoice:
		return New(InvoiceNotFound,
			fmt.Sprintf("Invoice %s is not in the ERP. Check the id on the document, retry once, then route to ap_queue.", nf.ID),
			map[string]any{"invoice_id": nf.ID})
	case erp.EntityPurchaseOrder:
		return New(PONotFound,
			fmt.Sprintf("PO %s is not in the ERP. Check the reference on the invoice, retry once, then route to ap_queue.", nf.ID),
			map[string]any{"po_id": nf.ID})
	case erp.EntityPOItem:
		return New(PONotFound,
			fmt.Sprintf("PO %s has no item %s. Check the reference on the invoice, retry once, then route to ap_queue.", nf.ID, nf.Item),
			map[string]any{"po_id": nf.ID, "item": nf.Item})
	case erp.EntitySupplier:
		return New(SupplierNotFound,
			fmt.Sprintf("Unknown supplier %s. Do not guess; retry once with a fixed id, then route to master_data.", nf.ID),
			map[string]any{"supplier_id": nf.ID, "reason": "not_in_master"})
	case erp.EntityApproval:
		return New(ApprovalMissing,
			fmt.Sprintf("Approval %s is unknown. Call request_approval for the invoice; never invent an approval id.", nf.ID),
			map[string]any{"approval_id": nf.ID, "reason": erp.ApprovalUnknown})
	case erp.EntityHold:
		e := New(InvalidRequest,
			fmt.Sprintf("Hold %s is unknown. Use the hold_id hold_invoice returned; never invent one.", nf.ID),
			map[string]any{"hold_id": nf.ID, "field": "hold_id", "reason": "unknown"})
		e.Status = http.StatusNotFound
		return e
	}
	return New(Internal, internalMessage, nil)
}

func grMissing(po, item string) *Error {
	return New(GRMissing,
		fmt.Sprintf("No goods receipt found for PO %s item %s. Put the invoice on hold for the scheduled re-check.", po, item),
		map[string]any{"po_id": po, "item": item})
}

func approvalMissing(m *erp.ApprovalMissingError) *Error {
	d := map[string]any{"invoice_id": m.InvoiceID, "reason": m.Reason}
	if m.ApprovalID != "" {
		d["approval_id"] = m.ApprovalID
	}
	var msg string
	switch m.Reason {
	case erp.ApprovalAbsent:
		msg = fmt.Sprintf("Invoice %s cannot be posted without an approval_id. Call request_approval first.", m.InvoiceID)
	case erp.ApprovalUnknown:
		msg = fmt.Sprintf("Approval %s is unknown; invoice %s cannot be posted. Call request_approval; never invent an id.", m.ApprovalID, m.InvoiceID)
	case erp.ApprovalNotYet:
		// A new request would only wait beside this one: the move is to
		// wait for the person, so the next action is hold_and_recheck.
		return New(ApprovalMissing, fmt.Sprintf("Approval %s for invoice %s awaits a person. Hold the invoice; re-check with get_approval.", m.ApprovalID, m.InvoiceID), d).Hold()
	case erp.ApprovalWasRejected:
		msg = fmt.Sprintf("Approval %s for invoice %s was rejected. Do not post; request approval of another action.", m.ApprovalID, m.InvoiceID)
	case erp.ApprovalWasSuperseded:
		d["superseded_by"] = m.SupersededBy
		if m.SupersededStatus == erp.ApprovalApproved {
			return New(ApprovalMissing, fmt.Sprintf("Approval %s was superseded by %s, which is approved. Post invoice %s with approval_id %s.",
				m.ApprovalID, m.SupersededBy, m.InvoiceID, m.SupersededBy), d).Fix()
		}
		if m.SupersededStatus == erp.ApprovalPending {
			return New(ApprovalMissing, fmt.Sprintf("Approval %s was superseded by %s, which awaits a person. Hold the invoice; re-check with get_approval %s.",
				m.ApprovalID, m.SupersededBy, m.SupersededBy), d).Hold()
		}
		msg = fmt.Sprintf("Approval %s for invoice %s was superseded by %s. Do not post with it; request approval of the action to take.",
			m.ApprovalID, m.InvoiceID, m.SupersededBy)
	case erp.ApprovalAmountDiffers:
		d["approved_amount"], d["invoice_amount"] = m.Approved.Amount.StringFixed(2), m.Invoiced.Amount.StringFixed(2)
		d["currency"] = m.Invoiced.Currency
		msg = fmt.Sprintf("Approval %s is for %s, invoice %s for %s. Request a new approval.",
			m.ApprovalID, m.Approved, m.InvoiceID, m.Invoiced)
	default:
		d["approval_invoice_id"] = m.ForInvoice
		msg = fmt.Sprintf("Approval %s is for invoice %s, not %s. Request an approval for invoice %s.", m.ApprovalID, m.ForInvoice, m.InvoiceID, m.InvoiceID)
	}
	return New(ApprovalMissing, msg, d)
}

// approvalSentBack names an approval a person sent back with a question.
// get_approval and post_invoice both answer APPROVAL_SENT_BACK, not a 200
// with a status or APPROVAL_MISSING with a reason: the agent has a question
// to answer before anything else, and one code carries it, with the same
// details, wherever the agent meets the approval.
func approvalSentBack(s *erp.ApprovalSentBackError) *Error {
	d := map[string]any{"approval_id": s.ApprovalID, "invoice_id": s.InvoiceID, "question": s.Question,
		"asked_by": s.AskedBy, "asked_at": s.AskedAt.UTC().Format(time.RFC3339)}
	return New(ApprovalSentBack,
		fmt.Sprintf("Approval %s was sent back with a question (details.question): answer it in a new request_approval.", s.ApprovalID), d)
}

func decisionRefused(r *erp.DecisionRefusedError) *Error {
	d := map[string]any{"approval_id": r.ApprovalID, "reason": r.Reason, "status": string(r.Status)}
	if r.Reason == erp.DecisionSuperseded {
		d["superseded_by"] = r.SupersededBy
		return New(ApprovalSuperseded,
			fmt.Sprintf("Approval %s was superseded by %s and can no longer be decided. Decide %s instead.", r.ApprovalID, r.SupersededBy, r.SupersededBy), d)
	}
	if r.Reason == erp.DecisionSameRequester {
		d["approver"] = r.Approver
		return New(SegregationOfDuties,
			fmt.Sprintf("The client that requested approval %s cannot decide it; another person of %s must.", r.ApprovalID, r.Approver), d)
	}
	return New(ApprovalDecided,
		fmt.Sprintf("Approval %s is already %s; a decision stands. Request a new approval to change course.", r.ApprovalID, r.Status), d)
}

// fromUpstream names an upstream failure; call, when not nil, is what the
// retry layer knows of the call it ended. A fault of configuration the
// adapter found (erp.UpstreamError Config) comes first. A failed answer is
// named by the table of answers; a failure without one (no answer, a 2xx
// the adapter could not use) by what the adapter and the retry layer know
// of it.
func fromUpstream(u *erp.UpstreamError, call *retry.Error) *Error {
	if u.Config {
		return configuration(u)
	}
	attempts := u.Attempts
	if call != nil {
		attempts = call.Attempts
	}
	unconfirmed := u.Write && (u.Unconfirmed || (call != nil && call.Unconfirmed))
	outcomeUnknown := func() *Error {
		return New(ERPOutcomeUnknown,
			fmt.Sprintf("The ERP did not confirm the %s%s. Hold; repeat later to settle it.", u.Operation, about(u)),
			withKeys(u, map[string]any{"attempts": max(attempts, 1)}))
	}
	a, answered := answerOf(u)
	if !answered {
		if unconfirmed {
			return outcomeUnknown()
		}
		if de, ok := errors.AsType[*erp.DataError](u); ok {
			return dataInvalid(de, u)
		}
		return unavailable(u.Service, retryAfterSeconds(u), attempts)
	}
	switch a {
	case misconfigured:
		return configuration(u)
	case transient:
		if unconfirmed {
			return outcomeUnknown()
		}
		return unavailable(u.Service, retryAfterSeconds(u), attempts)
	}
	// SAP Gateway's own error: its message ids name the outcome first.
	for _, id := range u.MessageIDs {
		if code, ok := messageCodes[id]; ok {
			return byMessage(code, u)
		}
	}
	if a == sapNotFound {
		if e := notFoundOf(u); e != nil {
			return e
		}
	}
	if unconfirmed {
		return outcomeUnknown()
	}
	if a == sapFailure {
		return unavailable(u.Service, retryAfterSeconds(u), attempts)
	}
	return New(Internal, internalMessage, nil)
}

// configuration is ERP_CONFIGURATION: the ERP cannot be used as the
// gateway is set up. The message says what kind of fault it is and names
// the service, never a host or the ERP's wording.
func configuration(u *erp.UpstreamError) *Error {
	what := "The ERP"
	if u.Service != "" {
		what = "The ERP's " + strings.ReplaceAll(string(u.Service), "_", " ") + " service"
	}
	why := "cannot be used as configured"
	switch class, _ := classOf(u.Status); {
	case u.Status == 0:
	case class == statusRefused:
		why = "refuses the gateway's user or authorisations"
	case class == statusRedirect || class == statusNotFound || class == statusNotAllowed || class == statusNotImplemented:
		why = "is not at the configured URL or not active"
	}
	d := withKeys(u, nil)
	if u.Service != "" {
		d["service"] = string(u.Service)
	}
	return New(ERPConfiguration, fmt.Sprintf("%s %s. Escalate; do not retry.", what, why), d)
}

// notFoundOf is the NOT_FOUND of the entity a call that SAP Gateway
// answered "does not exist" was about, by its service and ids; nil when
// the call names none.
func notFoundOf(u *erp.UpstreamError) *Error {
	switch {
	case u.Service == erp.ServicePurchaseOrder && u.Keys["po_id"] != "":
		return notFound(&erp.NotFoundError{Entity: erp.EntityPurchaseOrder, ID: u.Keys["po_id"]})
	case u.Service == erp.ServiceBusinessPartner && u.Keys["supplier_id"] != "":
		return notFound(&erp.NotFoundError{Entity: erp.EntitySupplier, ID: u.Keys["supplier_id"]})
	case u.Service == erp.ServiceSupplierInvoice && u.Keys["invoice_id"] != "":
		return notFound(&erp.NotFoundError{Entity: erp.EntityInvoice, ID: u.Keys["invoice_id"]})
	}
	return nil
}

// dataInvalid is ERP_DATA_INVALID: the ERP answered, but its answer for a
// record cannot be read. The message names the ids the call was about, or
// else the kind of record, never the record's data or the ERP's wording;
// u, when not nil, adds those ids and the service.
func dataInvalid(de *erp.DataError, u *erp.UpstreamError) *Error {
	d := map[string]any{}
	svc := de.Service
	if u != nil {
		d = withKeys(u, d)
		if svc == "" {
			svc = u.Service
		}
	}
	if svc != "" {
		d["service"] = string(svc)
	}
	if de.Entity != "" {
		d["entity"] = string(de.Entity)
	}
	var what string
	switch {
	case u != nil && (u.Keys["invoice_id"] != "" || u.Keys["po_id"] != ""):
		what = about(u)
	case u != nil && u.Keys["supplier_id"] != "":
		what = " for supplier " + u.Keys["supplier_id"]
	case de.Entity != "":
		what = " for a " + strings.ReplaceAll(string(de.Entity), "_", " ") + " record"
	}
	return New(ERPDataInvalid,
		fmt.Sprintf("The ERP's answer%s cannot be read; a person must look at the record. Do not retry.", what), d)
}

func byMessage(code Code, u *erp.UpstreamError) *Error {
	k := u.Keys
	switch code {
	case InvoiceNotFound:
		if id := k["invoice_id"]; id != "" {
			return notFound(&erp.NotFoundError{Entity: erp.EntityInvoice, ID: id})
		}
	case ERPConfiguration:
		return configuration(u)
	case PONotFound:
		if k["item"] != "" && k["po_id"] != "" {
			return notFound(&erp.NotFoundError{Entity: erp.EntityPOItem, ID: k["po_id"], Item: k["item"]})
		}
		return New(PONotFound, "A purchase order referenced"+about(u)+" is not in the ERP. Check the reference and retry once.",
			withKeys(u, nil))
	case SupplierNotFound:
		return New(SupplierNotFound, "The supplier"+about(u)+" is unknown or blocked in the ERP. Retry once with a fixed id.",
			withKeys(u, map[string]any{"reason": "not_in_master"}))
	case POClosed:
		return New(POClosed, "A purchase order item"+about(u)+" is closed in the ERP. Route to procurement.", withKeys(u, nil))
	case GRMissing:
		if k["po_id"] != "" && k["item"] != "" {
			return grMissing(k["po_id"], k["item"])
		}
		return New(GRMissing, "The ERP has no goods receipt"+about(u)+". Put the invoice on hold for the scheduled re-check.", withKeys(u, nil))
	case DuplicateInvoice:
		what := "the invoice"
		if id := k["invoice_id"]; id != "" {
			what = "invoice " + id
		}
		return New(DuplicateInvoice, "The ERP flags "+what+" as a duplicate. Route to the AP team; do not reject it.",
			withKeys(u, nil))
	case PeriodClosed:
		return New(PeriodClosed, "The posting period"+about(u)+" is closed in the ERP. Stop and escalate to finance.", withKeys(u, nil))
	}
	return New(Internal, internalMessage, nil)
}

// about names the invoice (or else the PO) a call was about, for messages;
// "" for none or a nil u.
func about(u *erp.UpstreamError) string {
	switch {
	case u == nil:
		return ""
	case u.Keys["invoice_id"] != "":
		return " for invoice " + u.Keys["invoice_id"]
	case u.Keys["po_id"] != "" && u.Keys["item"] != "":
		return " for PO " + u.Keys["po_id"] + " item " + u.Keys["item"]
	case u.Keys["po_id"] != "":
		return " for PO " + u.Keys["po_id"]
	case u.Keys["supplier_id"] != "":
		return " " + u.Keys["supplier_id"]
	}
	return ""
}

// withKeys copies the ids the call was about into details.
func withKeys(u *erp.UpstreamError, d map[string]any) map[string]any {
	if d == nil {
		d = map[string]any{}
	}
	for _, k := range []string{"invoice_id", "po_id", "item", "supplier_id", "approval_id"} {
		if v := u.Keys[k]; v != "" {
			d[k] = v
		}
	}
	return d
}

func retryAfterSeconds(u *erp.UpstreamError) int { return seconds(u.RetryAfter) }

// seconds is a wait in whole seconds, rounded up; defaultRetryAfter when
// there is none.
func seconds(d time.Duration) int {
	if d > 0 {
		return int(math.Ceil(d.Seconds()))
	}
	return defaultRetryAfter
}

// erpQuota names a call the ERP's quota refused: the gateway's ceiling of
// calls toward the service, shared by every client, was reached, and the
// attempt was not sent. It is RATE_LIMITED, as the agent's own rate limit
// is, with details.reason erp_quota, the service and the limit reached
// (calls_per_second, in_flight, or unavailable when the shared quota
// could not be checked).
func erpQuota(call *retry.Error) *Error {
	wait := seconds(call.RetryAfter)
	svc := strings.ReplaceAll(string(call.Service), "_", " ")
	d := map[string]any{"reason": "erp_quota", "service": string(call.Service), "limit": call.QuotaLimit,
		"retry_after_s": wait, "attempts": call.Attempts}
	return New(RateLimited, fmt.Sprintf(
		"The ERP's %s service is at its call quota; nothing was sent. Wait %d s, then go on, not at once.",
		svc, wait), d)
}

func unavailable(svc erp.Service, retryAfter, attempts int) *Error {
	what := "The ERP"
	if svc != "" {
		what = "The ERP's " + strings.ReplaceAll(string(svc), "_", " ") + " service"
	}
	d := map[string]any{"retry_after_s": retryAfter}
	if attempts >= 0 {
		d["attempts"] = attempts
	}
	if svc != "" {
		d["service"] = string(svc)
	}
	return New(ERPUnavailable,
		fmt.Sprintf("%s is unavailable. Hold the invoice; re-check after %d s, not at once.", what, retryAfter), d)
}

// Info names the outcome carried by warnings on a successful posting:
// TOLERANCE_EXCEEDED when the ERP posted with a variance warning or set a
// payment block (other than a hold), else "".
func Info(msgs []erp.Message, paymentBlock string) Code {
	for _, m := range msgs {
		if warningCodes[m.ID] {
			return ToleranceExceeded
		}
	}
	if paymentBlock != "" && paymentBlock != "H" {
		return ToleranceExceeded
	}
	return ""
}

// Match names the result of a three-way match and the agent's next move
// after it: TOLERANCE_EXCEEDED or MATCHED, and request_approval either
// way, since even a clean match is posted only after an approval.
func Match(status erp.MatchStatus) (result string, next NextAction) {
	if status == erp.ToleranceExceeded {
		return string(ToleranceExceeded), byCode[ToleranceExceeded].NextAction
	}
	return matched, RequestApproval
}

// matched is the result of a three-way match within tolerance, as the
// contract names it.
const matched = "MATCHED"

// Invalid is the INVALID_REQUEST for one bad field: it names the field and
// says what is wrong with it.
func Invalid(field, problem string) *Error {
	return New(InvalidRequest, fmt.Sprintf("Field %q %s.", field, problem), map[string]any{"field": field})
}

// InvalidPage is the INVALID_REQUEST of a person's step in the web console,
// with the status of the page that shows it: 403 for a form without its
// CSRF token, 404 for a page or record that is not there, 409 for a step
// the record's state or the gateway's set-up does not allow. Any other
// status is treated as 400.
func InvalidPage(status int, field, problem string) *Error {
	e := Invalid(field, problem)
	switch status {
	case http.StatusForbidden, http.StatusNotFound, http.StatusConflict:
		e.Status = status
	}
	return e
}

// Protocol is the INVALID_REQUEST of HTTP itself: an unknown route (404), a
// wrong method (405), an oversize body (413), a body that is not JSON (415),
// an oversize header (431), or, on /mcp, a Host or Origin the endpoint does
// not serve (403, which the MCP transport prescribes). Any other status is
// treated as 400.
func Protocol(status int, message string, details map[string]any) *Error {
	e := New(InvalidRequest, message, details)
	switch status {
	case http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge,
		http.StatusUnsupportedMediaType, http.StatusRequestHeaderFieldsTooLarge:
		e.Status = status
	}
	return e
}
