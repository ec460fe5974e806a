// Package eval is "erpgate eval": it plays the reference agent over the
// golden set, each case against a fresh gateway over the simulated ERP,
// and reports what each case cost and how it ended.
package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/erpgate/erpgate/cmd/erpgate/internal/cli"
	"github.com/erpgate/erpgate/cmd/internal/gateway"
)

// The final outcomes of a case.
const (
	outcomePosted          = "POSTED"
	outcomeHeld            = "HELD"
	outcomeHeldForApproval = "HELD_FOR_APPROVAL"
	outcomeHandedOver      = "HANDED_OVER"
	outcomeEscalated       = "ESCALATED"
	outcomeHandoverRefused = "HANDOVER_REFUSED"
	outcomeStopped         = "STOPPED"
)

// evalCase is one scripted case: an invoice of the golden set, how the agent
// starts on it, and what it must end with.
type evalCase struct {
	name      string
	invoiceID string
	// postFirst makes the agent's first step a post_invoice without an
	// approval: the careless start the gateway has to steer back.
	postFirst bool
	first     string // the first named outcome the agent meets
	final     string
	queue     string // the handover queue; "" when the case ends in none
	retries   int    // corrected retries
}

func evalCases() []evalCase {
	return []evalCase{
		{name: "clean", invoiceID: "5105600101", first: "MATCHED", final: outcomePosted},
		{name: "tolerance exceeded", invoiceID: "5105600102", first: "TOLERANCE_EXCEEDED", final: outcomeHeldForApproval},
		{name: "invoice not found", invoiceID: "5105600999", first: "INVOICE_NOT_FOUND", final: outcomeHandedOver, queue: "ap_queue", retries: 1},
		{name: "PO not found", invoiceID: "5105600103", first: "PO_NOT_FOUND", final: outcomeHandedOver, queue: "ap_queue", retries: 1},
		{name: "supplier not found", invoiceID: "5105600104", first: "SUPPLIER_NOT_FOUND", final: outcomeHandedOver, queue: "master_data", retries: 1},
		{name: "GR missing", invoiceID: "5105600105", first: "GR_MISSING", final: outcomeHeld},
		{name: "PO closed", invoiceID: "5105600106", first: "PO_CLOSED", final: outcomeHandedOver, queue: "procurement"},
		{name: "duplicate invoice", invoiceID: "5105600107", first: "DUPLICATE_INVOICE", final: outcomeHandedOver, queue: "ap_team"},
		{name: "approver not found", invoiceID: "5105600108", first: "MATCHED", final: outcomeHandedOver, queue: "ap_lead"},
		{name: "period closed", invoiceID: "5105600109", first: "MATCHED", final: outcomeEscalated, queue: "finance"},
		{name: "posted first", invoiceID: "5105600101", postFirst: true, first: "APPROVAL_MISSING", final: outcomePosted},
	}
}

// evalCorrection is what the agent reads off an invoice's source document
// for an id the ERP did not know, and the read that checks it.
type evalCorrection struct {
	code      string // the not-found code it answers
	field     string // the details field holding the id the ERP did not know
	wrong     string
	right     string
	noun      string // how a person names the id
	operation string
	path      string // the read's path before the id
}

// sourceDocument returns the correction for a not-found error, if the source
// document gives one.
func sourceDocument(p *evalProblem) (evalCorrection, bool) {
	for _, c := range []evalCorrection{
		{code: "INVOICE_NOT_FOUND", field: "invoice_id", wrong: "5105600999", right: "5105600099",
			noun: "invoice", operation: "get_invoice", path: "/invoices/"},
		{code: "PO_NOT_FOUND", field: "po_id", wrong: "4500019822", right: "4500018822",
			noun: "PO", operation: "get_purchase_order", path: "/purchase-orders/"},
		{code: "SUPPLIER_NOT_FOUND", field: "supplier_id", wrong: "100999", right: "100099",
			noun: "supplier", operation: "get_supplier", path: "/suppliers/"},
	} {
		if c.code == p.Code && p.detail(c.field) == c.wrong {
			return c, true
		}
	}
	return evalCorrection{}, false
}

