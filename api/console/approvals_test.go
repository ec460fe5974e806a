package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/console"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// erpSite is a site whose simulated ERP and API server the test reaches.
type erpSite struct {
	*site
	sim *sim.Server
	api *api.Server
}

// newERPSite starts the gateway and its console over the simulated ERP,
// read through wrap when one is given.
func newERPSite(t *testing.T, wrap ...func(erp.Client) erp.Client) *erpSite {
	t.Helper()
	simulated := sim.New(sim.Options{})
	simSrv := httptest.NewServer(simulated)
	t.Cleanup(simSrv.Close)
	metrics := api.NewMetrics()
	runner := retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, InitialInterval: 5 * time.Millisecond,
		MaxInterval: 20 * time.Millisecond, MaxAttempts: 2}, metrics)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	var through erp.Client = client
	for _, w := range wrap {
		through = w(through)
	}
	store, _ := recordstest.SQLite(t)
	srv, err := api.NewServer(api.Options{ERP: through, Records: store, Metrics: metrics, BreakerStates: runner.BreakerStates,
		Credentials: []api.Credential{
			cred("agent", agentKey, api.ScopeRead, api.ScopeWrite),
			cred("m.keller", kellerKey, api.ScopeApprove, api.ScopeReview),
			cred("j.doe", doeKey, api.ScopeApprove),
			cred("ap.team", reviewerKey, api.ScopeReview),
		}})
	if err != nil {
		t.Fatal(err)
	}
	ui, err := console.New(console.Options{Gateway: srv, Records: store})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	ui.Mount(mux)
	gw := httptest.NewServer(mux)
	t.Cleanup(gw.Close)
	return &erpSite{site: &site{t: t, url: gw.URL, records: store, handler: mux}, sim: simulated, api: srv}
}

// getIn is get with the browser's Accept-Language.
func (b *browser) getIn(path, lang string) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.site.url+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Accept-Language", lang)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

