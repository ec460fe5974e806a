package errmap

import (
	"errors"
	"fmt"

	"github.com/erpgate/erpgate/api/refusal"
)

// fromRefusal names the gateway's own refusals of a call; ok is false for
// an error that is none of them.
func fromRefusal(err error) (e *Error, ok bool) {
	if againNF, ok := errors.AsType[refusal.NotFoundAgain](err); ok {
		return notFoundAgain(againNF), true
	}
	if unauth, ok := errors.AsType[refusal.Unauthenticated](err); ok {
		return unauthenticated(unauth), true
	}
	if scope, ok := errors.AsType[refusal.ScopeMissing](err); ok {
		return New(ScopeMissing,
			fmt.Sprintf("This client lacks the %q scope for %s. A person must grant it; hand the step over.", scope.Scope, scope.Operation),
			map[string]any{"scope": scope.Scope, "operation": scope.Operation}), true
	}
	if rate, ok := errors.AsType[refusal.RateLimited](err); ok {
		if rate.Reason == refusal.RateKeysCap {
			return New(RateLimited,
				fmt.Sprintf("This client holds %d idempotency keys, its cap. Reuse a repeated call's key; new keys pass as old expire.", rate.Cap),
				map[string]any{"reason": rate.Reason, "retry_after_s": rate.RetryAfter}), true
		}
		if rate.Reason == refusal.RateAuthFailures {
			return New(RateLimited,
				fmt.Sprintf("Too many failed authentications from this address. Fix the credentials, then wait %d s; do not retry at once.", rate.RetryAfter),
				map[string]any{"reason": rate.Reason, "retry_after_s": rate.RetryAfter}), true
		}
		return New(RateLimited,
			fmt.Sprintf("This client has made more calls than its rate limit allows. Wait %d s, then go on; do not retry at once.", rate.RetryAfter),
			map[string]any{"retry_after_s": rate.RetryAfter}), true
	}
	if _, ok := errors.AsType[refusal.KeyReused](err); ok {
		return New(IdempotencyKeyReused,
			"This idempotency key was used for a call with other arguments. Use a new key for a new call.", nil), true
	}
	if busy, ok := errors.AsType[refusal.InFlight](err); ok {
		return inFlight(busy), true
	}
	if store, ok := errors.AsType[refusal.StoreUnavailable](err); ok {
		if store.Which == refusal.StoreRecords {
			return New(Internal, "The gateway cannot reach its records database, so it takes no write. Escalate.",
				map[string]any{"reason": "records_unavailable", "engine": store.Engine}), true
		}
		return New(Internal,
			"The gateway cannot reach its run-state store to enforce loop limits; nothing was sent to the ERP. Escalate.",
			map[string]any{"reason": "run_state_unavailable"}), true
	}
	if limit, ok := errors.AsType[refusal.Limit](err); ok {
		return runLimit(limit), true
	}
	return nil, false
}

// inFlight names a write that waited in vain for another call to end. It
// is a 409, not a 429 or 503, so that no client repeats it by itself at
// once; retryable says the same call may succeed after the wait.
func inFlight(b refusal.InFlight) *Error {
	d := map[string]any{"reason": b.Reason, "retry_after_s": b.RetryAfter}
	if b.InvoiceID != "" {
		d["invoice_id"] = b.InvoiceID
	}
	if b.Reason == refusal.InFlightKey {
		return New(WriteInProgress, fmt.Sprintf(
			"A call with this idempotency key is still running. Repeat this call after %d s to get its answer.", b.RetryAfter), d)
	}
	d["operation"] = b.Operation
	return New(WriteInProgress, fmt.Sprintf(
		"%s of invoice %s is still running. Repeat this call after %d s; do not change it.",
		b.Operation, b.InvoiceID, b.RetryAfter), d)
}

// defaultAuthRetryAfter is the wait suggested when the authorization
// server's keys cannot be fetched and the refusal names none.
const defaultAuthRetryAfter = 5

