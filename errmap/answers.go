package errmap

import (
	"net/http"

	"github.com/erpgate/erpgate/erp"
)

// answer is what an ERP's failed answer is, by its status, its body and
// what the call asked for: the one decision between a business outcome and
// a fault of the ERP or of what stands in front of it.
type answer int

const (
	// sapRefusal is SAP Gateway refusing the call with its own error: a
	// known message id names the outcome; an unknown one means the gateway
	// sent what it should not have (INTERNAL).
	sapRefusal answer = iota + 1
	// sapNotFound is SAP Gateway's own answer that the entity the call
	// names does not exist: a known message id names the outcome, else it
	// is the NOT_FOUND of the entity the call's ids name.
	sapNotFound
	// sapFailure is SAP's own failure (its error on a 500: a short dump, a
	// backend error): a known message id names the outcome, else
	// ERP_UNAVAILABLE, which the gateway does not retry.
	sapFailure
	// transient may pass: the ERP client retries it, and when its
	// attempts are spent it is ERP_UNAVAILABLE, or ERP_OUTCOME_UNKNOWN for
	// a write that may have been applied.
	transient
	// misconfigured is ERP_CONFIGURATION: what answers at the configured
	// URL is not the SAP service the gateway is set up for, or it refuses
	// the gateway. No retry helps; a person must fix the set-up.
	misconfigured
)

// statusClass groups the HTTP statuses the table tells apart.
type statusClass int

const (
	statusRedirect       statusClass = iota // 3xx: a login page or a wrong path; redirects are never followed
	statusRefused                           // 401, 403, 407: credentials or authorisations
	statusNotFound                          // 404
	statusNotAllowed                        // 405
	statusClientError                       // every other 4xx
	statusTooMany                           // 429
	statusServerError                       // 500 and any 5xx not named here
	statusNotImplemented                    // 501
	statusGateway                           // 502, 503, 504
	statusClasses                           // the number of classes
)

// classOf is the class of an answered status; false for a status that is
// no failed answer (none, 1xx, 2xx).
func classOf(status int) (statusClass, bool) {
	switch {
	case status >= 300 && status < 400:
		return statusRedirect, true
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusProxyAuthRequired:
		return statusRefused, true
	case status == http.StatusNotFound:
		return statusNotFound, true
	case status == http.StatusMethodNotAllowed:
		return statusNotAllowed, true
	case status == http.StatusTooManyRequests:
		return statusTooMany, true
	case status >= 400 && status < 500:
		return statusClientError, true
	case status == http.StatusNotImplemented:
		return statusNotImplemented, true
	case status == http.StatusBadGateway, status == http.StatusServiceUnavailable, status == http.StatusGatewayTimeout:
		return statusGateway, true
	case status >= 500 && status < 600:
		return statusServerError, true
	}
	return 0, false
}

// bodies are the kinds of body the table tells apart, in its column order.
var bodies = []erp.AnswerBody{erp.BodySAPError, erp.BodyOtherJSON, erp.BodyText, erp.BodyEmpty}

// calls are the kinds of call the table tells apart, in its column order.
var calls = []erp.CallKind{erp.CallEntity, erp.CallList, erp.CallFunction}

// byCall is one cell group of the table: the answer for each kind of call.
type byCall [3]answer // entity read, list read, function import