// wantAll fails the test for each of wants p lacks.
func wantAll(t *testing.T, what string, p page, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(p.body, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
}

func TestApprovalPageShowsTheEvidence(t *testing.T) {
	s := newERPSite(t)
	ctx := context.Background()
	const run = "run-evidence-0102"
	if p := s.agent(http.MethodPost, "/invoices/5105600102/three-way-match", "", run); p.status != http.StatusOK ||
		!strings.Contains(p.body, `"result":"TOLERANCE_EXCEEDED"`) {
		t.Fatalf("match of 5105600102: %d %s", p.status, p.body)
	}
	id := s.requestApprovalIn("accept_variance", run)
	// A post before the decision: the run's error.
	if p := s.agent(http.MethodPost, "/invoices/5105600102/post", `{"approval_id":"`+id+`"}`, run); p.status != http.StatusConflict ||
		!strings.Contains(p.body, "APPROVAL_MISSING") {
		t.Fatalf("post before the decision: %d %s", p.status, p.body)
	}

	b := s.browser()
	b.signIn(doeKey)
	list := b.get("/console/approvals")
	wantAll(t, "the queue", list, `<a href="/console/approvals/`+id+`">`+id+`</a>`, `<td class="num">13,500.00 EUR</td>`,
		"<td>accept the variance</td>", "<td>100042</td>", `<span class="count" aria-label="1 waiting for you">1</span>`)

	caseBefore, err := s.records.Case(ctx, "5105600102")
	if err != nil {
		t.Fatal(err)
	}
	runBefore := runCalls(t, s, run)
	auditBefore, _ := s.records.Audit(ctx, records.AuditFilter{InvoiceID: "5105600102"})

	p := b.get("/console/approvals/" + id)
	if p.status != http.StatusOK {
		t.Fatalf("approval page: %d %s", p.status, p.body)
	}
	wantAll(t, "the approval page", p,
		// The header.
		`<dd id="supplier"><strong>Acme Industrial Supplies GmbH</strong> (100042)</dd>`,
		`<dd id="supplier-ref">ACME-2026-0419</dd>`, "<dt>Document date</dt><dd>2026-11-21</dd>",
		"<dt>Posting date</dt><dd>2026-11-24</dd>", `<dt>Due date</dt><dd id="due-date">2026-12-21, terms of payment ZB01</dd>`,
		"<dd>1010 (fiscal year 2026)</dd>", `<dd id="gross">13,500.00 EUR</dd>`,
		// The three-way match, line by line.
		"<td>4500018823 item 10<br>", "Hydraulic pump HP-20 (PUMP-HP20)",
		`<td class="num">100 EA</td><td class="num">135.00 EUR</td><td class="num">100 EA</td><td class="num">125.00 EUR</td>`,
		`<td class="num">100 EA<br><span class="muted">4900000102 of 2026-11-19</span></td>`,
		"<strong>over the tolerance</strong>", "<code>TOLERANCE_EXCEEDED</code>",
		`Tolerance: <span id="tolerance">2 % / 50.00 EUR</span>`,
		// The line over the tolerance, in figures.
		"Line 1, PO 4500018823 item 10: unit price 135.00 EUR against 125.00 EUR on the PO: <strong>8 % variance</strong> (1,000.00 EUR) against the tolerance of 2 % / 50.00 EUR.",
		// The proposal in words, its justification, and the run.
		`<p id="proposal">Accept the variance over the purchase order and post the invoice as invoiced, at 13,500.00 EUR.</p>`,
		"Unit price 135.00 is 8 % over the PO price 125.00.",
		`in run <a href="/console/runs?run_id=`+run+`">`+run+`</a>`,
		"<td>run_three_way_match</td>", "<td>request_approval</td>", "<td>post_invoice</td><td><code>APPROVAL_MISSING</code></td>",
		"<td>false</td><td><code>hold_and_recheck</code></td>", `&#34;reason&#34;:&#34;pending&#34;`,
		// The decision, and the invoice's audit log.
		`action="/console/approvals/`+id+`/decision"`, `value="approve">Approve</button>`, `value="reject" class="reject">Reject</button>`,
		`value="send_back" class="send-back">Send back to the agent</button>`, `<a href="/console/cases/5105600102">`)
	if !regexp.MustCompile(`<tr><td>[^<]+</td><td>agent</td><td>request_approval</td><td>` + id + `</td>`).MatchString(p.body) {
		t.Error("the audit log on the page lacks the agent's request_approval, naming its approval once")
	}

	// Amounts are grouped for the reader's locale.
	de := b.getIn("/console/approvals/"+id, "de-DE,de;q=0.9,en;q=0.8")
	wantAll(t, "the approval page in German", de, `<dd id="gross">13.500,00 EUR</dd>`, "135,00 EUR", "125,00 EUR",
		"<strong>8 % variance</strong> (1.000,00 EUR)", "2 % / 50,00 EUR")
	if ch := b.getIn("/console/approvals/"+id, "fr-CH, de-CH;q=0.9"); !strings.Contains(ch.body, "13\u202f500,00 EUR") {
		t.Error("fr-CH: the gross amount is not 13 500,00 EUR")
	}

	// Reading the evidence is no agent's call: nothing counted, nothing written.
	caseAfter, err := s.records.Case(ctx, "5105600102")
	if err != nil {
		t.Fatal(err)
	}
	if caseAfter.Calls != caseBefore.Calls || caseAfter.Version != caseBefore.Version {
		t.Errorf("the case after the page: %d calls, version %d; before %d, %d", caseAfter.Calls, caseAfter.Version, caseBefore.Calls, caseBefore.Version)
	}
	if got := runCalls(t, s, run); got != runBefore {
		t.Errorf("run %s has %d calls after the page, %d before", run, got, runBefore)
	}
	if auditAfter, _ := s.records.Audit(ctx, records.AuditFilter{InvoiceID: "5105600102"}); len(auditAfter) != len(auditBefore) {
		t.Errorf("the page wrote %d audit rows", len(auditAfter)-len(auditBefore))
	}
}

// runCalls is how many calls the run made, as the API's run history says.
func runCalls(t *testing.T, s *erpSite, id string) int {
	t.Helper()
	b, found, err := s.api.RunJSON(context.Background(), id)
	if err != nil || !found {
		t.Fatalf("run %s: found %v, %v", id, found, err)
	}
	var r struct {
		Calls []json.RawMessage `json:"calls"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return len(r.Calls)
}

func TestApprovalPageWithoutTheERP(t *testing.T) {
	s := newERPSite(t)
	id := s.requestApproval("accept_variance")
	if err := s.sim.InjectFault(sim.FaultRule{Service: erp.ServiceSupplierInvoice, Status: http.StatusServiceUnavailable, Count: -1}); err != nil {
		t.Fatal(err)
	}
	b := s.browser()
	b.signIn(doeKey)
	p := b.get("/console/approvals/" + id)
	if p.status != http.StatusOK {
		t.Fatalf("approval page with the ERP down: %d, want 200 showing the approval", p.status)
	}
	wantAll(t, "the approval page with the ERP down", p, `id="erp-problem"`, "The ERP could not be read",
		"<dt>code</dt><dd><code>ERP_UNAVAILABLE</code></dd>", "<dt>retryable</dt><dd>true</dd>", "<dt>next_action</dt>",
		"<dt>details</dt>", `<p id="proposal">Accept the variance`, `action="/console/approvals/`+id+`/decision"`)
	if strings.Contains(p.body, `id="three-way-match"`) || strings.Contains(p.body, `id="supplier"`) {
		t.Error("the page shows evidence the ERP did not give")
	}
	s.sim.ClearFaults()
	if p := b.get("/console/approvals/" + id); strings.Contains(p.body, `id="erp-problem"`) || !strings.Contains(p.body, `id="three-way-match"`) {
		t.Error("the evidence is not back once the ERP answers")
	}
}

var queueRow = regexp.MustCompile(`<tr id="approval-(A[0-9]+)">`)

// seedApproval stores a pending approval as the routing would.
func seedApproval(t *testing.T, s *site, invoice, group, supplier, amount, by string) string {
	t.Helper()
	a, _, err := s.records.CreateApproval(context.Background(), records.Approval{InvoiceID: invoice, FiscalYear: "2026",
		CompanyCode: "1010", Status: records.ApprovalPending, Approver: group, ProposedAction: "accept_variance",
		Justification: "Surcharge.", Amount: decimal.RequireFromString(amount), Currency: "EUR", RequestedBy: by,
		SupplierID: supplier}, false)
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func TestApprovalQueue(t *testing.T) {
	s := newSite(t)
	a1 := seedApproval(t, s, "5105600201", "ap_manager", "100042", "13500.00", "agent")
	a2 := seedApproval(t, s, "5105600202", "finance_director", "100043", "150000.00", "agent")
	a3 := seedApproval(t, s, "5105600203", "ap_manager", "100043", "20000.00", "agent")
	a4 := seedApproval(t, s, "5105600204", "ap_manager", "100042", "11000.00", "m.keller")
	keller := s.browser()
	keller.signIn(kellerKey)

	for query, want := range map[string][]string{
		"":                                   {a1, a2, a3, a4},
		"?sort=oldest":                       {a1, a2, a3, a4},
		"?sort=newest":                       {a4, a3, a2, a1},
		"?approver=ap_manager":               {a1, a3, a4},
		"?supplier_id=100042":                {a1, a4},
		"?amount_from=12000&amount_to=20000": {a1, a3},
		"?amount_from=12000,00&sort=newest":  {a3, a2, a1},
		"?amount_to=11000":                   {a4},
		"?approver=ap_manager&supplier_id=100043": {a3},
		"?approver=controller":                    nil,
		"?status=approved":                        nil,
	} {
		p := keller.get("/console/approvals" + query)
		if p.status != http.StatusOK {
			t.Errorf("queue %q: %d", query, p.status)
			continue
		}
		var got []string
		for _, m := range queueRow.FindAllStringSubmatch(p.body, -1) {
			got = append(got, m[1])
		}
		if !slices.Equal(got, want) {
			t.Errorf("queue %q: %v, want %v", query, got, want)
		}
		if !strings.Contains(p.body, `<p id="queue-count">`+strconv.Itoa(len(want))+" approval") {
			t.Errorf("queue %q does not count %d", query, len(want))
		}
	}
	// A row leads to the approval within its queue.
	p := keller.get("/console/approvals?approver=ap_manager&sort=newest")
	wantAll(t, "the filtered queue", p, `<a href="/console/approvals/`+a3+`?approver=ap_manager&amp;sort=newest">`,
		`<td>m.keller <span class="muted">(you)</span></td>`, `value="ap_manager"`)

	// The navigation counts what the person may decide: not their own.
	count := func(b *browser) string {
		m := regexp.MustCompile(`<span class="count" aria-label="([0-9]+) waiting for you">`).FindStringSubmatch(b.get("/console/holds").body)
		if m == nil {
			return "none"
		}
		return m[1]
	}
	doe := s.browser()
	doe.signIn(doeKey)
	if k, d := count(keller), count(doe); k != "3" || d != "4" {
		t.Errorf("waiting: m.keller %s, j.doe %s; want 3 and 4", k, d)
	}
	reviewer := s.browser()
	reviewer.signIn(reviewerKey)
	if got := count(reviewer); got != "none" {
		t.Errorf("waiting for the AP team without the approve scope: %s, want none", got)
	}

	// Bad filters are refused, naming the field.
	for _, bad := range []struct{ query, field string }{
		{"approver=AP%20manager", "approver"},
		{"supplier_id=10004200000", "supplier_id"},
		{"supplier_id=100%3B42", "supplier_id"},
		{"amount_from=abc", "amount_from"},
		{"amount_from=1.234", "amount_from"},
		{"amount_to=1%2C000.00", "amount_to"},
		{"amount_from=500&amount_to=100", "amount_to"},
		{"sort=sideways", "sort"},
		{"status=gone", "status"},
		{"invoice_id=51056", "invoice_id"},
		{"after=DROP", "after"},
	} {
		for _, path := range []string{"/console/approvals?", "/console/approvals/" + a1 + "?"} {
			if path != "/console/approvals?" && bad.field == "after" {
				continue
			}
			p := keller.get(path + bad.query)
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, "INVALID_REQUEST") || !strings.Contains(p.body, bad.field) {
				t.Errorf("GET %s%s: %d, want 400 INVALID_REQUEST naming %s", path, bad.query, p.status, bad.field)
			}
		}
	}
	for _, path := range []string{"/console/approvals/A1", "/console/approvals/A9999999", "/console/approvals/H0000001"} {
		if p := keller.get(path); p.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, p.status)
		}
	}
	if p := reviewer.get("/console/approvals/" + a1); p.status != http.StatusConflict || !strings.Contains(p.body, "SCOPE_MISSING") {
		t.Errorf("the approval page for the AP team without approve: %d, want 409 SCOPE_MISSING", p.status)
	}
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// formOf is the decision form of an approval page: its hidden fields,
// with decision and reason.
func formOf(t *testing.T, p page, decision, reason string) url.Values {
	t.Helper()
	v := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(p.body, -1) {
		v.Set(m[1], strings.ReplaceAll(m[2], "&amp;", "&"))
	}
	if v.Get("csrf_token") == "" {
		t.Fatalf("no csrf_token on the page: %d", p.status)
	}
	v.Set("decision", decision)
	v.Set("reason", reason)
	return v
}

func TestNextApprovalAfterADecision(t *testing.T) {
	s := newSite(t)
	a1 := seedApproval(t, s, "5105600201", "ap_manager", "100042", "13500.00", "agent")
	a2 := seedApproval(t, s, "5105600202", "finance_director", "100043", "150000.00", "agent")
	a3 := seedApproval(t, s, "5105600203", "ap_manager", "100043", "20000.00", "agent")
	a4 := seedApproval(t, s, "5105600204", "ap_manager", "100042", "11000.00", "m.keller")
	keller := s.browser()
	keller.signIn(kellerKey)

	// m.keller works the ap_manager queue from its first approval.
	p := keller.get("/console/approvals/" + a1 + "?approver=ap_manager")
	p = keller.post("/console/approvals/"+a1+"/decision", formOf(t, p, "approve", "Surcharge confirmed."))
	if want := "/console/approvals/" + a3 + "?approval_id=" + a1 + "&approver=ap_manager&done=approved"; p.status != http.StatusSeeOther || p.location != want {
		t.Fatalf("after the first decision: %d to %q, want 303 to %q", p.status, p.location, want)
	}
	p = keller.get(p.location)
	wantAll(t, "the next approval", p, `id="approval-`+a3+`"`, "Approval "+a1+" approved. This is the next approval in your queue.",
		`<input type="hidden" name="approver" value="ap_manager">`)
	// Its own request a4 is no next item for him: the queue is done.
	p = keller.post("/console/approvals/"+a3+"/decision", formOf(t, p, "reject", "Not agreed with procurement."))
	if want := "/console/approvals?approval_id=" + a3 + "&approver=ap_manager&done=rejected"; p.status != http.StatusSeeOther || p.location != want {
		t.Fatalf("after the last decision: %d to %q, want 303 to %q", p.status, p.location, want)
	}
	p = keller.get(p.location)
	wantAll(t, "the queue done", p, "Approval "+a3+" rejected. No other approval in this queue waits for your decision.")
	if a, b := s.approvalStatus(a1), s.approvalStatus(a3); a != records.ApprovalApproved || b != records.ApprovalRejected {
		t.Fatalf("decisions: %s %s", a, b)
	}
	// The decision is shown in words on its page.
	wantAll(t, "a decided approval", keller.get("/console/approvals/"+a1), `<p id="decision-words">Approved by m.keller on `,
		": Surcharge confirmed.</p>")

	// j.doe decides the newest of the whole queue; the next is the first
	// from the start, the one waiting longest.
	doe := s.browser()
	doe.signIn(doeKey)
	p = doe.get("/console/approvals/" + a4)
	p = doe.post("/console/approvals/"+a4+"/decision", formOf(t, p, "approve", "Within budget."))
	if want := "/console/approvals/" + a2 + "?approval_id=" + a4 + "&done=approved"; p.status != http.StatusSeeOther || p.location != want {
		t.Fatalf("after j.doe's decision: %d to %q, want 303 to %q", p.status, p.location, want)
	}
}

func TestOwnRequestCannotBeDecided(t *testing.T) {
	s := newSite(t)
	own := seedApproval(t, s, "5105600204", "ap_manager", "100042", "11000.00", "m.keller")
	keller := s.browser()
	keller.signIn(kellerKey)
	p := keller.get("/console/approvals/" + own)
	wantAll(t, "one's own request", p, `<p id="own-hint" class="muted">You requested this approval yourself: another person must decide it.</p>`,
		`<fieldset disabled aria-describedby="own-hint">`)
	doe := s.browser()
	doe.signIn(doeKey)
	if p := doe.get("/console/approvals/" + own); strings.Contains(p.body, "<fieldset disabled") || strings.Contains(p.body, "own-hint") {
		t.Error("another approver's buttons are disabled")
	}

	// Sent all the same, the decision is refused; the page keeps what was
	// typed and leads back to the approval.
	const reason = "Looks right to me <and> the supplier agreed."
	r := keller.post("/console/approvals/"+own+"/decision", formOf(t, p, "approve", reason))
	if r.status != http.StatusConflict {
		t.Fatalf("the requester's decision: %d, want 409", r.status)
	}
	wantAll(t, "the refusal", r, `id="refusal"`, "<dt>code</dt><dd><code>SEGREGATION_OF_DUTIES</code></dd>",
		"<dt>retryable</dt><dd>false</dd>", `id="approval-`+own+`"`, `<a href="/console/approvals/`+own+`">Reload approval `+own+`</a>`,
		">Looks right to me &lt;and&gt; the supplier agreed.</textarea>")
	if strings.Contains(r.body, "Back to the console") {
		t.Error("the refusal leads back to the console, not to the approval")
	}
	if got := s.approvalStatus(own); got != records.ApprovalPending {
		t.Fatalf("after the refused decision: %s", got)
	}

	// A reason too short is refused by the API and kept too.
	r = doe.post("/console/approvals/"+own+"/decision", formOf(t, doe.get("/console/approvals/"+own+"?sort=newest"), "reject", "no"))
	wantAll(t, "a reason too short", r, "<code>INVALID_REQUEST</code>", "<code>field</code>: reason", ">no</textarea>",
		`<input type="hidden" name="sort" value="newest">`)
	if r.status != http.StatusBadRequest || s.approvalStatus(own) != records.ApprovalPending {
		t.Errorf("a reason too short: %d, %s; want 400 and pending", r.status, s.approvalStatus(own))
	}
}

func TestSendBackToTheAgent(t *testing.T) {
	s := newSite(t)
	id := s.requestApproval("accept_variance")
	doe := s.browser()
	doe.signIn(doeKey)
	const question = "Is the raw-material surcharge in the framework contract?"
	p := doe.post("/console/approvals/"+id+"/decision", formOf(t, doe.get("/console/approvals/"+id), "send_back", question))
	if p.status != http.StatusSeeOther || !strings.Contains(p.location, "done=sent_back") {
		t.Fatalf("send back: %d to %q: %s", p.status, p.location, p.body)
	}
	wantAll(t, "the queue after sending back", doe.get(p.location), "Approval "+id+" sent back to the agent.")
	if got := s.approvalStatus(id); got != records.ApprovalSentBack {
		t.Fatalf("after send back: %s, want sent_back", got)
	}
	// The agent reads the question on get_approval.
	r := s.agent(http.MethodGet, "/approvals/"+id, "", "")
	var body struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil || r.status != http.StatusConflict ||
		body.Code != "APPROVAL_SENT_BACK" || body.Details["question"] != question {
		t.Fatalf("get_approval after send back: %d %s", r.status, r.body)
	}
	wantAll(t, "the approval sent back", doe.get("/console/approvals/"+id),
		`<p id="decision-words">Sent back to the agent with the question: `+question+" (j.doe, ")
}

func TestSupersededApprovals(t *testing.T) {
	s := newSite(t)
	first := s.requestApproval("accept_variance")
	second := s.requestApproval("post_as_invoiced")
	if got := s.approvalStatus(first); got != records.ApprovalSuperseded {
		t.Fatalf("the first approval after the second: %s, want superseded", got)
	}
	b := s.browser()
	b.signIn(kellerKey)
	form := func(id string) string { return `action="/console/approvals/` + id + `/decision"` }

	p := b.get("/console/approvals?status=superseded")
	wantAll(t, "superseded approvals", p, `<tr id="approval-`+first+`">`, `<span class="tag">superseded</span>`)
	p = b.get("/console/approvals/" + first)
	wantAll(t, "the superseded approval", p, "Superseded: a newer approval of the invoice took its place, so it can no longer be decided.",
		`Its place: <a href="/console/approvals/`+second+`">`+second+`</a>`)
	if strings.Contains(p.body, form(first)) {
		t.Error("the superseded approval has a decision form")
	}
	if p := b.get("/console/approvals"); queueRow.FindAllString(p.body, -1) == nil || strings.Contains(p.body, `id="approval-`+first+`"`) {
		t.Error("the pending approvals are not the second approval alone")
	}
	p = b.get("/console/approvals/" + second)
	wantAll(t, "the pending approval", p, form(second), `<table id="other-approvals">`, `<a href="/console/approvals/`+first+`">`+first+`</a>`)
	if p := b.get("/console/approvals?status=any&invoice_id=5105600106"); p.status != http.StatusOK || !strings.Contains(p.body, "No approvals of invoice 5105600106 in this queue.") {
		t.Errorf("approvals of an invoice without any: %d", p.status)
	}
	// A decision sent for it all the same is refused by the API.
	p = b.post("/console/approvals/"+first+"/decision", formOf(t, b.get("/console/approvals/"+second), "approve", "Checked."))
	if p.status != http.StatusConflict || !strings.Contains(p.body, "APPROVAL_SUPERSEDED") || !strings.Contains(p.body, second) {
		t.Errorf("deciding a superseded approval: got %d, want 409 APPROVAL_SUPERSEDED naming %s", p.status, second)
	}
}
