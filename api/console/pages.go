package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// run is the run history the API keeps (GET /runs/{run_id}), as a handover
// carries it.
type run struct {
	RunID            string `json:"run_id"`
	StartedAt        string `json:"started_at"`
	UpdatedAt        string `json:"updated_at"`
	BudgetPerInvoice int    `json:"budget_per_invoice"`
	Invoices         []struct {
		InvoiceID string `json:"invoice_id"`
		Calls     int    `json:"calls"`
		Remaining int    `json:"remaining"`
	} `json:"invoices"`
	Calls []struct {
		Seq       int    `json:"seq"`
		At        string `json:"at"`
		Operation string `json:"operation"`
		InvoiceID string `json:"invoice_id"`
		Code      string `json:"code"`
		Refused   bool   `json:"refused"`
	} `json:"calls"`
	Errors []struct {
		Seq        int            `json:"seq"`
		Operation  string         `json:"operation"`
		Code       string         `json:"code"`
		Message    string         `json:"message"`
		Retryable  bool           `json:"retryable"`
		NextAction string         `json:"next_action"`
		Details    map[string]any `json:"details"`
	} `json:"errors"`
}

func decodeRun(b []byte) (*run, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var r run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// listPage reads a list's cursor (after) against the id form of its
// records.
func (c *Console) listPage(r *http.Request, idForm *regexp.Regexp) (records.Page, *problem) {
	p := records.Page{Limit: c.pageSize, After: r.URL.Query().Get("after")}
	if p.After != "" && !idForm.MatchString(p.After) {
		pr := problemOf(errmap.Invalid("after", "must be the cursor of the page before"))
		return p, &pr
	}
	return p, nil
}

// nextLink is the link to the page after one of n rows, or empty on the
// last page.
func nextLink(r *http.Request, n, limit int, lastID string) string {
	if n < limit {
		return ""
	}
	q := r.URL.Query()
	q.Set("after", lastID)
	return r.URL.Path + "?" + q.Encode()
}

var (
	handoverForm = regexp.MustCompile(`^HO[0-9]{7,}$`)
	approvalForm = regexp.MustCompile(`^A[0-9]{7,}$`)
	holdForm     = regexp.MustCompile(`^H[0-9]{7,}$`)
	runForm      = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	invoiceForm  = regexp.MustCompile(`^[0-9]{10}$`)
)

// invoiceFilter reads a list's invoice_id filter: empty for every
// invoice.
func invoiceFilter(r *http.Request) (string, *problem) {
	id := r.URL.Query().Get("invoice_id")
	if id != "" && !invoiceForm.MatchString(id) {
		pr := problemOf(errmap.Invalid("invoice_id", "must be an invoice id of 10 digits, such as 5105600102"))
		return "", &pr
	}
	return id, nil
}

// holdHref is where an invoice's hold is shown: among the invoice's held
// holds, or its holds that ended.
func holdHref(invoiceID, id string, held bool) string {
	q := url.Values{"invoice_id": {invoiceID}}
	if !held {
		q.Set("status", records.HoldReleased)
	}
	return "/console/holds?" + q.Encode() + "#hold-" + id
}

var handoverStatuses = []string{records.HandoverQueued, records.HandoverTaken, records.HandoverResolved}

type handoversData struct {
	Queues, Statuses []string
	Queue, Status    string
	Handovers        []records.Handover
	Next             string
}

// handovers lists the handovers, newest first, by queue and status.
func (c *Console) handovers(w http.ResponseWriter, r *http.Request, p person) {
	q := r.URL.Query()
	f := records.HandoverFilter{Queue: q.Get("queue"), Status: q.Get("status")}
	if f.Queue != "" && !slices.Contains(errmap.Queues, f.Queue) {
		c.failAs(w, r, p, problemOf(errmap.Invalid("queue", "must be one of "+strings.Join(errmap.Queues, ", "))))
		return
	}
	if f.Status != "" && !slices.Contains(handoverStatuses, f.Status) {
		c.failAs(w, r, p, problemOf(errmap.Invalid("status", "must be one of "+strings.Join(handoverStatuses, ", "))))
		return
	}
	pg, pr := c.listPage(r, handoverForm)
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	f.Page = pg
	list, err := c.records.ListHandovers(r.Context(), f)
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	d := handoversData{Queues: errmap.Queues, Statuses: handoverStatuses, Queue: f.Queue, Status: f.Status, Handovers: list}
	if len(list) > 0 {
		d.Next = nextLink(r, len(list), pg.Limit, list[len(list)-1].ID)
	}
	c.render(w, r, http.StatusOK, "handovers", page{Title: "Handovers", Nav: "handovers", Person: &p, Data: d})
}

type handoverData struct {
	H     records.Handover
	Run   *run
	Audit []records.AuditEntry
	// BadHistory says the stored history could not be read.
	BadHistory bool
}

// handover shows one handover: the invoice, the code, the errors of the
// run with their five fields, the evidence, the summary, the run's calls
// and budget, and the invoice's audit log.
func (c *Console) handover(w http.ResponseWriter, r *http.Request, p person) {
	id := r.PathValue("id")
	h, err := c.records.Handover(r.Context(), id)
	if err != nil {
		c.recordErr(w, r, p, "handover", err)
		return
	}
	d := handoverData{H: h}
	if d.Run, err = decodeRun([]byte(h.History)); err != nil {
		d.BadHistory = true
	}
	if d.Audit, err = c.records.Audit(r.Context(), records.AuditFilter{InvoiceID: h.InvoiceID, Limit: 50}); err != nil {
		c.internal(w, r, p, err)
		return
	}
	c.render(w, r, http.StatusOK, "handover", page{Title: "Handover " + h.ID, Nav: "handovers", Person: &p,
		Flash: flash(r), Data: d})
}

// takeHandover makes the person the owner of a queued handover.
func (c *Console) takeHandover(w http.ResponseWriter, r *http.Request, p person) {
	id := r.PathValue("id")
	h, err := c.records.TakeHandover(r.Context(), id, p.Name, c.now())
	if err != nil {
		c.recordErr(w, r, p, "handover", err)
		return
	}
	c.audit(r, records.AuditEntry{Client: p.Name, Operation: "take_handover", InvoiceID: h.InvoiceID, Document: h.ID, Outcome: "OK"})
	http.Redirect(w, r, "/console/handovers/"+url.PathEscape(h.ID)+"?done=taken", http.StatusSeeOther)
}

// resolveHandover closes a handover with the person's note, which the
// audit log keeps too.
func (c *Console) resolveHandover(w http.ResponseWriter, r *http.Request, p person) {
	id := r.PathValue("id")
	note := strings.TrimSpace(r.PostFormValue("note"))
	if n := len([]rune(note)); n < 3 || n > 2000 {
		c.failAs(w, r, p, problemOf(errmap.Invalid("note", "must say in 3 to 2000 characters what was done")))
		return
	}
	h, err := c.records.ResolveHandover(r.Context(), id, p.Name, note, c.now())
	if err != nil {
		c.recordErr(w, r, p, "handover", err)
		return
	}
	c.audit(r, records.AuditEntry{Client: p.Name, Operation: "resolve_handover", InvoiceID: h.InvoiceID, Document: h.ID,
		Outcome: "OK", Note: note})
	http.Redirect(w, r, "/console/handovers/"+url.PathEscape(h.ID)+"?done=resolved", http.StatusSeeOther)
}

func (c *Console) audit(r *http.Request, e records.AuditEntry) {
	e.At = c.now().UTC()
	if err := c.records.AppendAudit(r.Context(), e); err != nil {
		c.log.ErrorContext(r.Context(), "console: audit row not written", "operation", e.Operation, "document", e.Document, "error", err)
	}
}

// flash says what the form before did, from the redirect's query.
func flash(r *http.Request) string {
	q := r.URL.Query()
	switch q.Get("done") {
	case "taken":
		return "You took this handover."
	case "resolved":
		return "Handover resolved; the note is in the audit log."
	}
	return ""
}

// recordErr shows a records error: an unknown record, a handover in a
// status that does not allow the step, or an internal fault.
func (c *Console) recordErr(w http.ResponseWriter, r *http.Request, p person, kind string, err error) {
	switch {
	case errors.Is(err, records.ErrNotFound):
		c.failAs(w, r, p, problemOf(errmap.InvalidPage(http.StatusNotFound, kind+"_id", "names no "+kind)))
	case errors.Is(err, records.ErrHandoverState):
		c.failAs(w, r, p, problemOf(errmap.InvalidPage(http.StatusConflict, kind+"_id", "names a "+kind+" whose status does not allow this step: reload it")))
	default:
		c.internal(w, r, p, err)
	}
}

func (c *Console) internal(w http.ResponseWriter, r *http.Request, p person, err error) {
	c.log.ErrorContext(r.Context(), "console", "path", r.URL.Path, "error", err)
	c.failAs(w, r, p, problemOf(errmap.Map(err)))
}

type holdRow struct {
	records.Hold
	Events []records.HoldEvent
}

type holdsData struct {
	Status    string
	InvoiceID string
	Holds     []holdRow
	Next      string
}

// holds lists the holds, held by default or ended, of one invoice or all,
// each with what it waits for (goods receipts, an approval's decision, a
// date), its next re-check and its events.
func (c *Console) holds(w http.ResponseWriter, r *http.Request, p person) {
	status := r.URL.Query().Get("status")
	if status == "" {
		status = records.HoldHeld
	}
	if status != records.HoldHeld && status != records.HoldReleased {
		c.failAs(w, r, p, problemOf(errmap.Invalid("status", "must be held or released")))
		return
	}
	invoice, pr := invoiceFilter(r)
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	pg, pr := c.listPage(r, holdForm)
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	list, err := c.records.ListHolds(r.Context(), records.HoldFilter{Status: status, InvoiceID: invoice, Page: pg})
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	d := holdsData{Status: status, InvoiceID: invoice, Holds: make([]holdRow, 0, len(list))}
	for _, h := range list {
		evs, err := c.records.HoldEvents(r.Context(), h.ID)
		if err != nil {
			c.internal(w, r, p, err)
			return
		}
		d.Holds = append(d.Holds, holdRow{Hold: h, Events: evs})
	}
	if len(list) > 0 {
		d.Next = nextLink(r, len(list), pg.Limit, list[len(list)-1].ID)
	}
	c.render(w, r, http.StatusOK, "holds", page{Title: "Holds", Nav: "holds", Person: &p, Data: d})
}

type runsData struct {
	RunID  string
	Run    *run
	Absent bool
	// Recent are the runs of the newest handovers.
	Recent []recentRun
}

type recentRun struct{ RunID, InvoiceID, HandoverID string }

// runs shows one run's calls in order with their outcomes, and the runs
// of the newest handovers to pick from.
func (c *Console) runs(w http.ResponseWriter, r *http.Request, p person) {
	d := runsData{RunID: r.URL.Query().Get("run_id")}
	if d.RunID != "" {
		if !runForm.MatchString(d.RunID) {
			c.failAs(w, r, p, problemOf(errmap.Invalid("run_id", "must be 1 to 128 letters, digits, '.', '_', ':' or '-'")))
			return
		}
		b, found, err := c.gw.RunJSON(r.Context(), d.RunID)
		if err != nil {
			c.internal(w, r, p, err)
			return
		}
		d.Absent = !found
		if found {
			if d.Run, err = decodeRun(b); err != nil {
				c.internal(w, r, p, err)
				return
			}
		}
	}
	list, err := c.records.ListHandovers(r.Context(), records.HandoverFilter{Page: records.Page{Limit: c.pageSize}})
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	for _, h := range list {
		var ref struct {
			RunID string `json:"run_id"`
		}
		if h.History != "" && json.Unmarshal([]byte(h.History), &ref) == nil && ref.RunID != "" {
			d.Recent = append(d.Recent, recentRun{RunID: ref.RunID, InvoiceID: h.InvoiceID, HandoverID: h.ID})
		}
	}
	c.render(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Person: &p, Data: d})
}

