package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

type handOverer interface {
	HandOver(ctx context.Context, req erp.HandoverRequest, mayBeUnknown bool) (erp.Handover, error)
}

// handleHandOver routes an invoice to a person's queue. The gateway
// attaches the run's history itself (calls, the five fields of every error,
// the budget used), so a person gets the context even from an agent that
// sent no summary. The answer is a success once the handover is stored in
// the gateway's records; a configured webhook is told through the outbox.
func handleHandOver(h handOverer, g *runs.Guard, cases caseRecords, m *Metrics) operationFunc {
	return func(r *http.Request, body []byte) (any, error) {
		var req handoverRequest
		if err := decode(r, body, &req, false); err != nil {
			return nil, err
		}
		if err := checkID("invoice_id", req.InvoiceID, invoiceIDPattern, invoiceIDForm); err != nil {
			return nil, err
		}
		if req.Code != "" {
			if _, ok := errmap.Lookup(errmap.Code(req.Code)); !ok {
				return nil, errmap.Invalid("code", "must be one of the codes in the contract's Error schema")
			}
		}
		// Without a queue the handover goes where its code is routed, and
		// to the AP queue when the code routes nowhere.
		queue := req.Queue
		if queue == "" {
			e, _ := errmap.Lookup(errmap.Code(req.Code))
			queue = cmp.Or(e.Queue, errmap.QueueAP)
		}
		if !slices.Contains(errmap.Queues, queue) {
			return nil, checkOneOf("queue", queue, errmap.Queues)
		}
		if req.Summary != "" {
			if err := checkText("summary", req.Summary, 3, 2000); err != nil {
				return nil, err
			}
		}
		if len(req.Evidence) > 20 {
			return nil, errmap.Invalid("evidence", "holds more than 20 items")
		}
		for _, ev := range req.Evidence {
			if err := checkText("evidence", ev, 1, 1000); err != nil {
				return nil, err
			}
		}

		var history *handoverHistory
		if run := cmp.Or(RunIDFromContext(r.Context()), req.RunID); run != "" {
			st, err := g.Get(r.Context(), run)
			if err != nil {
				return nil, err
			}
			if st != nil {
				history = &handoverHistory{runResponse: toRun(st, g.Limits().Budget)}
				// The person sees the invoice's whole history across runs,
				// which is what a handover at the invoice's cap is for.
				if history.Case, err = caseHistory(r.Context(), cases, req.InvoiceID); err != nil {
					return nil, err
				}
			}
		}
		summary := req.Summary
		if summary == "" {
			var run *runResponse
			if history != nil {
				run = &history.runResponse
			}
			summary = composeSummary(req.InvoiceID, req.Code, run)
		}
		historyJSON := ""
		if history != nil {
			b, err := json.Marshal(history)
			if err != nil {
				return nil, err
			}
			historyJSON = string(b)
		}
		ho, err := h.HandOver(r.Context(), erp.HandoverRequest{InvoiceID: req.InvoiceID, Queue: queue, Code: req.Code,
			Summary: summary, Evidence: req.Evidence, History: historyJSON, Client: recordFrom(r.Context()).client,
			Dedupe: dedupeOf(r, opHandOver)}, req.Code == string(errmap.InvoiceNotFound))
		if err != nil {
			return nil, err
		}
		m.handover.WithLabelValues(ho.Queue).Inc()
		return handoverResponse{HandoverID: ho.ID, InvoiceID: ho.InvoiceID, Queue: ho.Queue,
			Status: ho.Status, Summary: ho.Summary, CreatedAt: dateTime(ho.CreatedAt)}, nil
	}
}

// handoverHistory is what a handover keeps of how the invoice came to a
// person: the run's history, and the invoice's case across runs.
type handoverHistory struct {
	runResponse
	Case *caseSnapshot `json:"case,omitempty"`
}

// caseSnapshot is the case as a handover keeps it.
type caseSnapshot struct {
	State   string            `json:"state"`
	Version int64             `json:"version"`
	Calls   int               `json:"calls"`
	Runs    int               `json:"runs"`
	Events  []caseEventRecord `json:"events"`
}

// caseRecords reads cases; records.Store provides it.
type caseRecords interface {
	Case(ctx context.Context, invoiceID string) (records.Case, error)
	CaseEvents(ctx context.Context, invoiceID string, limit int) ([]records.CaseEvent, error)
}

// handoverCaseEvents is how many of its case's events a handover keeps.
const handoverCaseEvents = 200

// caseHistory is the invoice's case for a handover, nil when it has none.
func caseHistory(ctx context.Context, cases caseRecords, invoiceID string) (*caseSnapshot, error) {
	c, err := cases.Case(ctx, invoiceID)
	if errors.Is(err, records.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	evs, err := cases.CaseEvents(ctx, invoiceID, handoverCaseEvents)
	if err != nil {
		return nil, err
	}
	out := &caseSnapshot{State: c.State, Version: c.Version, Calls: c.Calls, Runs: c.Runs, Events: []caseEventRecord{}}
	for _, ev := range evs {
		out.Events = append(out.Events, caseEventRecord{Version: ev.Version, At: dateTime(ev.At), Kind: ev.Kind,
			Ref: ev.Ref, Note: ev.Note, RunID: ev.RunID})
	}
	return out, nil
}

// composeSummary writes the summary of a handover the agent sent without
// one, from the errors its run met.
func composeSummary(invoiceID, code string, run *runResponse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Invoice %s handed over without a summary", invoiceID)
	if code != "" {
		fmt.Fprintf(&b, " (code %s)", code)
	}
	if run == nil || len(run.Errors) == 0 {
		b.WriteString(". The agent's run recorded no errors.")
		return b.String()
	}
	b.WriteString(". Errors the run met:")
	for _, e := range run.Errors {
		line := fmt.Sprintf(" %s on %s: %s", e.Code, e.Operation, e.Message)
		if b.Len()+len(line) > 1900 {
			b.WriteString(" …")
			break
		}
		b.WriteString(line)
	}
	return b.String()
}
