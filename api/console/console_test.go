package console_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/console"
	"github.com/erpgate/erpgate/erp/records"
)

// The keys of the test's clients: an agent, two approvers and a reviewer.
const (
	agentKey    = "agent-key-0001"
	kellerKey   = "keller-key-0001"
	doeKey      = "doe-key-0001"
	reviewerKey = "reviewer-key-0001"
)

func cred(name, key string, scopes ...string) api.Credential {
	return api.Credential{Name: name, KeySHA256: sha256.Sum256([]byte(key)), Scopes: scopes}
}

// site is a gateway with its console, over the simulated ERP.
type site struct {
	t       testing.TB
	url     string
	records records.Store
	handler http.Handler
}

func newSite(t testing.TB, opts ...func(*console.Options)) *site {
	t.Helper()
	return newReplica(t, nil, nil, opts...)
}

// browser is a person's browser: it keeps cookies and shows redirects
// instead of following them.
type browser struct {
	t    testing.TB
	site *site
	c    *http.Client
}

func (s *site) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: s.t, site: s, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
	header   http.Header
}

func (b *browser) get(path string) page {
	b.t.Helper()
	resp, err := b.c.Get(b.site.url + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	resp, err := b.c.PostForm(b.site.url+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func mustParse(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func read(t testing.TB, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(body), header: resp.Header}
}

var csrfInput = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// token is the CSRF token of the page's forms.
func (b *browser) token(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfInput.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s: %d, no csrf_token in the page", path, p.status)
	}
	return m[1]
}

func (b *browser) signIn(key string) page {
	b.t.Helper()
	return b.post("/console/sign-in", url.Values{"csrf_token": {b.token("/console/sign-in")}, "key": {key}})
}

func TestSignIn(t *testing.T) {
	s := newSite(t)

	t.Run("approver", func(t *testing.T) {
		b := s.browser()
		p := b.signIn(kellerKey)
		if p.status != http.StatusSeeOther || p.location != "/console" {
			t.Fatalf("sign-in: got %d to %q, want 303 to /console", p.status, p.location)
		}
		set := p.header.Values("Set-Cookie")
		var session string
		for _, c := range set {
			if strings.HasPrefix(c, "erpgate_console=") {
				session = c
			}
		}
		for _, want := range []string{"HttpOnly", "SameSite=Strict", "Path=/console"} {
			if !strings.Contains(session, want) {
				t.Errorf("session cookie %q lacks %s", session, want)
			}
		}
		if strings.Contains(session, "Secure") {
			t.Errorf("session cookie %q is Secure over plain HTTP", session)
		}
		if p := b.get("/console/handovers"); p.status != http.StatusOK || !strings.Contains(p.body, "Signed in as <strong>m.keller</strong>") {
			t.Fatalf("handovers after sign-in: %d %s", p.status, p.body)
		}
		// Signing out ends the session in this browser.
		if p := b.post("/console/sign-out", url.Values{"csrf_token": {b.token("/console/handovers")}}); p.status != http.StatusSeeOther {
			t.Fatalf("sign-out: %d", p.status)
		}
		if p := b.get("/console/handovers"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/console/sign-in") {
			t.Fatalf("handovers after sign-out: got %d to %q, want the sign-in", p.status, p.location)
		}
	})

	t.Run("agent key refused", func(t *testing.T) {
		b := s.browser()
		p := b.signIn(agentKey)
		if p.status != http.StatusConflict || !strings.Contains(p.body, "SCOPE_MISSING") {
			t.Fatalf("agent sign-in: got %d, want 409 SCOPE_MISSING: %s", p.status, p.body)
		}
		if p := b.get("/console/approvals"); p.status != http.StatusSeeOther {
			t.Fatalf("approvals after a refused sign-in: got %d, want a redirect to the sign-in", p.status)
		}
	})

	t.Run("wrong key", func(t *testing.T) {
		p := s.browser().signIn("not-a-key")
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "UNAUTHENTICATED") {
			t.Fatalf("wrong key: got %d, want 401 UNAUTHENTICATED: %s", p.status, p.body)
		}
	})

	t.Run("scope of a page", func(t *testing.T) {
		b := s.browser()
		b.signIn(doeKey) // approve only
		if p := b.get("/console/handovers"); p.status != http.StatusConflict || !strings.Contains(p.body, "SCOPE_MISSING") {
			t.Fatalf("handovers for an approver without review: got %d, want 409 SCOPE_MISSING", p.status)
		}
		if p := b.get("/console/approvals"); p.status != http.StatusOK {
			t.Fatalf("approvals: %d", p.status)
		}
	})

	t.Run("forged session", func(t *testing.T) {
		b := s.browser()
		u, _ := url.Parse(s.url + "/console/")
		b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "erpgate_console", Value: "eyJuIjoibS5rZWxsZXIifQ.AAAA", Path: "/console"}})
		if p := b.get("/console/approvals"); p.status != http.StatusSeeOther {
			t.Fatalf("forged session: got %d, want a redirect to the sign-in", p.status)
		}
	})
}

