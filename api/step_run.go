package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/errmap"
)

// guardRun applies the run's loop limits (api/runs): it finds the call's
// run, admits the call into it or refuses it with the limit's code, and on
// the way back records the call's outcome in the run's history and renders
// the operation's error. Without a
// run the call is refused only when the limits are strict; the operations
// of people and get_run are part of no run.
func (s *Server) guardRun(o operation, next callHandler) callHandler {
	return func(c *operationCall) *response {
		r := c.r
		run, err := runIDOf(r, c.args)
		if err != nil {
			return s.failure(r, err, c.record)
		}
		if run != "" && c.digest == "" {
			c.digest = c.args.digest(o.name, r)
		}
		c.run, c.record.run = run, run
		c.runCall = runs.Call{Operation: o.name, InvoiceID: c.args.invoiceID(r), Digest: c.digest, BudgetFree: o.budgetFree}
		if o.name == opGetGoodsReceipt.name {
			c.runCall.POItem = chi.URLParam(r, "po_id") + "/" + strings.TrimLeft(chi.URLParam(r, "item"), "0")
		}
		var seq int
		switch {
		case o.noRun:
		case run == "" && s.runs.Limits().Strict && !s.runs.Limits().Disabled:
			s.metrics.LimitTriggered("no_run_id")
			return s.failure(r, errmap.Invalid("run_id", "is required: send the X-Run-Id header or a run_id argument"), c.record)
		case run != "":
			var refused *errmap.Error
			seq, refused, err = s.runs.Admit(r.Context(), run, c.runCall)
			if err == nil && refused != nil {
				err = refused
			}
			if err != nil {
				return s.failure(r, err, c.record)
			}
		}

		// The operation's error comes back unrendered: Finish may rename
		// it (a corrected retry that fails again is handed over), and the
		// answer is what it named.
		resp := next(c)
		var code string
		if c.failed == nil {
			code = resp.code
		}
		if err := s.runs.Finish(r.Context(), run, seq, c.runCall, code, c.failed); err != nil {
			s.log.WarnContext(r.Context(), "run state not recorded", "run_id", run, "error", err)
		}
		if c.failed != nil {
			resp = render(c.failed)
		}
		return resp
	}
}

// runIDOf returns the call's run id: the X-Run-Id header, or the run_id
// argument (query or body) for platforms that cannot set headers.
func runIDOf(r *http.Request, a args) (string, error) {
	if id := RunIDFromContext(r.Context()); id != "" {
		return id, nil
	}
	id := a.str("run_id")
	if id == "" && r.URL.RawQuery != "" {
		id = r.URL.Query().Get("run_id")
	}
	if id != "" && !headerIDPattern.MatchString(id) {
		return "", errmap.Invalid("run_id", "must be 1 to 128 letters, digits, '.', '_', ':' or '-'")
	}
	return id, nil
}