// unauthenticated names a call without valid credentials: an API key, or
// an OAuth access token when the gateway takes them; or, when the token
// cannot be checked at all, AUTH_UNAVAILABLE, which is no fault of the
// caller's.
func unauthenticated(u refusal.Unauthenticated) *Error {
	switch {
	case u.Token == refusal.TokenUnverifiable:
		wait := u.RetryAfter
		if wait <= 0 {
			wait = defaultAuthRetryAfter
		}
		return New(AuthUnavailable, fmt.Sprintf(
			"The gateway cannot reach the authorization server's keys to check the access token. Repeat the call after %d s.", wait),
			map[string]any{"reason": u.Token, "retry_after_s": wait})
	case u.Token != "":
		return New(Unauthenticated, fmt.Sprintf(
			"Access token refused (%s). Get a new one from the authorization server; do not retry with this one.", u.Token),
			map[string]any{"reason": u.Token})
	case u.OAuth:
		return New(Unauthenticated,
			"Missing or invalid credentials. Send Authorization: Bearer <access token or API key>, or X-API-Key.", nil)
	}
	return New(Unauthenticated,
		"Missing or invalid API key. Send it as Authorization: Bearer <key> or X-API-Key; do not retry without one.", nil)
}

// runLimit names a call refused by one of its run's limits.
func runLimit(l refusal.Limit) *Error {
	d := map[string]any{"run_id": l.RunID, "operation": l.Operation, "limit": l.Kind}
	if l.InvoiceID != "" {
		d["invoice_id"] = l.InvoiceID
	}
	switch l.Kind {
	case refusal.LimitBudget:
		d["budget"] = l.Budget
		what := "calls about no invoice"
		if l.InvoiceID != "" {
			what = "invoice " + l.InvoiceID
		}
		return New(BudgetExhausted, fmt.Sprintf(
			"This run spent its %d-call budget for %s. Hand over with a summary of your findings.",
			l.Budget, what), d)
	case refusal.LimitGRMissing:
		// Looking again will not make the goods arrive: the cure is time.
		return New(LoopDetected, fmt.Sprintf(
			"PO item %s had no goods receipt earlier in this run. Hold the invoice for the re-check.",
			l.POItem), d).Hold()
	case refusal.LimitCorrectedRetry:
		return New(LoopDetected, fmt.Sprintf(
			"%s failed twice in this run, once after a correction; no further retry. Hand the invoice over.",
			l.Operation), d).Route(QueueAP)
	case refusal.LimitERPWait:
		d["retry_after_s"] = l.RetryAfter
		return New(ERPUnavailable, fmt.Sprintf(
			"The ERP was unavailable for this call moments ago; repeat it after %d s, not before. Hold the invoice.", l.RetryAfter), d)
	case refusal.LimitIdenticalRepeat:
		if l.PreviousCode != "" {
			d["previous_code"] = l.PreviousCode
		}
		if l.CaseVersion != 0 {
			d["case_version"] = l.CaseVersion
		}
		return New(LoopDetected, fmt.Sprintf(
			"%s already ran with these arguments in this run; nothing it depends on changed since. Hand over.",
			l.Operation), d)
	case refusal.LimitInvoiceCap:
		d["calls"], d["runs"], d["cap_calls"], d["cap_runs"] = l.Calls, l.Runs, l.CapCalls, l.CapRuns
		return New(BudgetExhausted, fmt.Sprintf(
			"Invoice %s has had %d calls in %d runs, the most the gateway allows one invoice. Hand it over to a person.",
			l.InvoiceID, l.Calls, l.Runs), d).Route(QueueAPTeam)
	}
	return New(Internal, internalMessage, nil)
}

// notFoundAgain turns the second not-found of a run's operation into a
// handover to the code's queue.
func notFoundAgain(r refusal.NotFoundAgain) *Error {
	first := Map(r.Named)
	d := make(map[string]any, len(first.Details)+1)
	for k, v := range first.Details {
		d[k] = v
	}
	e := &Error{Code: first.Code, Retryable: first.Retryable, NextAction: first.NextAction, Details: d,
		Status: first.Status, Cause: first.Cause}
	e.Route("")
	e.Message = fmt.Sprintf("Not found after the corrected retry either (%s). Hand over to %v; do not retry.",
		ids(e.Details), e.Details["queue"])
	return e
}

// ids names the ids in details, for a message.
func ids(d map[string]any) string {
	out := ""
	for _, k := range []string{"invoice_id", "po_id", "item", "supplier_id"} {
		if v, ok := d[k]; ok {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%s %v", k, v)
		}
	}
	return out
}
