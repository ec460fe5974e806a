// Package refusal holds the gateway's own refusals of a call as plain
// values: what was refused and why, nothing of how it is answered. The
// packages that refuse (api, api/runs) return them; errmap alone names
// them with a code, a message, a status and a next_action.
package refusal

import "fmt"

// Unauthenticated refuses a call without valid credentials.
type Unauthenticated struct {
	// OAuth is set when the gateway takes OAuth access tokens beside API
	// keys.
	OAuth bool
	// Bearer is set when the refused credential came as Authorization:
	// Bearer.
	Bearer bool
	// Token says why an OAuth access token was refused (one of the Token
	// reasons); empty when the credential was no access token.
	Token string
	// RetryAfter, for TokenUnverifiable, is how many seconds until the
	// gateway tries the issuer's keys again.
	RetryAfter int
}

// The reasons of an Unauthenticated refusal of an access token.
const (
	TokenInvalid      = "invalid"       // bad signature, issuer, or form
	TokenExpired      = "expired"       // past its exp
	TokenNotYetValid  = "not_yet_valid" // before its nbf
	TokenAudience     = "audience"      // its aud does not name the gateway
	TokenUnverifiable = "unverifiable"  // the issuer's keys cannot be fetched
	// TokenType: its JWT header's typ is not an access token's (RFC 9068
	// at+jwt), as an ID token's is not; see api.OAuth.TokenTypes.
	TokenType = "type"
	// TokenIssuedInFuture: its iat is later than now, beyond the leeway.
	TokenIssuedInFuture = "issued_in_future"
)

func (e Unauthenticated) Error() string {
	if e.Token != "" {
		return "access token refused: " + e.Token
	}
	return "missing or invalid API key"
}

// ScopeMissing refuses a call whose credentials lack Scope.
type ScopeMissing struct {
	Scope     string
	Operation string
}

func (e ScopeMissing) Error() string {
	return fmt.Sprintf("%s needs scope %q", e.Operation, e.Scope)
}

// The reasons of a RateLimited refusal.
const (
	RateCalls        = ""                    // the client's call rate
	RateKeysCap      = "idempotency_key_cap" // the client's count of idempotency keys
	RateAuthFailures = "auth_failures"       // the failed authentications of the source address
)

// RateLimited refuses a call over one of the client's limits until
// RetryAfter seconds have passed. Cap is the limit, for RateKeysCap.
type RateLimited struct {
	Reason     string
	RetryAfter int
	Cap        int
}

func (e RateLimited) Error() string {
	return fmt.Sprintf("rate limited (%s), retry after %d s", e.Reason, e.RetryAfter)
}

// KeyReused refuses an idempotency key sent before with other arguments.
type KeyReused struct{}

func (KeyReused) Error() string { return "idempotency key reused with other arguments" }

// The reasons of an InFlight refusal: what another call holds.
const (
	InFlightInvoice = "invoice_in_flight"
	InFlightKey     = "key_in_flight"
)

// InFlight refuses a write that waited in vain for another call to end:
// a write of the same invoice (InFlightInvoice; Operation is that call's),
// or a call with the same idempotency key (InFlightKey). The call did not
// run; the same call may be repeated after RetryAfter seconds.
type InFlight struct {
	Reason     string
	InvoiceID  string
	Operation  string
	RetryAfter int
}

func (e InFlight) Error() string {
	return fmt.Sprintf("%s: %s of invoice %q still running, retry after %d s", e.Reason, e.Operation, e.InvoiceID, e.RetryAfter)
}

// The stores a StoreUnavailable names.
const (
	StoreRunState = "run_state"
	StoreRecords  = "records"
)

// StoreUnavailable refuses a call because a store of the gateway cannot be
// reached. Engine names the records' database engine.
type StoreUnavailable struct {
	Which  string
	Engine string
	Err    error
}

func (e StoreUnavailable) Error() string {
	return fmt.Sprintf("%s store unavailable: %v", e.Which, e.Err)
}

func (e StoreUnavailable) Unwrap() error { return e.Err }

// The kinds of Limit.
const (
	LimitBudget          = "budget"
	LimitGRMissing       = "gr_missing"
	LimitCorrectedRetry  = "corrected_retry"
	LimitERPWait         = "erp_wait"
	LimitIdenticalRepeat = "identical_repeat"
	// LimitInvoiceCap: the invoice's own cap across runs, counted in its
	// case.
	LimitInvoiceCap = "invoice_cap"
)

// Limit refuses a call of a run that breaks one of the run's limits.
type Limit struct {
	Kind      string
	Operation string
	RunID     string
	InvoiceID string // "" for a call about no invoice
	// POItem is "po/item", for LimitGRMissing.
	POItem string
	// Budget is the run's budget per invoice, for LimitBudget.
	Budget int
	// RetryAfter is the seconds to wait, for LimitERPWait.
	RetryAfter int
	// PreviousCode is the outcome of the call repeated, for
	// LimitIdenticalRepeat; "" while it runs.
	PreviousCode string
	// CaseVersion is the invoice's case version the repeat saw unchanged,
	// for LimitIdenticalRepeat; 0 for a call about no case.
	CaseVersion int64
	// Calls and Runs are the invoice's counts, and CapCalls and CapRuns
	// its caps, for LimitInvoiceCap.
	Calls, Runs, CapCalls, CapRuns int
}

func (e Limit) Error() string {
	return fmt.Sprintf("run %s: %s refused by limit %s", e.RunID, e.Operation, e.Kind)
}

// NotFoundAgain is a not-found after the run's one corrected retry: the
// named error of the second failure, handed over instead of retried.
// Named is not unwrapped, so that it is not taken for the answer itself.
type NotFoundAgain struct {
	Named error
}

func (e NotFoundAgain) Error() string { return "not found again: " + e.Named.Error() }