// agent makes one call of the agent through the API, in the run named
// run unless it is empty.
func (s *site) agent(method, path, body, run string) page {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("X-API-Key", agentKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if run != "" {
		req.Header.Set("X-Run-Id", run)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return read(s.t, resp)
}

var approvalIDField = regexp.MustCompile(`"approval_id":"(A[0-9]+)"`)

// requestApproval has the agent ask for a person's decision on 5105600102,
// over the auto-approve limit, through the API.
func (s *site) requestApproval(action string) string {
	s.t.Helper()
	return s.requestApprovalIn(action, "")
}

// requestApprovalIn is requestApproval in the agent's run.
func (s *site) requestApprovalIn(action, run string) string {
	s.t.Helper()
	p := s.agent(http.MethodPost, "/invoices/5105600102/approvals",
		`{"proposed_action":"`+action+`","justification":"Unit price 135.00 is 8 % over the PO price 125.00."}`, run)
	m := approvalIDField.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || !strings.Contains(p.body, `"status":"pending"`) {
		s.t.Fatalf("request_approval: %d %s", p.status, p.body)
	}
	return m[1]
}

func (s *site) approvalStatus(id string) string {
	s.t.Helper()
	a, err := s.records.Approval(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return a.Status
}

func TestCSRFRefused(t *testing.T) {
	s := newSite(t)
	id := s.requestApproval("accept_variance")

	if p := s.browser().post("/console/sign-in", url.Values{"key": {kellerKey}}); p.status != http.StatusForbidden ||
		!strings.Contains(p.body, "csrf_token") || !strings.Contains(p.body, "INVALID_REQUEST") {
		t.Fatalf("sign-in without a token: got %d, want 403 INVALID_REQUEST naming csrf_token: %s", p.status, p.body)
	}

	b := s.browser()
	b.signIn(kellerKey)
	for name, form := range map[string]url.Values{
		"no token":    {"decision": {"approve"}, "reason": {"Checked."}},
		"wrong token": {"decision": {"approve"}, "reason": {"Checked."}, "csrf_token": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
	} {
		p := b.post("/console/approvals/"+id+"/decision", form)
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "csrf_token") {
			t.Errorf("%s: got %d, want 403 naming csrf_token", name, p.status)
		}
	}
	// Another browser's token does not fit this session either.
	other := s.browser()
	other.signIn(doeKey)
	p := b.post("/console/approvals/"+id+"/decision", url.Values{"decision": {"approve"}, "reason": {"Checked."},
		"csrf_token": {other.token("/console/approvals")}})
	if p.status != http.StatusForbidden {
		t.Errorf("another session's token: got %d, want 403", p.status)
	}
	if got := s.approvalStatus(id); got != records.ApprovalPending {
		t.Fatalf("approval after refused forms: %s, want pending", got)
	}
}

func TestDecisionsAndSegregationOfDuties(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	// An approval m.keller asked for himself: he cannot decide it.
	own, _, err := s.records.CreateApproval(ctx, records.Approval{InvoiceID: "5105600102", FiscalYear: "2026", CompanyCode: "1010",
		Status: records.ApprovalPending, Approver: "ap_manager", ProposedAction: "accept_variance", Justification: "Surcharge.",
		Amount: decimal.RequireFromString("13500.00"), Currency: "EUR", RequestedBy: "m.keller"}, false)
	if err != nil {
		t.Fatal(err)
	}
	keller := s.browser()
	keller.signIn(kellerKey)
	tok := keller.token("/console/approvals")
	p := keller.post("/console/approvals/"+own.ID+"/decision", url.Values{"csrf_token": {tok}, "decision": {"approve"}, "reason": {"Looks right."}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "SEGREGATION_OF_DUTIES") {
		t.Fatalf("the requester's decision: got %d, want 409 SEGREGATION_OF_DUTIES: %s", p.status, p.body)
	}
	if got := s.approvalStatus(own.ID); got != records.ApprovalPending {
		t.Fatalf("after the requester's decision: %s, want pending", got)
	}

	// The agent's two approvals, one after the other (an invoice has one
	// pending approval at a time): one approved, one rejected by m.keller.
	approve := s.requestApproval("accept_variance")
	p = keller.post("/console/approvals/"+approve+"/decision", url.Values{"csrf_token": {tok}, "decision": {"approve"}, "reason": {"Surcharge confirmed."}})
	if p.status != http.StatusSeeOther || !strings.Contains(p.location, "done=approved") {
		t.Fatalf("approve: got %d to %q", p.status, p.location)
	}
	if f := keller.get(p.location); !strings.Contains(f.body, "Approval "+approve+" approved.") {
		t.Errorf("the approvals page does not confirm the decision")
	}
	reject := s.requestApproval("post_as_invoiced")
	p = keller.post("/console/approvals/"+reject+"/decision", url.Values{"csrf_token": {tok}, "decision": {"reject"}, "reason": {"Credit note not agreed."}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("reject: got %d %s", p.status, p.body)
	}
	if a, b := s.approvalStatus(approve), s.approvalStatus(reject); a != records.ApprovalApproved || b != records.ApprovalRejected {
		t.Fatalf("after the decisions: %s and %s, want approved and rejected", a, b)
	}
	a, _ := s.records.Approval(ctx, approve)
	if a.DecidedBy != "m.keller" || a.DecisionReason != "Surcharge confirmed." {
		t.Errorf("decided by %q for %q, want m.keller for the reason given", a.DecidedBy, a.DecisionReason)
	}
	// A second decision is refused by the API, shown with its code.
	p = keller.post("/console/approvals/"+approve+"/decision", url.Values{"csrf_token": {tok}, "decision": {"reject"}, "reason": {"Changed my mind."}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "APPROVAL_DECIDED") {
		t.Fatalf("second decision: got %d, want 409 APPROVAL_DECIDED", p.status)
	}
	// The decision is in the audit log, as decide_approval by the person.
	audit, err := s.records.Audit(ctx, records.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range audit {
		found = found || (e.Operation == "decide_approval" && e.Client == "m.keller" && e.ApprovalID == approve && e.Outcome == "OK")
	}
	if !found {
		t.Errorf("no decide_approval row by m.keller for %s in %+v", approve, audit)
	}
}

func TestHandoverTakeAndResolve(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	// The agent's run meets PO_NOT_FOUND twice and hands over, as in the
	// README's walk.
	agent := func(method, path, body string) {
		req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", agentKey)
		req.Header.Set("X-Run-Id", "run-0042")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	agent("POST", "/invoices/5105600103/three-way-match", "")
	agent("POST", "/invoices/5105600103/three-way-match", "")
	agent("POST", "/handovers", `{"invoice_id":"5105600103","code":"PO_NOT_FOUND","summary":"Invoice references PO 4500019822, which does not exist."}`)
	list, err := s.records.ListHandovers(ctx, records.HandoverFilter{})
	if err != nil || len(list) != 1 {
		t.Fatalf("handovers: %v %v", list, err)
	}
	id := list[0].ID

	b := s.browser()
	b.signIn(reviewerKey)
	p := b.get("/console/handovers?queue=ap_queue")
	if !strings.Contains(p.body, `href="/console/handovers/`+id+`"`) {
		t.Fatalf("the ap_queue list lacks %s", id)
	}
	if !strings.Contains(p.body, `<td><a href="/console/cases/5105600103">5105600103</a></td>`) {
		t.Errorf("the handovers list does not link invoice 5105600103 to its case")
	}
	p = b.get("/console/handovers/" + id)
	for _, want := range []string{`<dd><a href="/console/cases/5105600103">5105600103</a></dd>`, "PO_NOT_FOUND", "LOOP_DETECTED", "fix_input_and_retry", "route_to_person", "4500019822",
		"run-0042", "run_three_way_match", "Invoice references PO 4500019822"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("handover page lacks %q", want)
		}
	}
	tok := csrfInput.FindStringSubmatch(p.body)[1]
	if p := b.post("/console/handovers/"+id+"/take", url.Values{"csrf_token": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("take: %d %s", p.status, p.body)
	}
	if p := b.post("/console/handovers/"+id+"/resolve", url.Values{"csrf_token": {tok}, "note": {"x"}}); p.status != http.StatusBadRequest {
		t.Fatalf("resolve with a one-letter note: got %d, want 400", p.status)
	}
	note := "Corrected the PO reference to 4500018822 with the supplier."
	if p := b.post("/console/handovers/"+id+"/resolve", url.Values{"csrf_token": {tok}, "note": {note}}); p.status != http.StatusSeeOther {
		t.Fatalf("resolve: %d %s", p.status, p.body)
	}
	h, _ := s.records.Handover(ctx, id)
	if h.Status != records.HandoverResolved || h.TakenBy != "ap.team" || h.ResolvedBy != "ap.team" || h.Note != note {
		t.Fatalf("handover after resolve: %+v", h)
	}
	audit, _ := s.records.Audit(ctx, records.AuditFilter{InvoiceID: "5105600103"})
	var ops []string
	noted := false
	for _, e := range audit {
		ops = append(ops, e.Operation)
		noted = noted || (e.Operation == "resolve_handover" && e.Note == note && e.Client == "ap.team" && e.Document == id)
	}
	if !noted {
		t.Errorf("the audit log has no resolve_handover row with the note: %v", ops)
	}
	if p := b.post("/console/handovers/"+id+"/take", url.Values{"csrf_token": {tok}}); p.status != http.StatusConflict {
		t.Errorf("taking a resolved handover: got %d, want 409", p.status)
	}
}

func TestListsArePaginated(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	for i := range 30 {
		if _, _, err := s.records.CreateHandover(ctx, records.Handover{InvoiceID: fmt.Sprintf("51056%05d", i), Queue: "ap_queue",
			Code: "PO_NOT_FOUND", Summary: "Seeded."}, false); err != nil {
			t.Fatal(err)
		}
	}
	b := s.browser()
	b.signIn(reviewerKey)
	rows := regexp.MustCompile(`<tr><td><a href="/console/handovers/HO`)
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
	p := b.get("/console/handovers")
	if n := len(rows.FindAllString(p.body, -1)); n != 25 {
		t.Fatalf("first page: %d rows, want 25", n)
	}
	m := next.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatal("first page has no next link")
	}
	p = b.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	if n := len(rows.FindAllString(p.body, -1)); n != 5 {
		t.Fatalf("second page: %d rows, want 5", n)
	}
	if next.MatchString(p.body) {
		t.Error("the last page has a next link")
	}
	if p := b.get("/console/handovers?after=DROP"); p.status != http.StatusBadRequest {
		t.Errorf("a cursor of the wrong form: got %d, want 400", p.status)
	}
}

func TestPagesRender(t *testing.T) {
	s := newSite(t)
	b := s.browser()
	b.signIn(kellerKey)
	for path, want := range map[string]string{
		"/":                                  `href="/docs"`,
		"/docs":                              "TOLERANCE_EXCEEDED",
		"/console/holds":                     "Holds",
		"/console/holds?status=released":     "Holds that ended",
		"/console/runs?run_id=nope":          "holds no run",
		"/console/health":                    "sqlite",
		"/console/approvals?status=approved": "Approvals",
		"/console/approvals?status=any":      "No approvals.",
		"/console/cases/5105600101":          "has no case yet",
	} {
		p := b.get(path)
		if p.status != http.StatusOK || !strings.Contains(p.body, want) {
			t.Errorf("GET %s: %d, want 200 with %q", path, p.status, want)
		}
		if ct := p.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
	}
	for _, path := range []string{"/redoc", "/swagger-ui"} {
		if p := b.get(path); p.status != http.StatusFound || p.location != "/docs" {
			t.Errorf("GET %s: got %d to %q, want 302 to /docs", path, p.status, p.location)
		}
	}
	docs := b.get("/docs").body
	for _, want := range []string{"get_invoice", "decide_approval", "invoice_id", "hold_and_recheck", "<h2 id=\"codes\">"} {
		if !strings.Contains(docs, want) {
			t.Errorf("/docs lacks %q", want)
		}
	}
	if p := b.get("/console/nowhere"); p.status != http.StatusNotFound {
		t.Errorf("unknown console page: %d, want 404", p.status)
	}
	// The API around the console still answers in five fields.
	if p := b.get("/nowhere"); p.status != http.StatusNotFound || !strings.Contains(p.body, `"code":"INVALID_REQUEST"`) {
		t.Errorf("unknown API route: %d %s", p.status, p.body)
	}
}

var (
	caseState   = regexp.MustCompile(`id="case-state">([a-z_]+)<`)
	caseVersion = regexp.MustCompile(`<span id="case-version">([0-9]+)</span>`)
	// caseEvent is a row of the case page's history: its version and kind.
	caseEvent = regexp.MustCompile(`<tr><td>[^<]*</td><td>([0-9]+)</td><td>[^<]*<code>([a-z_.]+)</code></td>`)
)

// checkCasePage checks that p, the case page of 5105600102, shows the case
// as the records hold it: state, version, counts and every event in order.
func checkCasePage(t *testing.T, s *site, p page, state string) records.Case {
	t.Helper()
	ctx := context.Background()
	cs, err := s.records.Case(ctx, "5105600102")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.records.CaseEvents(ctx, "5105600102", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.status != http.StatusOK {
		t.Fatalf("case page: %d %s", p.status, p.body)
	}
	if m := caseState.FindStringSubmatch(p.body); m == nil || m[1] != state || cs.State != state {
		t.Errorf("case page state %v, records %s, want %s", m, cs.State, state)
	}
	if m := caseVersion.FindStringSubmatch(p.body); m == nil || m[1] != fmt.Sprint(cs.Version) {
		t.Errorf("case page version %v, want %d", m, cs.Version)
	}
	if want := fmt.Sprintf(`<span id="case-calls">%d</span> calls in <span id="case-runs">%d</span> runs`, cs.Calls, cs.Runs); !strings.Contains(p.body, want) {
		t.Errorf("case page lacks %q", want)
	}
	rows := caseEvent.FindAllStringSubmatch(p.body, -1)
	if len(rows) != len(evs) {
		t.Fatalf("case page shows %d events, the records hold %d: %v", len(rows), len(evs), rows)
	}
	for i, ev := range evs {
		if rows[i][1] != fmt.Sprint(ev.Version) || rows[i][2] != ev.Kind {
			t.Errorf("history row %d: version %s %s, want %d %s", i, rows[i][1], rows[i][2], ev.Version, ev.Kind)
		}
	}
	return cs
}

var caseLink = regexp.MustCompile(`href="(/console/cases/5105600102)"`)

func TestCasePage(t *testing.T) {
	s := newSite(t)
	const run = "run-case-0102"
	// The agent asks for a decision and holds the invoice until it is
	// taken, in one run.
	approval := s.requestApprovalIn("accept_variance", run)
	p := s.agent(http.MethodPost, "/invoices/5105600102/hold", `{"reason":"Approval `+approval+` is pending a person's decision."}`, run)
	m := regexp.MustCompile(`"hold_id":"(H[0-9]+)"`).FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || !strings.Contains(p.body, `"approval_id":"`+approval+`"`) {
		t.Fatalf("hold: %d %s, want held waiting for %s", p.status, p.body, approval)
	}
	hold := m[1]

	b := s.browser()
	b.signIn(kellerKey)
	// The holds page says what the hold waits for, and leads to the
	// approval and to the case.
	holds := b.get("/console/holds")
	approvalLink := `href="/console/approvals/` + approval + `"`
	for _, want := range []string{`<tr id="hold-` + hold + `">`, "Decision on approval <a " + approvalLink + ">" + approval + "</a>"} {
		if !strings.Contains(holds.body, want) {
			t.Errorf("holds page lacks %q", want)
		}
	}
	link := caseLink.FindStringSubmatch(holds.body)
	if link == nil {
		t.Fatalf("the holds page does not link 5105600102 to its case: %s", holds.body)
	}
	p = b.get(link[1])
	before := checkCasePage(t, s, p, records.CaseOnHold)
	for _, want := range []string{
		`<a href="/console/holds?invoice_id=5105600102#hold-` + hold + `">` + hold + `</a> held`,
		"<a " + approvalLink + ">" + approval + `</a> <span class="tag">pending</span>`,
		"approval.requested", "hold.placed",
		`<a href="/console/runs?run_id=` + run + `">` + run + `</a>`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("case page on hold lacks %q", want)
		}
	}
	if before.Version < 2 {
		t.Errorf("version %d after an approval and a hold, want at least 2", before.Version)
	}
	// The approval link of the holds page shows the approval, to decide.
	a := b.get(strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(approvalLink, `href="`), `"`), "&amp;", "&"))
	if !strings.Contains(a.body, `id="approval-`+approval+`"`) || !strings.Contains(a.body, `action="/console/approvals/`+approval+`/decision"`) {
		t.Fatalf("the approval link leads to no decision form of %s: %d", approval, a.status)
	}

	// The person's decision releases the hold; the case is ready to post.
	tok := csrfInput.FindStringSubmatch(a.body)[1]
	if p := b.post("/console/approvals/"+approval+"/decision", url.Values{"csrf_token": {tok}, "decision": {"approve"},
		"reason": {"Surcharge confirmed with the supplier."}}); p.status != http.StatusSeeOther {
		t.Fatalf("decision: %d %s", p.status, p.body)
	}
	// The approved approval on the approvals page leads to the case too.
	approved := b.get("/console/approvals?status=approved")
	link = caseLink.FindStringSubmatch(approved.body)
	if link == nil {
		t.Fatalf("the approvals page does not link 5105600102 to its case")
	}
	p = b.get(link[1])
	after := checkCasePage(t, s, p, records.CaseReady)
	if after.Version <= before.Version {
		t.Errorf("version %d after the decision, was %d", after.Version, before.Version)
	}
	for _, want := range []string{"approval.decided", "hold.released", "none open", `<span class="tag">approved</span>`,
		`<a href="/console/holds?invoice_id=5105600102&amp;status=released#hold-` + hold + `">` + hold + `</a>`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("case page after the decision lacks %q", want)
		}
	}

	// Anyone signed in reads a case, the AP team too; nobody else.
	reviewer := s.browser()
	reviewer.signIn(reviewerKey)
	if p := reviewer.get("/console/cases/5105600102"); p.status != http.StatusOK || !strings.Contains(p.body, "approval.decided") {
		t.Errorf("case page for the AP team: %d", p.status)
	}
	if p := s.browser().get("/console/cases/5105600102"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/console/sign-in") {
		t.Errorf("case page signed out: got %d to %q, want the sign-in", p.status, p.location)
	}
	// An invoice without a case yet is said so; an id of another form is
	// no page.
	if p := b.get("/console/cases/5105600106"); p.status != http.StatusOK || !strings.Contains(p.body, "has no case yet") {
		t.Errorf("an invoice without a case: %d, want 200 saying so", p.status)
	}
	for _, path := range []string{"/console/cases/510560010", "/console/cases/51056001020", "/console/cases/510560010x",
		"/console/cases/5105600102%20", "/console/cases/5105600102/events", "/console/cases/", "/console/cases"} {
		if p := b.get(path); p.status != http.StatusNotFound || !strings.Contains(p.body, "INVALID_REQUEST") {
			t.Errorf("GET %s: %d, want the 404 page", path, p.status)
		}
	}
}

// hiding is the API server with one client taken out of its
// configuration, as after a restart without that key.
type hiding struct {
	console.Gateway
	name atomic.Value
}

func (h *hiding) ClientNamed(name string) (api.Credential, bool) {
	if hidden, _ := h.name.Load().(string); hidden == name {
		return api.Credential{}, false
	}
	return h.Gateway.ClientNamed(name)
}

func TestSessionEnds(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	var gw *hiding
	s := newSite(t, func(o *console.Options) {
		o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
		gw = &hiding{Gateway: o.Gateway}
		o.Gateway = gw
	})
	signedIn := func(b *browser) bool {
		p := b.get("/console/approvals")
		return p.status == http.StatusOK
	}

	b := s.browser()
	b.signIn(doeKey)
	if !signedIn(b) {
		t.Fatal("not signed in after sign-in")
	}
	clock.Add(int64(console.DefaultSessionTTL - time.Minute))
	if !signedIn(b) {
		t.Fatal("the session ended before its lifetime")
	}
	clock.Add(int64(2 * time.Minute))
	if signedIn(b) {
		t.Fatal("the session outlived its lifetime")
	}

	b = s.browser()
	b.signIn(doeKey)
	gw.name.Store("j.doe")
	if signedIn(b) {
		t.Fatal("the session outlived its key's removal from the configuration")
	}
}

func TestSecureCookiesUnderTLS(t *testing.T) {
	s := newSite(t)
	serve := func(req *http.Request) *httptest.ResponseRecorder {
		req.TLS = &tls.ConnectionState{}
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		return rec
	}
	signin := serve(httptest.NewRequest(http.MethodGet, "https://gateway.example/console/sign-in", nil))
	csrf := signin.Result().Cookies()
	if len(csrf) != 1 || !csrf[0].Secure {
		t.Fatalf("CSRF cookie under TLS: %+v, want one Secure cookie", csrf)
	}
	tok := csrfInput.FindStringSubmatch(signin.Body.String())[1]
	req := httptest.NewRequest(http.MethodPost, "https://gateway.example/console/sign-in",
		strings.NewReader(url.Values{"csrf_token": {tok}, "key": {kellerKey}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(csrf[0])
	rec := serve(req)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in under TLS: %d %s", rec.Code, rec.Body)
	}
	found := false
	for _, c := range rec.Result().Cookies() {
		if c.Name != "erpgate_console" {
			continue
		}
		found = true
		if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
			t.Errorf("session cookie under TLS: %+v, want Secure, HttpOnly, SameSite=Strict", c)
		}
	}
	if !found {
		t.Error("no session cookie after sign-in under TLS")
	}
}
