package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// caseEventLimit is the most events the case page shows, oldest first.
const caseEventLimit = 1000

// caseStateWords says what each case state means to a person.
var caseStateWords = map[string]string{
	records.CaseOpen:             "Open: nothing in the gateway's records stands in its way.",
	records.CaseAwaitingApproval: "Awaiting approval: its approval waits for a person's decision.",
	records.CaseOnHold:           "On hold: it waits for what its hold names before the agent goes on.",
	records.CaseReady:            "Ready to post: its approval is approved.",
	records.CasePosted:           "Posted: the invoice is posted in the ERP.",
	records.CaseHandedOver:       "Handed over: a person has it, with the handover below.",
	records.CaseResolved:         "Resolved: a person resolved its handover.",
}

// caseEventWords names each kind of case event for a person.
var caseEventWords = map[string]string{
	"approval.requested":  "Approval requested",
	"approval.decided":    "Approval decided",
	"approval.superseded": "Approval superseded",
	"hold.placed":         "Hold placed",
	"hold.merged":         "Hold changed",
	"hold.released":       "Hold released",
	"hold.closed":         "Hold closed",
	"hold.receipt_seen":   "Goods receipt seen",
	"handover.created":    "Handed over",
	"handover.taken":      "Handover taken",
	"handover.resolved":   "Handover resolved",
	"invoice.posted":      "Invoice posted",
}

type caseData struct {
	InvoiceID string
	// Case is nil when the invoice has none yet.
	Case  *records.Case
	Words string
	// Hold is the held hold, when the case has one and it could be read.
	Hold     *records.Hold
	HoldHref string
	// ApprovalHref and HandoverHref lead to where the case's approval and
	// handover are worked.
	ApprovalHref, HandoverHref string
	Events                     []caseEventRow
	// Truncated says the history has more events than the page shows.
	Truncated bool
}

type caseEventRow struct {
	records.CaseEvent
	What string
	// Href leads to the event's record; empty when it names none.
	Href string
}

// caseView shows an invoice's case: its state in words, its version, the
// hold, approval and handover it holds open with links to where they are
// worked, the agent's calls and runs about it, and its history of events,
// each with the run that made it. An invoice without a case yet is no
// error: the page says so.
func (c *Console) caseView(w http.ResponseWriter, r *http.Request, p person) {
	id := r.PathValue("invoice_id")
	if !invoiceForm.MatchString(id) {
		c.failAs(w, r, p, problemOf(errmap.InvalidPage(http.StatusNotFound, "invoice_id", "must be an invoice id of 10 digits, such as 5105600102")))
		return
	}
	d := caseData{InvoiceID: id}
	cs, err := c.records.Case(r.Context(), id)
	switch {
	case errors.Is(err, records.ErrNotFound):
		c.render(w, r, http.StatusOK, "case", page{Title: "Case of invoice " + id, Person: &p, Data: d})
		return
	case err != nil:
		c.internal(w, r, p, err)
		return
	}
	d.Case = &cs
	d.Words = caseStateWords[cs.State]
	if cs.HoldID != "" {
		d.HoldHref = holdHref(id, cs.HoldID, true)
		h, err := c.records.Hold(r.Context(), cs.HoldID)
		switch {
		case err == nil:
			d.Hold = &h
		case !errors.Is(err, records.ErrNotFound):
			c.internal(w, r, p, err)
			return
		}
	}
	if cs.ApprovalID != "" {
		d.ApprovalHref = approvalHref(cs.ApprovalID)
	}
	if cs.HandoverID != "" {
		d.HandoverHref = "/console/handovers/" + cs.HandoverID
	}
	evs, err := c.records.CaseEvents(r.Context(), id, caseEventLimit)
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	d.Truncated = len(evs) == caseEventLimit
	d.Events = make([]caseEventRow, len(evs))
	for i, ev := range evs {
		d.Events[i] = caseEventRow{CaseEvent: ev, What: eventWords(ev.Kind), Href: recordHref(cs, ev.Ref)}
	}
	c.render(w, r, http.StatusOK, "case", page{Title: "Case of invoice " + id, Person: &p, Data: d})
}

// eventWords names an event's kind, or gives the kind as it is when it is
// one the console does not know.
func eventWords(kind string) string {
	if w, ok := caseEventWords[kind]; ok {
		return w
	}
	return strings.ReplaceAll(kind, "_", " ")
}

// recordHref leads to the record ref, an approval, hold or handover of the
// case's invoice, where it is worked; empty for a ref of no known form.
// Of an invoice's holds only the case's is held.
func recordHref(cs records.Case, ref string) string {
	switch {
	case approvalForm.MatchString(ref):
		return approvalHref(ref)
	case holdForm.MatchString(ref):
		return holdHref(cs.InvoiceID, ref, ref == cs.HoldID)
	case handoverForm.MatchString(ref):
		return "/console/handovers/" + ref
	}
	return ""
}
