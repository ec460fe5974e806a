// Package runs keeps the history of agent runs and enforces the limits that
// stop an agent looping, outside the model: no identical repeat with
// nothing changed in between, one corrected retry after a not-found, no
// goods-receipt lookup again after GR_MISSING until something changed, a
// tool-call budget per invoice, and a cap per invoice across runs. The state
// lives in a Store: in memory for one replica, in Redis for several behind a
// load balancer.
//
// What "changed" means is the invoice's case (erp/records): its version
// moves whenever something an answer depends on moves (an approval decided,
// a hold released, a goods receipt seen, …). Each call records the version
// it came in at; a repeat of it is a loop only at the same version. A
// create (an approval request, a hold, a handover) repeated with the same
// arguments is the same create, answered with the record it made, never a
// loop. So no next_action the gateway gives is refused when the agent
// follows it: once, and for a wait, after the thing waited for arrived.
package runs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/errmap"
)

// Limits configures the Guard. The zero value enables every limit with the
// defaults beside each field.
type Limits struct {
	// Disabled turns the limits off; the history is still kept.
	Disabled bool
	// Budget is the number of tool calls a run may make about one invoice.
	// Default 20. hand_over and get_run do not count, so a spent budget can
	// still be handed over.
	Budget int
	// TTL is how long a run is kept after its last call. Default 24h.
	TTL time.Duration
	// Strict refuses tool calls that carry no run id.
	Strict bool
	// FailOpen lets calls through without limits when the store cannot be
	// reached. By default such calls are refused: a limit that silently
	// disappears is no limit.
	FailOpen bool
	// InvoiceCalls caps the calls about one invoice across all runs, and
	// InvoiceRuns the runs that work on it, both counted in its case.
	// Default 200 and 10. hand_over does not count.
	InvoiceCalls, InvoiceRuns int
}

// DefaultBudget is the per-invoice tool-call budget when Limits leaves it
// zero.
const DefaultBudget = 20

// The per-invoice caps across runs when Limits leaves them zero.
const (
	DefaultInvoiceCalls = 200
	DefaultInvoiceRuns  = 10
)

func (l Limits) withDefaults() Limits {
	if l.Budget <= 0 {
		l.Budget = DefaultBudget
	}
	if l.InvoiceCalls <= 0 {
		l.InvoiceCalls = DefaultInvoiceCalls
	}
	if l.InvoiceRuns <= 0 {
		l.InvoiceRuns = DefaultInvoiceRuns
	}
	if l.TTL <= 0 {
		l.TTL = 24 * time.Hour
	}
	return l
}

// Call is one tool call as the guard sees it.
type Call struct {
	Operation string
	InvoiceID string // the invoice the call is about; "" for none
	Digest    string // identifies the operation's arguments
	// BudgetFree calls do not count against the budget.
	BudgetFree bool
	// POItem is "po/item" for get_goods_receipt, else "".
	POItem string
	// Create marks an operation that makes a record the same arguments in
	// the same run find again: its repeat is the same create, never a loop.
	Create bool
	// Case is the invoice's case as the call came in; zero for a call
	// about no case.
	Case Case
}

// UnknownVersion is the Case.Version of a call whose case could not be
// read: the call is never a repeat of another, nor another of it.
const UnknownVersion = -1

// Case is what the guard knows of the invoice's case a call is about.
type Case struct {
	InvoiceID string `json:"invoice_id"`
	Version   int64  `json:"version"`
	// Calls and Runs count the calls about the invoice, this one
	// included, and the runs that made them, across all runs.
	Calls int `json:"-"`
	Runs  int `json:"-"`
}

// Record is one call in a run's history.
type Record struct {
	Seq       int       `json:"seq"`
	At        time.Time `json:"at"`
	Operation string    `json:"operation"`
	InvoiceID string    `json:"invoice_id,omitempty"`
	Digest    string    `json:"digest"`
	// CaseVersion is the invoice's case version when the call came in.
	CaseVersion int64        `json:"case_version,omitempty"`
	Code        string       `json:"code"` // the outcome; "" while the call runs
	Refused     bool         `json:"refused,omitempty"`
	Error       *errmap.Body `json:"error,omitempty"`
}

