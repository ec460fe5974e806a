package console

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// The audit page: the audit log for the audit scope, filtered by invoice,
// client, operation and time, newest first, a page at a time, and the same
// rows as CSV.

// auditOperations are the operations that write audit rows, offered by
// the page's filter; any other name of that form may be asked for.
var auditOperations = []string{"request_approval", "decide_approval", "post_invoice", "hold_invoice",
	"hand_over", "take_handover", "resolve_handover"}

// operationWords say what each operation of auditOperations did.
var operationWords = map[string]string{
	"request_approval": "Approval requested",
	"decide_approval":  "Approval decided",
	"post_invoice":     "Invoice posted",
	"hold_invoice":     "Invoice held",
	"hand_over":        "Handed over to a person",
	"take_handover":    "Handover taken",
	"resolve_handover": "Handover resolved",
}

var operationForm = regexp.MustCompile(`^[a-z][a-z_]{0,63}$`)

// auditQuery is the audit page's filter as the person typed it, and as
// the store reads it.
type auditQuery struct {
	InvoiceID, Client, Operation, From, To string
	filter                                 records.AuditFilter
}

// Encode is the query string of the filter, without the page cursor.
func (q auditQuery) Encode() string {
	v := url.Values{}
	for k, s := range map[string]string{"invoice_id": q.InvoiceID, "client": q.Client, "operation": q.Operation,
		"from": q.From, "to": q.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// auditQueryOf reads the audit filter of r, or the INVALID_REQUEST naming
// the field that is wrong.
func auditQueryOf(r *http.Request) (auditQuery, *problem) {
	v := r.URL.Query()
	q := auditQuery{InvoiceID: strings.TrimSpace(v.Get("invoice_id")), Client: strings.TrimSpace(v.Get("client")),
		Operation: strings.TrimSpace(v.Get("operation")), From: strings.TrimSpace(v.Get("from")), To: strings.TrimSpace(v.Get("to"))}
	bad := func(field, what string) (auditQuery, *problem) {
		pr := problemOf(errmap.Invalid(field, what))
		return q, &pr
	}
	if q.InvoiceID != "" && !invoiceForm.MatchString(q.InvoiceID) {
		return bad("invoice_id", "must be an invoice id of 10 digits, such as 5105600102")
	}
	if q.Client != "" && (len(q.Client) > 128 || strings.ContainsFunc(q.Client, unicode.IsControl)) {
		return bad("client", "must be a client's name as the log shows it, at most 128 characters")
	}
	if q.Operation != "" && !operationForm.MatchString(q.Operation) {
		return bad("operation", "must be an operation's name such as decide_approval")
	}
	f := records.AuditFilter{InvoiceID: q.InvoiceID, Client: q.Client, Operation: q.Operation}
	var ok bool
	if f.From, ok = parseWhen(q.From, false); !ok {
		return bad("from", "must be a date (2026-03-01) or a time in RFC 3339 (2026-03-01T09:00:00Z)")
	}
	if f.To, ok = parseWhen(q.To, true); !ok {
		return bad("to", "must be a date (2026-03-31) or a time in RFC 3339 (2026-03-31T18:00:00Z)")
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return bad("to", "must not be before from")
	}
	q.filter = f
	return q, nil
}

// parseWhen reads a bound of the time filter: a date in UTC (its start
// for from; for to, its end) or an RFC 3339 time (for to, that time
// included). Empty is no bound. The store keeps microseconds: to's bound
// is the first instant after it.
func parseWhen(s string, end bool) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			d = d.AddDate(0, 0, 1)
		}
		return d, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	if end {
		t = t.Truncate(time.Microsecond).Add(time.Microsecond)
	}
	return t, true
}

// auditRow is one row of the audit page: the entry, with a decision in
// words.
type auditRow struct {
	records.AuditEntry
	// What says what the operation did; Decision and Reason are a
	// decide_approval row's, read from its note, and DecisionWords the
	// decision as a person reads it ("send back" for send_back).
	What, Decision, DecisionWords, Reason string
}

func auditRowOf(e records.AuditEntry) auditRow {
	row := auditRow{AuditEntry: e, What: operationWords[e.Operation]}
	if row.What == "" {
		row.What = strings.ReplaceAll(e.Operation, "_", " ")
	}
	row.Decision, row.Reason = decisionOf(e)
	row.DecisionWords = strings.ReplaceAll(row.Decision, "_", " ")
	return row
}