type healthData struct {
	Readiness string
	Store     storeHealth
	Breakers  []detail
	ERP       []detail
	Problem   *problem
	Retry     []retryRow
}

type storeHealth struct{ Engine, State string }

type retryRow struct {
	Service              string
	Retries, BudgetEmpty float64
	Attempts, FastFailed float64
}

// health shows what /readyz answers (store, breakers, the ERP's services)
// and the retry figures of the metrics: retries made, and those the retry
// budget refused.
func (c *Console) health(w http.ResponseWriter, r *http.Request, p person) {
	req := httptest.NewRequestWithContext(r.Context(), http.MethodGet, "/readyz", nil)
	rec := httptest.NewRecorder()
	c.gw.ServeAs(rec, req, p.Name)
	var d healthData
	if rec.Code == http.StatusOK {
		var ready struct {
			Status string `json:"status"`
			Store  *struct {
				Engine string `json:"engine"`
				Status string `json:"status"`
			} `json:"store"`
			Breakers map[string]string `json:"breakers"`
			ERP      map[string]string `json:"erp"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &ready); err != nil {
			c.internal(w, r, p, err)
			return
		}
		d.Readiness = ready.Status
		if ready.Store != nil {
			d.Store = storeHealth{Engine: ready.Store.Engine, State: ready.Store.Status}
		}
		d.Breakers = detailsOf(toAny(ready.Breakers))
		d.ERP = detailsOf(toAny(ready.ERP))
	} else {
		pr := problemFromAPI(rec.Code, rec.Body.Bytes())
		d.Problem = &pr
	}
	d.Retry = c.retryFigures()
	c.render(w, r, http.StatusOK, "health", page{Title: "Health", Nav: "health", Person: &p, Data: d})
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// retryFigures sums the ERP's attempts, retries, budget refusals and fast
// failures by service from the metrics.
func (c *Console) retryFigures() []retryRow {
	if c.metrics == nil {
		return nil
	}
	mfs, err := c.metrics.Gather()
	if err != nil {
		return nil
	}
	rows := map[string]*retryRow{}
	for _, mf := range mfs {
		var field func(*retryRow) *float64
		switch mf.GetName() {
		case "erpgate_erp_attempts_total":
			field = func(r *retryRow) *float64 { return &r.Attempts }
		case "erpgate_erp_retries_total":
			field = func(r *retryRow) *float64 { return &r.Retries }
		case "erpgate_erp_retry_budget_exhausted_total":
			field = func(r *retryRow) *float64 { return &r.BudgetEmpty }
		case "erpgate_erp_fast_fails_total":
			field = func(r *retryRow) *float64 { return &r.FastFailed }
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			svc := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" {
					svc = l.GetValue()
				}
			}
			if svc == "" {
				continue
			}
			row := rows[svc]
			if row == nil {
				row = &retryRow{Service: svc}
				rows[svc] = row
			}
			*field(row) += m.GetCounter().GetValue()
		}
	}
	out := make([]retryRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b retryRow) int { return strings.Compare(a.Service, b.Service) })
	return out
}
