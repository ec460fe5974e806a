package api

import (
	"fmt"
	"sync"
	"time"

	"github.com/erpgate/erpgate/errmap"
)

// RunLimits configures the limits the gateway enforces on each agent run
// (the calls that carry one X-Run-Id). The zero value enables them with the
// defaults beside each field.
type RunLimits struct {
	// Disabled turns the limits off.
	Disabled bool
	// Budget is the number of tool calls a run may make about one invoice.
	// Default 20. hand_over does not count, so a spent budget can still be
	// handed over.
	Budget int
	// TTL is how long a run is remembered after its last call. Default 24h.
	TTL time.Duration
}

// DefaultRunBudget is the per-invoice tool-call budget when RunLimits
// leaves it zero.
const DefaultRunBudget = 20

// runGuard enforces RunLimits in memory.
type runGuard struct {
	limits RunLimits
	now    func() time.Time
	mu     sync.Mutex
	runs   map[string]*runState
	swept  time.Time
}

type runState struct {
	outcomes map[string]string // argument digest → outcome code ("" while running)
	calls    map[string]int    // invoice id → tool calls
	last     time.Time
}

func newRunGuard(l RunLimits, now func() time.Time) *runGuard {
	if l.Budget <= 0 {
		l.Budget = DefaultRunBudget
	}
	if l.TTL <= 0 {
		l.TTL = 24 * time.Hour
	}
	return &runGuard{limits: l, now: now, runs: map[string]*runState{}}
}

// admit checks a call against the run's limits before the ERP is called.
// A call past the invoice's budget is BUDGET_EXHAUSTED; every other call
// counts against the budget, a refused one too. An identical repeat is
// LOOP_DETECTED, unless the earlier call found the ERP unavailable.
func (g *runGuard) admit(runID string, o operation, digest, invoiceID string) error {
	if g.limits.Disabled {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.sweep(now)
	st, ok := g.runs[runID]
	if !ok {
		st = &runState{outcomes: map[string]string{}, calls: map[string]int{}}
		g.runs[runID] = st
	}
	st.last = now
	if !o.budgetFree {
		if st.calls[invoiceID] >= g.limits.Budget {
			d := map[string]any{"run_id": runID, "budget": g.limits.Budget}
			what := "calls about no invoice"
			if invoiceID != "" {
				d["invoice_id"] = invoiceID
				what = "invoice " + invoiceID
			}
			return errmap.New(errmap.BudgetExhausted,
				fmt.Sprintf("This run has used its budget of %d tool calls for %s. Stop and hand over with a summary of what you found.", g.limits.Budget, what), d)
		}
		st.calls[invoiceID]++
	}
	if prev, seen := st.outcomes[digest]; seen && prev != string(errmap.ERPUnavailable) {
		d := map[string]any{"run_id": runID, "operation": o.name}
		if prev != "" {
			d["previous_code"] = prev
		}
		if invoiceID != "" {
			d["invoice_id"] = invoiceID
		}
		return errmap.New(errmap.LoopDetected,
			fmt.Sprintf("%s was already called with the same arguments in this run; repeating it will not change the answer. Hand the invoice over to a person.", o.name), d)
	}
	st.outcomes[digest] = ""
	return nil
}

// record notes the outcome of an admitted call.
func (g *runGuard) record(runID, digest, code string) {
	if g.limits.Disabled {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if st, ok := g.runs[runID]; ok {
		st.outcomes[digest] = code
	}
}

// sweep forgets runs idle for longer than the TTL, at most once a minute;
// g.mu is held.
func (g *runGuard) sweep(now time.Time) {
	if now.Sub(g.swept) < time.Minute {
		return
	}
	g.swept = now
	for id, st := range g.runs {
		if now.Sub(st.last) > g.limits.TTL {
			delete(g.runs, id)
		}
	}
}