// evalRow is the result of one case.
type evalRow struct {
	InvoiceID string   `json:"invoice_id"`
	Case      string   `json:"case"`
	FirstCode string   `json:"first_code"`
	Codes     []string `json:"codes"` // every named outcome met, in order
	Final     string   `json:"final"`
	Calls     int      `json:"calls"`
	Retries   int      `json:"corrected_retries"`
	Queue     string   `json:"queue"`
	Loops     int      `json:"loops"` // calls the gateway refused as LOOP_DETECTED
	Expected  bool     `json:"expected"`
	Missed    []string `json:"missed,omitempty"`
}

// evalTotals sums the rows.
type evalTotals struct {
	Cases     int `json:"cases"`
	Calls     int `json:"calls"`
	Retries   int `json:"corrected_retries"`
	Handovers int `json:"handovers"`
	Holds     int `json:"holds"`
	Posted    int `json:"posted"`
	Loops     int `json:"loops"`
	Expected  int `json:"expected"`
}

// Run plays the reference agent over the golden set, one fresh gateway
// and simulated ERP per case, and prints what each case cost and how it
// ended. It fails when a case missed its expected outcome or the gateway saw
// a loop. args are the flags after "erpgate eval"; -h prints them to stderr
// and returns flag.ErrHelp.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("erpgate eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the rows as JSON instead of a table")
	if err := cli.ParseFlags(fs, args, "erpgate eval -h"); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("eval: unexpected arguments %q", fs.Args())
	}
	rows, err := evaluate(ctx)
	if err != nil {
		return err
	}
	return report(stdout, rows, *asJSON)
}

