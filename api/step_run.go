package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// guardRun applies the run's loop limits (api/runs): it finds the call's
// run, counts the call in its invoice's case and reads the case's version
// (records.Store.TouchCase), admits the call into the run or refuses it
// with the limit's code, and on the way back records the call's outcome in
// the run's history and renders the operation's error. Without a run the
// call is refused only when the limits are strict; the operations of
// people and get_run are part of no run.
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
		c.runCall = runs.Call{Operation: o.name, InvoiceID: c.args.invoiceID(r), Digest: c.digest, BudgetFree: o.budgetFree,
			Create: o.create}
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
			c.runCall.Case = s.touchCase(r, o, c, run)
			// A call about an approval or a hold counts against the budget
			// of its invoice.
			if c.runCall.InvoiceID == "" && c.runCall.POItem == "" {
				c.runCall.InvoiceID = c.runCall.Case.InvoiceID
			}
			c.r = r.WithContext(erp.WithRunID(r.Context(), run))
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

// touchCase counts the call in the case of the invoice it is about and
// returns the case as the guard sees it: by the invoice id in its path or
// body, by its approval or hold, or, for a goods receipt, by the newest hold
// that waited for the item. A call about no case, with limits off, or whose
// id is of the wrong form (the operation refuses it) touches nothing. A
// records store that fails leaves the case's version unknown: no repeat is
// then taken for a loop for want of it (the budget still counts), and the
// failure is logged.
func (s *Server) touchCase(r *http.Request, o operation, c *operationCall, run string) runs.Case {
	if s.runs.Limits().Disabled {
		return runs.Case{}
	}
	var ref records.CaseRef
	switch id := c.runCall.InvoiceID; {
	case id != "":
		if !invoiceIDPattern.MatchString(id) {
			return runs.Case{}
		}
		ref.InvoiceID = id
	case o.name == opGetApproval.name:
		ref.ApprovalID = chi.URLParam(r, "approval_id")
		if !approvalIDPattern.MatchString(ref.ApprovalID) {
			return runs.Case{}
		}
	case o.name == opGetHold.name:
		ref.HoldID = chi.URLParam(r, "hold_id")
		if !holdIDPattern.MatchString(ref.HoldID) {
			return runs.Case{}
		}
	case o.name == opGetGoodsReceipt.name:
		po, item := chi.URLParam(r, "po_id"), chi.URLParam(r, "item")
		if !poIDPattern.MatchString(po) || !itemPattern.MatchString(item) {
			return runs.Case{}
		}
		ref.POItem = records.POItemRef{POID: po, Item: strings.TrimLeft(item, "0")}
	default:
		return runs.Case{}
	}
	cs, err := s.records.TouchCase(r.Context(), ref, run)
	if err != nil {
		s.log.WarnContext(r.Context(), "case not counted", "run_id", run, "error", err)
		return runs.Case{Version: runs.UnknownVersion}
	}
	return runs.Case{InvoiceID: cs.InvoiceID, Version: cs.Version, Calls: cs.Calls, Runs: cs.Runs}
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