// answers is the table: for each status class and each kind of body, what
// the answer is to an entity read, a list read and a function import (such
// as Post). Only SAP Gateway's own error is a business answer; a 404 is a
// business "not found" only from SAP Gateway and only for a call that
// names one entity, as SAP answers a filter that matches nothing with an
// empty list. Whatever else answers (a Web Dispatcher's or proxy's page,
// another server's JSON, nothing) is a fault of configuration, unless the
// status says the failure may pass. The ERP client retries exactly the
// transient cells (see erp/sap's transientStatus).
var answers = [statusClasses]map[erp.AnswerBody]byCall{
	statusRedirect: {
		erp.BodySAPError:  {misconfigured, misconfigured, misconfigured},
		erp.BodyOtherJSON: {misconfigured, misconfigured, misconfigured},
		erp.BodyText:      {misconfigured, misconfigured, misconfigured},
		erp.BodyEmpty:     {misconfigured, misconfigured, misconfigured},
	},
	statusRefused: {
		erp.BodySAPError:  {misconfigured, misconfigured, misconfigured},
		erp.BodyOtherJSON: {misconfigured, misconfigured, misconfigured},
		erp.BodyText:      {misconfigured, misconfigured, misconfigured},
		erp.BodyEmpty:     {misconfigured, misconfigured, misconfigured},
	},
	statusNotFound: {
		erp.BodySAPError:  {sapNotFound, misconfigured, sapNotFound},
		erp.BodyOtherJSON: {misconfigured, misconfigured, misconfigured},
		erp.BodyText:      {misconfigured, misconfigured, misconfigured},
		erp.BodyEmpty:     {misconfigured, misconfigured, misconfigured},
	},
	statusNotAllowed: {
		erp.BodySAPError:  {misconfigured, misconfigured, misconfigured},
		erp.BodyOtherJSON: {misconfigured, misconfigured, misconfigured},
		erp.BodyText:      {misconfigured, misconfigured, misconfigured},
		erp.BodyEmpty:     {misconfigured, misconfigured, misconfigured},
	},
	statusClientError: {
		erp.BodySAPError:  {sapRefusal, sapRefusal, sapRefusal},
		erp.BodyOtherJSON: {misconfigured, misconfigured, misconfigured},
		erp.BodyText:      {misconfigured, misconfigured, misconfigured},
		erp.BodyEmpty:     {misconfigured, misconfigured, misconfigured},
	},
	statusTooMany: {
		erp.BodySAPError:  {transient, transient, transient},
		erp.BodyOtherJSON: {transient, transient, transient},
		erp.BodyText:      {transient, transient, transient},
		erp.BodyEmpty:     {transient, transient, transient},
	},
	statusServerError: {
		erp.BodySAPError:  {sapFailure, sapFailure, sapFailure},
		erp.BodyOtherJSON: {transient, transient, transient},
		erp.BodyText:      {transient, transient, transient},
		erp.BodyEmpty:     {transient, transient, transient},
	},
	statusNotImplemented: {
		erp.BodySAPError:  {misconfigured, misconfigured, misconfigured},
		erp.BodyOtherJSON: {misconfigured, misconfigured, misconfigured},
		erp.BodyText:      {misconfigured, misconfigured, misconfigured},
		erp.BodyEmpty:     {misconfigured, misconfigured, misconfigured},
	},
	statusGateway: {
		erp.BodySAPError:  {transient, transient, transient},
		erp.BodyOtherJSON: {transient, transient, transient},
		erp.BodyText:      {transient, transient, transient},
		erp.BodyEmpty:     {transient, transient, transient},
	},
}

// answerOf looks an answered failure up in the table; false when u carries
// no failed answer (no answer arrived, or a 2xx could not be used). An
// error that does not say its body is taken for SAP Gateway's when it
// carries message ids, which only SAP's error has, and for someone else's
// otherwise; one that does not say its call is a function import when it
// writes and a list read when it reads, the reading that never makes a
// 404 a business answer.
func answerOf(u *erp.UpstreamError) (answer, bool) {
	class, ok := classOf(u.Status)
	if !ok {
		return 0, false
	}
	body := u.Body
	if body == erp.BodyUnknown {
		body = erp.BodyText
		if len(u.MessageIDs) > 0 {
			body = erp.BodySAPError
		}
	}
	call := u.Call
	if call == erp.CallUnknown {
		call = erp.CallList
		if u.Write {
			call = erp.CallFunction
		}
	}
	cells, ok := answers[class][body]
	if !ok {
		cells = answers[class][erp.BodyText]
	}
	for i, c := range calls {
		if c == call {
			return cells[i], true
		}
	}
	return cells[1], true
}