// evaluate plays every case and returns its row.
func evaluate(ctx context.Context) ([]evalRow, error) {
	var rows []evalRow
	for i, c := range evalCases() {
		row, err := evalOne(ctx, fmt.Sprintf("eval-%02d-%s", i+1, c.invoiceID), c)
		if err != nil {
			return nil, fmt.Errorf("eval: case %s %q: %w", c.invoiceID, c.name, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// report prints the rows and their totals, as JSON or a table, and fails
// when a case missed its expected outcome or the gateway saw a loop.
func report(w io.Writer, rows []evalRow, asJSON bool) error {
	totals := sumRows(rows)
	var err error
	if asJSON {
		err = printEvalJSON(w, rows, totals)
	} else {
		err = printEvalTable(w, rows, totals)
	}
	if err != nil {
		return err
	}
	if totals.Expected != totals.Cases || totals.Loops > 0 {
		return fmt.Errorf("eval: %d of %d cases reached their expected outcome; %d loops",
			totals.Expected, totals.Cases, totals.Loops)
	}
	return nil
}

// evalOne plays one case against a stack of its own, so that no case sees
// another's approvals, holds or postings.
func evalOne(ctx context.Context, runID string, c evalCase) (evalRow, error) {
	base, stop, err := startEvalStack(ctx)
	if err != nil {
		return evalRow{}, err
	}
	defer stop()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	a := &evalAgent{ctx: ctx, client: &http.Client{Transport: transport, Timeout: 30 * time.Second},
		base: base, runID: runID, sent: map[string]bool{}}
	out, err := a.play(c)
	if err != nil {
		return evalRow{}, err
	}
	loops, err := a.loopsSeen()
	if err != nil {
		return evalRow{}, err
	}
	return judge(c, a, out, loops), nil
}

// judge compares what the agent reached with what the case expects.
func judge(c evalCase, a *evalAgent, out evalOutcome, loops int) evalRow {
	row := evalRow{InvoiceID: c.invoiceID, Case: c.name, FirstCode: "-", Codes: a.codes, Final: out.final,
		Calls: a.calls, Retries: a.retries, Queue: out.queue, Loops: loops}
	if len(a.codes) > 0 {
		row.FirstCode = a.codes[0]
	}
	miss := func(what, got, want string) {
		if got != want {
			row.Missed = append(row.Missed, fmt.Sprintf("%s %q, want %q", what, got, want))
		}
	}
	miss("first code", row.FirstCode, c.first)
	miss("final", row.Final, c.final)
	miss("queue", row.Queue, c.queue)
	miss("corrected retries", fmt.Sprint(row.Retries), fmt.Sprint(c.retries))
	row.Expected = len(row.Missed) == 0
	return row
}

func sumRows(rows []evalRow) evalTotals {
	var t evalTotals
	for _, r := range rows {
		t.Cases++
		t.Calls += r.Calls
		t.Retries += r.Retries
		t.Loops += r.Loops
		switch r.Final {
		case outcomeHandedOver, outcomeEscalated:
			t.Handovers++
		case outcomeHeld, outcomeHeldForApproval:
			t.Holds++
		case outcomePosted:
			t.Posted++
		}
		if r.Expected {
			t.Expected++
		}
	}
	return t
}

func printEvalJSON(w io.Writer, rows []evalRow, t evalTotals) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Rows   []evalRow  `json:"rows"`
		Totals evalTotals `json:"totals"`
	}{rows, t})
}

func printEvalTable(w io.Writer, rows []evalRow, t evalTotals) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INVOICE\tCASE\tFIRST CODE\tFINAL\tCALLS\tRETRIES\tQUEUE\tEXPECTED")
	for _, r := range rows {
		queue, ok := r.Queue, "yes"
		if queue == "" {
			queue = "-"
		}
		if !r.Expected {
			ok = "NO: " + strings.Join(r.Missed, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.InvoiceID, r.Case, r.FirstCode, r.Final,
			r.Calls, r.Retries, queue, ok)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total: %d cases, %d calls, %d corrected retries, %d handovers, %d holds, %d posted, loops: %d, expected: %d/%d\n",
		t.Cases, t.Calls, t.Retries, t.Handovers, t.Holds, t.Posted, t.Loops, t.Expected, t.Cases)
	return err
}

// startEvalStack starts a gateway over a simulated ERP seeded with the
// golden set, both on loopback, and returns the gateway's URL.
func startEvalStack(ctx context.Context) (string, func(), error) {
	gw, err := gateway.New(ctx, gateway.Config{})
	if err != nil {
		return "", nil, err
	}
	gwURL, stopGW, err := serveLoopback(gw.Handler())
	if err != nil {
		gw.Close()
		return "", nil, err
	}
	return gwURL, func() { stopGW(); gw.Close() }, nil
}

// serveLoopback serves h on a free loopback port until the returned stop is
// called.
func serveLoopback(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// evalProblem is a five-field error body.
type evalProblem struct {
	Code       string         `json:"code"`
	Message    string         `json:"message"`
	Retryable  bool           `json:"retryable"`
	NextAction string         `json:"next_action"`
	Details    map[string]any `json:"details"`
}

// detail returns a details field as a string, "" when absent.
func (p *evalProblem) detail(key string) string {
	if v, ok := p.Details[key]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// ids names the ids in details, in a stable order.
func (p *evalProblem) ids() string {
	keys := make([]string, 0, len(p.Details))
	for k, v := range p.Details {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + p.detail(k)
	}
	return strings.Join(parts, ", ")
}

// evalReply is one answer: a success body, or the problem of a failure.
type evalReply struct {
	body    []byte
	problem *evalProblem
}

// evalOutcome is how the agent's work on an invoice ended.
type evalOutcome struct {
	final string
	queue string
}

// evalAgent is the reference agent: it follows next_action literally, makes
// at most one corrected retry, and never sends the same call twice.
type evalAgent struct {
	ctx      context.Context
	client   *http.Client
	base     string
	runID    string
	sent     map[string]bool // method, path and body of every call made
	calls    int
	writes   int
	retries  int
	approved bool // request_approval was called
	codes    []string
	evidence []string
}

// call sends one tool call in the agent's run and records what it learned.
// label names the call in the evidence a handover carries.
func (a *evalAgent) call(label, method, path string, body any) (evalReply, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return evalReply{}, err
		}
	}
	sig := method + " " + path + " " + string(raw)
	if a.sent[sig] {
		return evalReply{}, fmt.Errorf("the agent was about to repeat %s", sig)
	}
	a.sent[sig] = true
	req, err := http.NewRequestWithContext(a.ctx, method, a.base+path, bytes.NewReader(raw))
	if err != nil {
		return evalReply{}, err
	}
	req.Header.Set("X-Run-Id", a.runID)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// run_three_way_match is a POST that changes nothing: the other POSTs
	// are the writes.
	if method == http.MethodPost && !strings.HasSuffix(path, "/three-way-match") {
		a.writes++
		req.Header.Set("Idempotency-Key", fmt.Sprintf("%s:%d", a.runID, a.writes))
	}
	a.calls++
	reply, err := a.send(req)
	if err != nil {
		return evalReply{}, fmt.Errorf("%s: %w", label, err)
	}
	a.note(label, reply)
	return reply, nil
}

func (a *evalAgent) send(req *http.Request) (evalReply, error) {
	resp, err := a.client.Do(req)
	if err != nil {
		return evalReply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return evalReply{}, err
	}
	if resp.StatusCode < 300 {
		return evalReply{body: raw}, nil
	}
	var p evalProblem
	if err := json.Unmarshal(raw, &p); err != nil || p.Code == "" {
		return evalReply{}, fmt.Errorf("status %d without a problem body: %s", resp.StatusCode, raw)
	}
	return evalReply{problem: &p}, nil
}

// note keeps a failure's code and one line of evidence per call.
func (a *evalAgent) note(label string, r evalReply) {
	if r.problem == nil {
		a.evidence = append(a.evidence, label+": OK")
		return
	}
	a.codes = append(a.codes, r.problem.Code)
	a.evidence = append(a.evidence, fmt.Sprintf("%s: %s (%s)", label, r.problem.Code, r.problem.ids()))
}

// play works one case from its first call to a handover, hold or posting.
func (a *evalAgent) play(c evalCase) (evalOutcome, error) {
	id := c.invoiceID
	if c.postFirst {
		return a.post(id, "")
	}
	r, err := a.call("get_invoice "+id, http.MethodGet, "/invoices/"+id, nil)
	if err != nil || r.problem != nil {
		return a.followOrFail(id, r, err)
	}
	r, err = a.call("run_three_way_match "+id, http.MethodPost, "/invoices/"+id+"/three-way-match", struct{}{})
	if err != nil || r.problem != nil {
		return a.followOrFail(id, r, err)
	}
	var m evalMatch
	if err := json.Unmarshal(r.body, &m); err != nil {
		return evalOutcome{}, fmt.Errorf("run_three_way_match: %w", err)
	}
	a.codes = append(a.codes, m.Result)
	a.evidence[len(a.evidence)-1] = fmt.Sprintf("run_three_way_match %s: %s", id, m.Result)
	action, why := m.proposal()
	return a.requestApproval(id, action, why)
}

func (a *evalAgent) followOrFail(invoiceID string, r evalReply, err error) (evalOutcome, error) {
	if err != nil {
		return evalOutcome{}, err
	}
	return a.follow(invoiceID, r.problem)
}

// follow makes the move the error's next_action asks for.
func (a *evalAgent) follow(invoiceID string, p *evalProblem) (evalOutcome, error) {
	switch p.NextAction {
	case "fix_input_and_retry":
		return a.correct(invoiceID, p)
	case "hold_and_recheck":
		reason, final := holdReason(p)
		return a.hold(invoiceID, reason, final)
	case "route_to_person":
		return a.handOver(invoiceID, p, p.detail("queue"), "", outcomeHandedOver)
	case "stop_and_escalate":
		if p.detail("queue") == "" {
			return evalOutcome{final: outcomeStopped}, nil
		}
		return a.handOver(invoiceID, p, p.detail("queue"), "", outcomeEscalated)
	case "request_approval":
		if a.approved {
			return evalOutcome{final: outcomeStopped}, nil
		}
		return a.requestApproval(invoiceID, "post_as_invoiced", fmt.Sprintf(
			"Posting invoice %s was refused with %s (reason %s); it is to be posted as invoiced.",
			invoiceID, p.Code, p.detail("reason")))
	}
	return evalOutcome{final: outcomeStopped}, nil
}

// correct makes the one corrected retry the source document allows, then
// hands the invoice over: a read that now succeeds does not change the id
// the invoice carries in the ERP.
func (a *evalAgent) correct(invoiceID string, p *evalProblem) (evalOutcome, error) {
	fix, ok := sourceDocument(p)
	if !ok {
		return a.handOver(invoiceID, p, p.detail("queue"), "The source document gives no other value.", outcomeHandedOver)
	}
	a.retries++
	r, err := a.call(fix.operation+" "+fix.right, http.MethodGet, fix.path+fix.right, nil)
	if err != nil {
		return evalOutcome{}, err
	}
	queue := p.detail("queue")
	note := fmt.Sprintf("The source document reads %s %s, which the ERP knows, but the invoice in the ERP still references %s %s.",
		fix.noun, fix.right, fix.noun, fix.wrong)
	if r.problem != nil {
		if q := r.problem.detail("queue"); q != "" {
			queue = q
		}
		note = fmt.Sprintf("The source document reads %s %s, which the ERP does not know either.", fix.noun, fix.right)
	}
	return a.handOver(invoiceID, p, queue, note, outcomeHandedOver)
}

// holdReason names what the invoice waits for, and the outcome the hold is.
func holdReason(p *evalProblem) (string, string) {
	switch {
	case p.detail("approval_id") != "":
		return fmt.Sprintf("Approval %s is pending a person's decision", p.detail("approval_id")), outcomeHeldForApproval
	case p.detail("po_id") != "" && p.detail("item") != "":
		return fmt.Sprintf("No goods receipt yet for PO %s item %s (%s)", p.detail("po_id"), p.detail("item"), p.Code), outcomeHeld
	}
	return fmt.Sprintf("%s (%s); waiting for the scheduled re-check", p.Code, p.ids()), outcomeHeld
}

func (a *evalAgent) hold(invoiceID, reason, final string) (evalOutcome, error) {
	r, err := a.call("hold_invoice "+invoiceID, http.MethodPost, "/invoices/"+invoiceID+"/hold",
		map[string]string{"reason": reason})
	if err != nil {
		return evalOutcome{}, err
	}
	if r.problem != nil {
		return evalOutcome{final: outcomeStopped}, nil
	}
	return evalOutcome{final: final}, nil
}

// handOver routes the invoice to queue (the gateway picks the code's queue
// when it is ""), with the error's message, note and every call's evidence.
func (a *evalAgent) handOver(invoiceID string, p *evalProblem, queue, note, final string) (evalOutcome, error) {
	body := struct {
		InvoiceID string   `json:"invoice_id"`
		Code      string   `json:"code"`
		Queue     string   `json:"queue,omitempty"`
		Summary   string   `json:"summary"`
		Evidence  []string `json:"evidence"`
	}{invoiceID, p.Code, queue, strings.TrimSpace(fmt.Sprintf("Invoice %s needs a person: %s (%s). %s",
		invoiceID, p.Code, p.ids(), note)), append([]string(nil), a.evidence...)}
	r, err := a.call("hand_over "+invoiceID, http.MethodPost, "/handovers", body)
	if err != nil {
		return evalOutcome{}, err
	}
	if r.problem != nil {
		return evalOutcome{final: outcomeHandoverRefused}, nil
	}
	var h struct {
		Queue string `json:"queue"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		return evalOutcome{}, fmt.Errorf("hand_over: %w", err)
	}
	return evalOutcome{final: final, queue: h.Queue}, nil
}

// requestApproval asks for the proposed action; an approval granted at once
// is posted, one waiting for a person puts the invoice on hold.
func (a *evalAgent) requestApproval(invoiceID, action, justification string) (evalOutcome, error) {
	a.approved = true
	r, err := a.call("request_approval "+invoiceID, http.MethodPost, "/invoices/"+invoiceID+"/approvals",
		map[string]string{"proposed_action": action, "justification": justification})
	if err != nil || r.problem != nil {
		return a.followOrFail(invoiceID, r, err)
	}
	var ap struct {
		ApprovalID string `json:"approval_id"`
		Status     string `json:"status"`
	}
	if err := json.Unmarshal(r.body, &ap); err != nil {
		return evalOutcome{}, fmt.Errorf("request_approval: %w", err)
	}
	switch ap.Status {
	case "approved":
		return a.post(invoiceID, ap.ApprovalID)
	case "pending":
		return a.hold(invoiceID, fmt.Sprintf("Approval %s is pending a person's decision", ap.ApprovalID), outcomeHeldForApproval)
	}
	return evalOutcome{final: outcomeStopped}, nil
}

// post posts the invoice; approvalID "" is the careless post without one.
func (a *evalAgent) post(invoiceID, approvalID string) (evalOutcome, error) {
	body := map[string]string{}
	if approvalID != "" {
		body["approval_id"] = approvalID
	}
	r, err := a.call("post_invoice "+invoiceID, http.MethodPost, "/invoices/"+invoiceID+"/post", body)
	if err != nil || r.problem != nil {
		return a.followOrFail(invoiceID, r, err)
	}
	var p struct {
		InfoCode string `json:"info_code"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		return evalOutcome{}, fmt.Errorf("post_invoice: %w", err)
	}
	if p.InfoCode != "" {
		a.codes = append(a.codes, p.InfoCode)
	}
	return evalOutcome{final: outcomePosted}, nil
}

// loopsSeen reads the run as the gateway recorded it and counts the calls
// it refused as loops. It is the evaluator's read, not the agent's call.
func (a *evalAgent) loopsSeen() (int, error) {
	req, err := http.NewRequestWithContext(a.ctx, http.MethodGet, a.base+"/runs/"+a.runID, nil)
	if err != nil {
		return 0, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("get_run %s: status %d", a.runID, resp.StatusCode)
	}
	var run struct {
		Calls []struct {
			Code    string `json:"code"`
			Refused bool   `json:"refused"`
		} `json:"calls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&run); err != nil {
		return 0, fmt.Errorf("get_run %s: %w", a.runID, err)
	}
	if len(run.Calls) != a.calls {
		return 0, fmt.Errorf("get_run %s: the gateway recorded %d calls, the agent made %d", a.runID, len(run.Calls), a.calls)
	}
	loops := 0
	for _, c := range run.Calls {
		if c.Refused && c.Code == "LOOP_DETECTED" {
			loops++
		}
	}
	return loops, nil
}

// evalMatch is the part of a three-way match result the agent reads.
type evalMatch struct {
	InvoiceID string `json:"invoice_id"`
	Result    string `json:"result"`
	Currency  string `json:"currency"`
	Lines     []struct {
		InvoiceItem       string `json:"invoice_item"`
		POID              string `json:"po_id"`
		POItem            string `json:"po_item"`
		InvoicedUnitPrice string `json:"invoiced_unit_price"`
		POUnitPrice       string `json:"po_unit_price"`
	} `json:"lines"`
	Exceeding []struct {
		InvoiceItem     string `json:"invoice_item"`
		Kind            string `json:"kind"`
		VarianceAmount  string `json:"variance_amount"`
		VariancePercent string `json:"variance_percent"`
	} `json:"exceeding"`
}

// maxJustification is the contract's limit on a justification, in bytes
// here: the agent's own text is ASCII.
const maxJustification = 500

// proposal is the action to propose after a match and its justification,
// naming every variance the match found.
func (m evalMatch) proposal() (string, string) {
	if m.Result != "TOLERANCE_EXCEEDED" {
		return "post_as_invoiced", fmt.Sprintf("Three-way match of invoice %s is MATCHED on every line.", m.InvoiceID)
	}
	var parts []string
	for _, e := range m.Exceeding {
		s := fmt.Sprintf("line %s %s variance %s %s (%s %%)", e.InvoiceItem, e.Kind, e.VarianceAmount, m.Currency, e.VariancePercent)
		for _, l := range m.Lines {
			if l.InvoiceItem == e.InvoiceItem {
				s += fmt.Sprintf(", unit price %s against PO %s item %s at %s", l.InvoicedUnitPrice, l.POID, l.POItem, l.POUnitPrice)
			}
		}
		parts = append(parts, s)
	}
	why := fmt.Sprintf("Three-way match of invoice %s is TOLERANCE_EXCEEDED: %s. Accept the variance as invoiced.",
		m.InvoiceID, strings.Join(parts, "; "))
	if len(why) > maxJustification {
		why = why[:maxJustification]
	}
	return "accept_variance", why
}
