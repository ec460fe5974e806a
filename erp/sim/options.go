package sim

import (
	"fmt"
	"log/slog"
	"time"
)

// Envelope forms the simulator can use for OData error bodies.
const (
	// EnvelopeV2 is SAP's OData v2 error body with innererror.errordetails
	// as an array.
	EnvelopeV2 = "v2"
	// EnvelopeV2Detail is the v2 body with innererror.errordetails as an
	// object {"errordetail":[...]}, as some gateway releases send it.
	EnvelopeV2Detail = "v2detail"
	// EnvelopeV4 is the OData v4 error body: a plain message string and a
	// details array.
	EnvelopeV4 = "v4"
)

// DefaultClosedBefore is the first day of the earliest open posting period.
var DefaultClosedBefore = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Options configures a Server. The zero value is usable: every zero field
// takes the default documented beside it.
type Options struct {
	// ClosedBefore closes every posting period before it: releasing an
	// invoice whose posting date is earlier fails with F5/201. Zero means
	// DefaultClosedBefore (2026-01-01 UTC).
	ClosedBefore time.Time
	// Now is the clock for posting times, goods receipts, error envelopes
	// and Retry-After dates. Nil means time.Now.
	Now func() time.Time
	// Envelope is the error body form: EnvelopeV2 (the default when empty),
	// EnvelopeV2Detail or EnvelopeV4.
	Envelope string
	// Faults are fault rules in force from the start, in order; nil means
	// none. ParseFaults reads them from their text form.
	Faults []FaultRule
	// Seed seeds the generator that fault rules in probability mode draw
	// from; zero means 1. The rules in force share one generator, started
	// from Seed whenever a rule is added while none is in force (at New,
	// after ClearFaults, or once every rule is used up), so the same Seed,
	// rules and order of requests give the same faults.
	Seed uint64
	// Logger receives a line per request and per injected fault. Nil means
	// no logging.
	Logger *slog.Logger
	// PageSize is the server-side page size of collection reads: a longer
	// answer holds the first PageSize entries and a __next link to the rest
	// ($skiptoken), as SAP's gateway pages. Zero means DefaultPageSize; a
	// negative value turns paging off.
	PageSize int
	// RecordCalls keeps a log of the OData calls answered, read by Calls;
	// off, Calls returns none and a request costs nothing more.
	RecordCalls bool
	// NoCSRF serves writes without CSRF protection, as SAP CAP and an SAP
	// system with the check switched off do: a fetch (X-CSRF-Token:
	// Fetch) is answered without a token or a session, and a write needs
	// none. Off, every write needs the token of its session.
	NoCSRF bool
}

// DefaultPageSize is the page size of collection reads when Options leaves
// PageSize zero.
const DefaultPageSize = 50

// withDefaults fills in zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.ClosedBefore.IsZero() {
		o.ClosedBefore = DefaultClosedBefore
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Envelope == "" {
		o.Envelope = EnvelopeV2
	}
	if !validEnvelope(o.Envelope) {
		return o, fmt.Errorf("sim: unknown envelope form %q", o.Envelope)
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	for _, f := range o.Faults {
		if err := f.validate(); err != nil {
			return o, err
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	return o, nil
}

func validEnvelope(form string) bool {
	switch form {
	case EnvelopeV2, EnvelopeV2Detail, EnvelopeV4:
		return true
	}
	return false
}
