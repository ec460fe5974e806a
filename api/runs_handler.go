package api

import (
	"net/http"
	"sort"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/errmap"
)

func handleGetRun(g *runs.Guard) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id := chi.URLParam(r, "run_id")
		if !headerIDPattern.MatchString(id) {
			return nil, errmap.Invalid("run_id", "must be 1 to 128 letters, digits, '.', '_', ':' or '-'")
		}
		st, err := g.Get(r.Context(), id)
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, errmap.Protocol(http.StatusNotFound,
				"No run with this id is known: it made no call yet or has expired.", map[string]any{"run_id": id})
		}
		return toRun(st, g.Limits().Budget), nil
	}
}

func toRun(st *runs.State, budget int) runResponse {
	out := runResponse{RunID: st.ID, StartedAt: dateTime(st.Started), UpdatedAt: dateTime(st.Updated),
		BudgetPerInvoice: budget, Invoices: []runInvoice{}, Calls: []runCall{}, Errors: []runError{}}
	for inv, n := range st.Used {
		if inv == "" {
			continue
		}
		out.Invoices = append(out.Invoices, runInvoice{InvoiceID: inv, Calls: n, Remaining: max(budget-n, 0)})
	}
	sort.Slice(out.Invoices, func(i, j int) bool { return out.Invoices[i].InvoiceID < out.Invoices[j].InvoiceID })
	for _, c := range st.Calls {
		out.Calls = append(out.Calls, runCall{Seq: c.Seq, At: dateTime(c.At), Operation: c.Operation,
			InvoiceID: c.InvoiceID, Code: c.Code, Refused: c.Refused})
		if c.Error != nil {
			out.Errors = append(out.Errors, runError{Seq: c.Seq, Operation: c.Operation, Code: string(c.Error.Code),
				Message: c.Error.Message, Retryable: c.Error.Retryable, NextAction: string(c.Error.NextAction),
				Details: c.Error.Details})
		}
	}
	return out
}