// State is everything kept about one run.
type State struct {
	ID      string         `json:"run_id"`
	Started time.Time      `json:"started"`
	Updated time.Time      `json:"updated"`
	Calls   []Record       `json:"calls"`
	Used    map[string]int `json:"used"` // invoice id → tool calls
	// NotFound counts, per operation, the not-found failures since its last
	// success: 1 allows one corrected retry, 2 means it was used.
	NotFound map[string]int `json:"not_found"`
	// GRMissing holds the "po/item" keys found without a goods receipt,
	// and GRMissingAt the case each was found in, at its version.
	GRMissing   map[string]bool `json:"gr_missing"`
	GRMissingAt map[string]Case `json:"gr_missing_at,omitempty"`
	// WaitUntil holds, per argument digest, when a call that found the ERP
	// unavailable may be repeated.
	WaitUntil map[string]time.Time `json:"wait_until"`
}

func newState(id string, now time.Time) *State {
	return &State{ID: id, Started: now, Updated: now, Used: map[string]int{}, NotFound: map[string]int{},
		GRMissing: map[string]bool{}, GRMissingAt: map[string]Case{}, WaitUntil: map[string]time.Time{}}
}

// fill makes the maps of a decoded state usable.
func (s *State) fill() {
	if s.Used == nil {
		s.Used = map[string]int{}
	}
	if s.NotFound == nil {
		s.NotFound = map[string]int{}
	}
	if s.GRMissing == nil {
		s.GRMissing = map[string]bool{}
	}
	if s.GRMissingAt == nil {
		s.GRMissingAt = map[string]Case{}
	}
	if s.WaitUntil == nil {
		s.WaitUntil = map[string]time.Time{}
	}
}

// Store holds run states. Update must apply fn atomically with respect to
// every other Update of the same run, across all replicas sharing the store.
type Store interface {
	// Update loads the run (a new State when unknown), calls fn, and saves
	// the result to expire ttl later. An error from fn is returned and
	// nothing is saved.
	Update(ctx context.Context, runID string, ttl time.Duration, fn func(*State) error) error
	// Get returns the run, or nil when it is unknown.
	Get(ctx context.Context, runID string) (*State, error)
}

// ErrStore wraps a failure of the store itself.
var ErrStore = errors.New("run state store unavailable")

// Observer is told of every limit that refuses a call; metrics implement
// it. kind is identical_repeat, corrected_retry, gr_missing, budget,
// erp_wait, invoice_cap or no_run_id.
type Observer interface{ LimitTriggered(kind string) }

// Guard enforces Limits on the runs in a Store.
type Guard struct {
	store  Store
	limits Limits
	now    func() time.Time
	obs    Observer
}

// NewGuard returns a guard over store; now and obs may be nil.
func NewGuard(store Store, l Limits, now func() time.Time, obs Observer) *Guard {
	if now == nil {
		now = time.Now
	}
	return &Guard{store: store, limits: l.withDefaults(), now: now, obs: obs}
}

// Limits returns the guard's effective limits.
func (g *Guard) Limits() Limits { return g.limits }