// decisionOf reads the decision and reason from a decide_approval row's
// note, "approve: Surcharge confirmed with the supplier.", whatever the
// decision.
func decisionOf(e records.AuditEntry) (decision, reason string) {
	if e.Operation != "decide_approval" {
		return "", ""
	}
	d, r, ok := strings.Cut(e.Note, ": ")
	if !ok || !operationForm.MatchString(d) {
		return "", ""
	}
	return d, r
}

type auditData struct {
	Query      auditQuery
	Operations []string
	Rows       []auditRow
	Next       string
	CSV        string
}

// auditPage shows the audit log, newest first, a page at a time, by
// invoice, client, operation and time.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, p person) {
	q, pr := auditQueryOf(r)
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	f := q.filter
	f.Limit = c.pageSize
	if v := r.URL.Query().Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			c.failAs(w, r, p, problemOf(errmap.Invalid("before", "must be the cursor of the page before")))
			return
		}
		f.BeforeID = n
	}
	list, err := c.records.Audit(r.Context(), f)
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	d := auditData{Query: q, Operations: auditOperations, Rows: make([]auditRow, 0, len(list)),
		CSV: "/console/audit.csv"}
	if enc := q.Encode(); enc != "" {
		d.CSV += "?" + enc
	}
	if q.Operation != "" && !slices.Contains(d.Operations, q.Operation) {
		d.Operations = append(slices.Clone(d.Operations), q.Operation)
	}
	for _, e := range list {
		d.Rows = append(d.Rows, auditRowOf(e))
	}
	if len(list) == f.Limit {
		v := r.URL.Query()
		v.Set("before", strconv.FormatInt(list[len(list)-1].ID, 10))
		d.Next = r.URL.Path + "?" + v.Encode()
	}
	c.render(w, r, http.StatusOK, "audit", page{Title: "Audit log", Nav: "audit", Person: &p, Data: d})
}

// csvBatch is how many rows the CSV export reads at a time.
const csvBatch = 1000

// auditCSVHeader names the CSV export's columns.
var auditCSVHeader = []string{"id", "at", "client", "operation", "invoice_id", "approval_id", "document",
	"outcome", "decision", "note", "request_id", "args_digest"}

// auditCSV answers every row the filter selects, newest first, as CSV
// (RFC 4180) for a spreadsheet: read and written a batch at a time, so
// that a long log costs no more memory than a short one. A cell that a
// spreadsheet would take for a formula is written as text.
func (c *Console) auditCSV(w http.ResponseWriter, r *http.Request, p person) {
	q, pr := auditQueryOf(r)
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	f := q.filter
	f.Limit = csvBatch
	list, err := c.records.Audit(r.Context(), f)
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="erpgate-audit-`+c.now().UTC().Format("20060102T150405Z")+`.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write(auditCSVHeader)
	for {
		for _, e := range list {
			decision, _ := decisionOf(e)
			_ = cw.Write(csvSafe([]string{strconv.FormatInt(e.ID, 10), e.At.UTC().Format(time.RFC3339Nano), e.Client,
				e.Operation, e.InvoiceID, e.ApprovalID, e.Document, e.Outcome, decision, e.Note, e.RequestID, e.ArgsDigest}))
		}
		// The store may answer fewer rows than asked: the export ends
		// at the first batch that holds none.
		if len(list) == 0 {
			break
		}
		f.BeforeID = list[len(list)-1].ID
		if list, err = c.records.Audit(r.Context(), f); err != nil {
			// The answer has begun: cut it off, so that the browser
			// reports a failed download instead of keeping half a log.
			c.log.ErrorContext(r.Context(), "console: audit CSV cut off", "error", err)
			cw.Flush()
			panic(http.ErrAbortHandler)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		c.log.InfoContext(r.Context(), "console: audit CSV not sent whole", "error", err)
	}
}

// csvSafe makes each cell that a spreadsheet would read as a formula (one
// that starts with =, +, -, @, a tab or a carriage return) text, by a
// leading apostrophe, in place.
func csvSafe(cells []string) []string {
	for i, s := range cells {
		if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
			cells[i] = "'" + s
		}
	}
	return cells
}
