package sim

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/shopspring/decimal"
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

// Default option values.
var (
	// DefaultAutoApproveLimit is the amount up to which approvals are
	// granted at once.
	DefaultAutoApproveLimit = decimal.NewFromInt(10000)
	// DefaultClosedBefore is the first day of the earliest open posting
	// period.
	DefaultClosedBefore = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	// DefaultBands are the approval bands above the auto-approve limit.
	DefaultBands = []Band{
		{Limit: decimal.NewFromInt(50000), Approver: "ap_manager"},
		{Limit: decimal.NewFromInt(200000), Approver: "finance_director"},
	}
)

// Band routes approval requests up to Limit (inclusive) to the Approver role.
type Band struct {
	Limit    decimal.Decimal
	Approver string
}

// Options configures a Server. The zero value is usable: every zero field
// takes the default documented beside it.
type Options struct {
	// AutoApproveLimit is the amount up to which approval requests are
	// approved at once by "auto". Zero means DefaultAutoApproveLimit (10000);
	// a negative limit approves nothing automatically.
	AutoApproveLimit decimal.Decimal
	// ClosedBefore closes every posting period before it: releasing an
	// invoice whose posting date is earlier fails with F5/201. Zero means
	// DefaultClosedBefore (2026-01-01 UTC).
	ClosedBefore time.Time
	// Now is the clock for posting, request and decision times. Nil means
	// time.Now.
	Now func() time.Time
	// Envelope is the error body form: EnvelopeV2 (the default when empty),
	// EnvelopeV2Detail or EnvelopeV4.
	Envelope string
	// Bands route approvals above the auto-approve limit, checked in
	// ascending order of Limit; an amount above every band has no approver.
	// Nil means DefaultBands (<= 50000 ap_manager, <= 200000
	// finance_director).
	Bands []Band
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
}

// withDefaults fills in zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.AutoApproveLimit.IsZero() {
		o.AutoApproveLimit = DefaultAutoApproveLimit
	}
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
	if o.Bands == nil {
		o.Bands = DefaultBands
	}
	bands := append([]Band(nil), o.Bands...)
	sort.SliceStable(bands, func(i, j int) bool { return bands[i].Limit.LessThan(bands[j].Limit) })
	o.Bands = bands
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
	return o, nil
}

func validEnvelope(form string) bool {
	switch form {
	case EnvelopeV2, EnvelopeV2Detail, EnvelopeV4:
		return true
	}
	return false
}
