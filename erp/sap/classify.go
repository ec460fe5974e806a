package sap

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// Classify sorts a failed attempt for the retry layer by the typed errors
// of the ERP layer, never by text. For a write, anything after the request
// may have reached the ERP (a timeout, a broken connection, a proxy's 502
// or 504, an unreadable success) is OutcomeUnknown; only a refused
// connection, 429 and 503 say the ERP did not take it. A read whose
// answer holds a record that does not fit the service's $metadata
// (*erp.DataError) is Permanent: the same answer would come again.
func Classify(err error, write bool) retry.Class {
	var up *erp.UpstreamError
	if !errors.As(err, &up) || errors.Is(err, context.Canceled) {
		return retry.Permanent
	}
	switch {
	case up.Config:
		// A configuration fault (credentials, authorisations, a service
		// not activated) does not heal by trying again.
		return retry.Permanent
	case write && up.Status == 0 && isDial(up.Err):
		return retry.Transient
	case write && (up.Timeout || up.Status == 0 || (up.Status >= 200 && up.Status < 300)):
		return retry.OutcomeUnknown
	case write && (up.Status == http.StatusTooManyRequests || up.Status == http.StatusServiceUnavailable):
		return retry.Transient
	case write && up.Transient:
		return retry.OutcomeUnknown
	case isDataError(err):
		return retry.Permanent
	case up.Transient || up.Timeout || up.Status == 0 || (up.Status >= 200 && up.Status < 300):
		return retry.Transient
	}
	return retry.Permanent
}

func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func isDataError(err error) bool {
	var de *erp.DataError
	return errors.As(err, &de)
}

// Result names the outcome of a failed attempt for metrics: "business"
// (the ERP answered with a business error), "transient", "timeout" or
// "error" (no answer, or an answer with a record that cannot be read);
// "ok" for nil.
func Result(err error) string {
	var up *erp.UpstreamError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &up) && up.Timeout:
		return "timeout"
	case errors.As(err, &up) && up.Transient:
		return "transient"
	case errors.As(err, &up) && up.Status == 0, isDataError(err):
		return "error"
	default:
		return "business"
	}
}

// retryAfter is the ERP's Retry-After hint on a failed attempt.
func retryAfter(err error) time.Duration {
	var up *erp.UpstreamError
	if errors.As(err, &up) {
		return up.RetryAfter
	}
	return 0
}

// classified returns call with the ERP's classification of its failures.
func classified(call retry.Call) retry.Call {
	call.Classify, call.Result, call.RetryAfter = Classify, Result, retryAfter
	return call
}