// Admit checks a call against the run's limits before the ERP is called
// and records it. It returns the call's sequence number for Finish, or a
// refusal in the five-field shape (also recorded). A store failure is an
// error wrapping ErrStore, unless the guard fails open.
func (g *Guard) Admit(ctx context.Context, runID string, c Call) (int, *errmap.Error, error) {
	var seq int
	var refused *errmap.Error
	err := g.store.Update(ctx, runID, g.limits.TTL, func(st *State) error {
		now := g.now()
		st.Updated = now
		limit := g.check(st, c, now)
		if !c.BudgetFree && (limit == nil || limit.Kind != refusal.LimitBudget) {
			st.Used[c.InvoiceID]++
		}
		refused = nil
		if limit != nil {
			refused = errmap.Map(*limit)
		}
		seq = len(st.Calls) + 1
		rec := Record{Seq: seq, At: now, Operation: c.Operation, InvoiceID: c.InvoiceID, Digest: c.Digest,
			CaseVersion: c.Case.Version}
		if refused != nil {
			b := refused.Body()
			rec.Code, rec.Refused, rec.Error = string(refused.Code), true, &b
		}
		st.Calls = append(st.Calls, rec)
		return nil
	})
	if err != nil {
		if g.limits.FailOpen {
			return 0, nil, nil
		}
		return 0, nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	if refused != nil && g.obs != nil {
		g.obs.LimitTriggered(fmt.Sprint(refused.Details["limit"]))
	}
	return seq, refused, nil
}

// check returns the first limit the call breaks, or nil.
func (g *Guard) check(st *State, c Call, now time.Time) *refusal.Limit {
	if g.limits.Disabled {
		return nil
	}
	l := func(kind string) *refusal.Limit {
		return &refusal.Limit{Kind: kind, Operation: c.Operation, RunID: st.ID, InvoiceID: c.InvoiceID}
	}
	if !c.BudgetFree && st.Used[c.InvoiceID] >= g.limits.Budget {
		r := l(refusal.LimitBudget)
		r.Budget = g.limits.Budget
		return r
	}
	if cs := c.Case; !c.BudgetFree && cs.InvoiceID != "" &&
		(cs.Calls > g.limits.InvoiceCalls || cs.Runs > g.limits.InvoiceRuns) {
		r := l(refusal.LimitInvoiceCap)
		r.InvoiceID = cs.InvoiceID
		r.Calls, r.Runs, r.CapCalls, r.CapRuns = cs.Calls, cs.Runs, g.limits.InvoiceCalls, g.limits.InvoiceRuns
		return r
	}
	// A goods receipt looked for again is a loop unless the case it was
	// missing in has moved on: a hold placed, a receipt seen.
	if at := st.GRMissingAt[c.POItem]; c.POItem != "" && st.GRMissing[c.POItem] && c.Case.Version != UnknownVersion &&
		(at.InvoiceID != c.Case.InvoiceID || at.Version == c.Case.Version) {
		r := l(refusal.LimitGRMissing)
		r.POItem = c.POItem
		return r
	}
	if st.NotFound[c.Operation] >= 2 {
		return l(refusal.LimitCorrectedRetry)
	}
	for _, r := range st.Calls {
		if r.Digest != c.Digest || r.Refused {
			continue
		}
		// A write whose outcome is unknown is settled by its repeat, which
		// reads the invoice before it writes anything.
		if r.Code == string(errmap.ERPOutcomeUnknown) {
			continue
		}
		if r.Code == string(errmap.ERPUnavailable) {
			if until := st.WaitUntil[c.Digest]; now.Before(until) {
				w := l(refusal.LimitERPWait)
				w.RetryAfter = int(math.Ceil(until.Sub(now).Seconds()))
				return w
			}
			continue
		}
		// The same create is answered with the record it made; a call
		// whose case has moved on since may have another answer.
		if c.Create || r.CaseVersion != c.Case.Version || c.Case.Version == UnknownVersion {
			continue
		}
		rep := l(refusal.LimitIdenticalRepeat)
		rep.PreviousCode, rep.CaseVersion = r.Code, c.Case.Version
		return rep
	}
	return nil
}

// notFoundCodes are the outcomes that allow one corrected retry.
var notFoundCodes = map[errmap.Code]bool{
	errmap.InvoiceNotFound: true, errmap.PONotFound: true, errmap.SupplierNotFound: true,
}

// Finish records the outcome of an admitted call: code for a success
// ("OK" or an informational code), e for an error. When the call was the
// corrected retry after a not-found and failed again, e is replaced by
// errmap's naming of the handover (refusal.NotFoundAgain) before it is
// recorded; the caller writes e after Finish.
func (g *Guard) Finish(ctx context.Context, runID string, seq int, c Call, code string, e *errmap.Error) error {
	if seq == 0 {
		return nil
	}
	err := g.store.Update(ctx, runID, g.limits.TTL, func(st *State) error {
		now := g.now()
		st.Updated = now
		switch {
		case e != nil && notFoundCodes[e.Code]:
			st.NotFound[c.Operation]++
			if st.NotFound[c.Operation] >= 2 && !g.limits.Disabled {
				*e = *errmap.Map(refusal.NotFoundAgain{Named: e})
				if g.obs != nil {
					g.obs.LimitTriggered("corrected_retry")
				}
			}
		case e == nil:
			delete(st.NotFound, c.Operation)
		}
		if e != nil && e.Code == errmap.GRMissing {
			if po, item := fmt.Sprint(e.Details["po_id"]), fmt.Sprint(e.Details["item"]); e.Details["po_id"] != nil && e.Details["item"] != nil {
				st.GRMissing[po+"/"+item] = true
				st.GRMissingAt[po+"/"+item] = Case{InvoiceID: c.Case.InvoiceID, Version: c.Case.Version}
			}
		}
		if e != nil && e.Code == errmap.ERPUnavailable {
			if s, ok := e.Details["retry_after_s"].(int); ok {
				st.WaitUntil[c.Digest] = now.Add(time.Duration(s) * time.Second)
			}
		}
		if seq-1 < len(st.Calls) {
			rec := &st.Calls[seq-1]
			rec.Code = code
			if e != nil {
				b := e.Body()
				rec.Code, rec.Error = string(e.Code), &b
			}
		}
		return nil
	})
	if err != nil && !g.limits.FailOpen {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	return nil
}

// Get returns a run's state, or nil when it is unknown.
func (g *Guard) Get(ctx context.Context, runID string) (*State, error) {
	st, err := g.store.Get(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return st, nil
}
