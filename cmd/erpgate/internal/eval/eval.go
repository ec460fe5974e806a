// Package eval is "erpgate eval": it plays the reference agent over the
// golden set, each case against a fresh gateway over the simulated ERP,
// and reports what each case cost and how it ended. Some cases cross time
// in one run: a person decides, or the goods arrive, while the invoice is
// held, and the agent goes on when its platform is told.
package eval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/erpgate/erpgate/cmd/erpgate/internal/cli"
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
// starts on it, what happens while the invoice is held, and what it must
// end with.
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

	// decisions are a person's decisions ("approve", "reject" or
	// "send_back"), one each time the held invoice waits for an approval,
	// and receipt the goods receipt that arrives for the held invoice.
	// With either the case crosses time: the agent resumes in the same run
	// each time its platform is told that the hold was released.
	decisions []string
	receipt   *evalReceipt
	// advised is the operation the hold.released event names as the next
	// call; "" when the case awaits no event.
	advised string
	// lostAnswers loses the first answer to every create on its way back
	// to the agent, which sends no Idempotency-Key and so sends the same
	// call again.
	lostAnswers bool
	// eager makes the agent re-check its pending approval a second time
	// with nothing changed in between.
	eager bool
	// loops is how many calls the gateway must refuse as LOOP_DETECTED.
	loops int
	// caseState is the state the gateway must report for the invoice's
	// case at the end; "" leaves it unchecked.
	caseState string
}

// evalReceipt is a goods receipt a warehouse clerk posts in the ERP.
type evalReceipt struct {
	po, item, quantity string
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
		{name: "approved while held", invoiceID: "5105600102", first: "TOLERANCE_EXCEEDED", final: outcomePosted,
			decisions: []string{"approve"}, advised: "post_invoice", caseState: "posted"},
		{name: "rejected while held", invoiceID: "5105600102", first: "TOLERANCE_EXCEEDED", final: outcomeHandedOver, queue: "ap_queue",
			decisions: []string{"reject"}, advised: "hand_over", caseState: "handed_over"},
		{name: "goods arrive while held", invoiceID: "5105600105", first: "GR_MISSING", final: outcomePosted,
			receipt: &evalReceipt{po: "4500018822", item: "20", quantity: "5"}, advised: "run_three_way_match", caseState: "posted"},
		{name: "lost answers repeated", invoiceID: "5105600102", first: "TOLERANCE_EXCEEDED", final: outcomeHeldForApproval,
			lostAnswers: true, caseState: "on_hold"},
		{name: "re-check loop", invoiceID: "5105600102", first: "TOLERANCE_EXCEEDED", final: outcomeHandedOver, queue: "ap_queue",
			eager: true, loops: 1, caseState: "handed_over"},
		{name: "sent back while held", invoiceID: "5105600102", first: "TOLERANCE_EXCEEDED", final: outcomePosted,
			decisions: []string{"send_back", "approve"}, advised: "post_invoice", caseState: "posted"},
	}
}

// waits says whether the case lets something arrive while the invoice is
// held.
func (c evalCase) waits() bool { return len(c.decisions) > 0 || c.receipt != nil }

// sentBack says whether a person sends the case's approval back with a
// question.
func (c evalCase) sentBack() bool { return slices.Contains(c.decisions, "send_back") }

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
	// ExpectedLoops is how many of Loops the case is built to meet: a
	// loop the gateway must stop.
	ExpectedLoops int `json:"expected_loops"`
	// Repeats counts the calls the agent sent again on purpose, with the
	// same arguments: after what it waited for arrived, after a lost
	// answer, or to show that a loop is stopped.
	Repeats int `json:"repeats"`
	// ResumedOn is the event that made the agent go on with a held
	// invoice in the same run, and Advised the next call the event named.
	ResumedOn string `json:"resumed_on,omitempty"`
	Advised   string `json:"advised,omitempty"`
	// CaseState is the state of the invoice's case the gateway reports at
	// the end; "" when it has none (an invoice the ERP does not know).
	CaseState string   `json:"case_state,omitempty"`
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
	Loops     int `json:"loops"` // every LOOP_DETECTED refusal
	// ExpectedLoops are the loops the cases were built to meet;
	// UnexpectedLoops the others, which fail the eval.
	ExpectedLoops   int `json:"expected_loops"`
	UnexpectedLoops int `json:"unexpected_loops"`
	Expected        int `json:"expected"`
}

// Run plays the reference agent over the golden set, one fresh gateway
// and simulated ERP per case, and prints what each case cost and how it
// ended. It fails when a case missed its expected outcome or the gateway saw
// a loop no case was built to meet. args are the flags after "erpgate
// eval"; -h prints them to stderr and returns flag.ErrHelp.
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
// when a case missed its expected outcome or the gateway saw a loop no case
// expected.
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
	if totals.Expected != totals.Cases || totals.UnexpectedLoops > 0 {
		return fmt.Errorf("eval: %d of %d cases reached their expected outcome; %d unexpected loops",
			totals.Expected, totals.Cases, totals.UnexpectedLoops)
	}
	return nil
}

// evalOne plays one case against a stack of its own, so that no case sees
// another's approvals, holds or postings.
func evalOne(ctx context.Context, runID string, c evalCase) (evalRow, error) {
	st, err := startEvalStack(ctx)
	if err != nil {
		return evalRow{}, err
	}
	defer st.stop()
	a := newEvalAgent(ctx, st, runID, c.lostAnswers)
	defer a.transport.CloseIdleConnections()
	out, err := a.play(c)
	if err != nil {
		return evalRow{}, err
	}
	if out, err = goOn(ctx, st, a, c, out); err != nil {
		return evalRow{}, err
	}
	facts, err := st.read(ctx, a, c.invoiceID, out)
	if err != nil {
		return evalRow{}, err
	}
	return judge(c, a, out, facts), nil
}

// goOn plays what happens after the agent's first pass: while the invoice
// is held a person decides or the goods arrive, and the agent resumes in
// the same run when its platform is told the hold was released, as many
// times as the invoice is held again for a person's decision; or the
// agent re-checks its pending approval too eagerly.
func goOn(ctx context.Context, st *evalStack, a *evalAgent, c evalCase, out evalOutcome) (evalOutcome, error) {
	switch {
	case c.eager && out.final == outcomeHeldForApproval:
		return a.recheckTwice(c.invoiceID)
	case len(c.decisions) > 0:
		for _, d := range c.decisions {
			if out.final != outcomeHeldForApproval {
				break
			}
			if err := st.decide(ctx, c.invoiceID, d); err != nil {
				return evalOutcome{}, err
			}
			ev, ok := st.hooks.await(ctx, a.runID, c.invoiceID, evalWait)
			if !ok {
				return out, nil
			}
			var err error
			if out, err = a.resume(c.invoiceID, ev); err != nil {
				return evalOutcome{}, err
			}
		}
		return out, nil
	case c.receipt != nil && out.final == outcomeHeld:
		if err := st.receiveGoods(ctx, *c.receipt); err != nil {
			return evalOutcome{}, err
		}
	default:
		return out, nil
	}
	ev, ok := st.hooks.await(ctx, a.runID, c.invoiceID, evalWait)
	if !ok {
		return out, nil
	}
	return a.resume(c.invoiceID, ev)
}

// judge compares what the agent reached, and what the gateway reports of
// it, with what the case expects.
func judge(c evalCase, a *evalAgent, out evalOutcome, f evalFacts) evalRow {
	row := evalRow{InvoiceID: c.invoiceID, Case: c.name, FirstCode: "-", Codes: a.codes, Final: out.final,
		Calls: a.calls, Retries: a.retries, Queue: out.queue, Loops: f.loops, ExpectedLoops: c.loops,
		Repeats: a.repeats, ResumedOn: out.resumedOn, Advised: out.advised, CaseState: f.caseState}
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
	miss("loops", fmt.Sprint(row.Loops), fmt.Sprint(c.loops))
	if c.waits() {
		miss("resumed on", row.ResumedOn, eventHoldReleased)
		miss("advised", row.Advised, c.advised)
	}
	if c.caseState != "" {
		miss("case state", row.CaseState, c.caseState)
	}
	if slices.Contains(c.decisions, "reject") {
		// The person who takes the invoice over must not have to look the
		// rejection up.
		if !strings.Contains(f.handover.Summary, rejectReason) || !slices.ContainsFunc(f.handover.Evidence,
			func(e string) bool { return strings.Contains(e, rejectReason) }) {
			row.Missed = append(row.Missed, fmt.Sprintf("handover %q carries the rejection's reason in its summary and evidence: %q %q",
				f.handover.ID, f.handover.Summary, f.handover.Evidence))
		}
	}
	if c.sentBack() && (!slices.Contains(a.codes, "APPROVAL_SENT_BACK") || !strings.Contains(a.answer, contractClause)) {
		// The agent must have read the question and answered it.
		row.Missed = append(row.Missed, fmt.Sprintf("the question sent back answered in a new request: codes %v, answer %q",
			a.codes, a.answer))
	}
	if c.lostAnswers {
		row.Missed = append(row.Missed, a.lossy.missed()...)
	}
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
		t.ExpectedLoops += min(r.Loops, r.ExpectedLoops)
		t.UnexpectedLoops += max(r.Loops-r.ExpectedLoops, 0)
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
	fmt.Fprintln(tw, "INVOICE\tCASE\tFIRST CODE\tFINAL\tCALLS\tRETRIES\tQUEUE\tLOOPS\tRESUMED ON\tEXPECTED")
	for _, r := range rows {
		queue, resumed, ok := cmp.Or(r.Queue, "-"), cmp.Or(r.ResumedOn, "-"), "yes"
		loops := fmt.Sprint(r.Loops)
		if r.ExpectedLoops > 0 {
			loops += fmt.Sprintf(" (%d expected)", r.ExpectedLoops)
		}
		if !r.Expected {
			ok = "NO: " + strings.Join(r.Missed, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", r.InvoiceID, r.Case, r.FirstCode, r.Final,
			r.Calls, r.Retries, queue, loops, resumed, ok)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "total: %d cases, %d calls, %d corrected retries, %d handovers, %d holds, %d posted, loops: %d (%d expected, %d unexpected), expected: %d/%d\n",
		t.Cases, t.Calls, t.Retries, t.Handovers, t.Holds, t.Posted, t.Loops, t.ExpectedLoops, t.UnexpectedLoops, t.Expected, t.Cases)
	return err
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
	final      string
	queue      string
	handoverID string // the handover the agent made, if any
	// resumedOn is the event the agent went on after, advised the next
	// call it named.
	resumedOn, advised string
}

// evalAgent is the reference agent: it follows next_action literally, makes
// at most one corrected retry, and sends a call a second time only on
// purpose, through again.
type evalAgent struct {
	ctx       context.Context
	client    *http.Client
	transport *http.Transport
	lossy     *lossyTransport // nil unless answers are lost on the way
	base      string
	runID     string
	now       func() time.Time
	keyless   bool              // sends no Idempotency-Key
	sent      map[string]bool   // method, path and body of every call made
	keys      map[string]string // the Idempotency-Key of every write, by call
	calls     int
	writes    int
	retries   int
	repeats   int
	approved  bool   // request_approval was called
	cause     string // the code that made the agent ask for an approval
	approval  string // the approval the agent asked for
	action    string // the action it proposed
	answer    string // the justification that answered a person's question
	codes     []string
	evidence  []string
}

// newEvalAgent returns the agent of one case against st's gateway. With
// lostAnswers the first answer to every create is lost on its way back,
// and the agent, like a platform that keeps no keys, sends none.
func newEvalAgent(ctx context.Context, st *evalStack, runID string, lostAnswers bool) *evalAgent {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	a := &evalAgent{ctx: ctx, transport: transport, base: st.url, runID: runID, now: st.clock.Now,
		sent: map[string]bool{}, keys: map[string]string{}}
	var rt http.RoundTripper = transport
	if lostAnswers {
		a.lossy = &lossyTransport{next: transport}
		rt, a.keyless = a.lossy, true
	}
	a.client = &http.Client{Transport: rt, Timeout: 30 * time.Second}
	return a
}

// call sends one tool call in the agent's run and records what it learned.
// label names the call in the evidence a handover carries. The agent never
// sends a call twice through call: a repeat goes through again.
func (a *evalAgent) call(label, method, path string, body any) (evalReply, error) {
	raw, sig, err := signature(method, path, body)
	if err != nil {
		return evalReply{}, err
	}
	if a.sent[sig] {
		return evalReply{}, fmt.Errorf("the agent was about to repeat %s", sig)
	}
	a.sent[sig] = true
	return a.do(label, method, path, raw, sig)
}

// again sends a call the agent made before, with the same arguments, on
// purpose: what it waited for arrived, its answer was lost, or the case
// shows that the gateway stops a loop. A write goes with its first
// Idempotency-Key.
func (a *evalAgent) again(label, method, path string, body any) (evalReply, error) {
	raw, sig, err := signature(method, path, body)
	if err != nil {
		return evalReply{}, err
	}
	if !a.sent[sig] {
		return evalReply{}, fmt.Errorf("the agent was to repeat %s, which it never sent", sig)
	}
	a.repeats++
	return a.do(label, method, path, raw, sig)
}

// signature is a call's body and what tells it apart from every other call.
func signature(method, path string, body any) ([]byte, string, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, "", err
		}
	}
	return raw, method + " " + path + " " + string(raw), nil
}

func (a *evalAgent) do(label, method, path string, raw []byte, sig string) (evalReply, error) {
	var body io.Reader
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(a.ctx, method, a.base+path, body)
	if err != nil {
		return evalReply{}, err
	}
	req.Header.Set("X-Run-Id", a.runID)
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// run_three_way_match is a POST that changes nothing: the other POSTs
	// are the writes.
	if method == http.MethodPost && !strings.HasSuffix(path, "/three-way-match") && !a.keyless {
		key, ok := a.keys[sig]
		if !ok {
			a.writes++
			key = fmt.Sprintf("%s:%d", a.runID, a.writes)
			a.keys[sig] = key
		}
		req.Header.Set("Idempotency-Key", key)
	}
	a.calls++
	reply, err := a.send(req)
	if err != nil {
		return evalReply{}, fmt.Errorf("%s: %w", label, err)
	}
	a.note(label, reply)
	return reply, nil
}

// create sends a call that makes a record (an approval request, a hold, a
// handover). An answer lost on its way back leaves the agent not knowing
// whether the record was made: it sends the same call again, once.
func (a *evalAgent) create(label, method, path string, body any) (evalReply, error) {
	r, err := a.call(label, method, path, body)
	if errors.Is(err, errAnswerLost) {
		return a.again(label, method, path, body)
	}
	return r, err
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
	return a.match(id, a.call)
}

// match runs the three-way match, sent by send (call, or again when what
// the invoice waited for has arrived), and asks for the approval the
// result calls for.
func (a *evalAgent) match(id string, send func(label, method, path string, body any) (evalReply, error)) (evalOutcome, error) {
	r, err := send("run_three_way_match "+id, http.MethodPost, "/invoices/"+id+"/three-way-match", struct{}{})
	if err != nil || r.problem != nil {
		return a.followOrFail(id, r, err)
	}
	var m evalMatch
	if err := json.Unmarshal(r.body, &m); err != nil {
		return evalOutcome{}, fmt.Errorf("run_three_way_match: %w", err)
	}
	a.codes = append(a.codes, m.Result)
	a.evidence[len(a.evidence)-1] = fmt.Sprintf("run_three_way_match %s: %s", id, m.Result)
	if m.Result != "MATCHED" {
		a.cause = m.Result
	}
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
		if p.Code == "APPROVAL_SENT_BACK" {
			return a.answerQuestion(invoiceID, p)
		}
		if a.approved {
			return evalOutcome{final: outcomeStopped}, nil
		}
		a.cause = p.Code
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

// recheckAfter is how long after a hold that waits for something other than
// a person's decision the agent asks for its re-check.
const recheckAfter = time.Hour

// hold puts the invoice on hold. A hold that waits for a person's decision
// lasts until the decision releases it; one that waits for anything else
// asks to be re-checked in recheckAfter.
func (a *evalAgent) hold(invoiceID, reason, final string) (evalOutcome, error) {
	body := map[string]string{"reason": reason}
	if final == outcomeHeld {
		body["recheck_at"] = a.now().Add(recheckAfter).UTC().Format(time.RFC3339)
	}
	r, err := a.create("hold_invoice "+invoiceID, http.MethodPost, "/invoices/"+invoiceID+"/hold", body)
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
	return a.handOverAbout(invoiceID, p.Code, p.ids(), queue, note, final)
}

// handOverAbout routes the invoice to queue for code, naming the ids it is
// about, with note and every call's evidence.
func (a *evalAgent) handOverAbout(invoiceID, code, ids, queue, note, final string) (evalOutcome, error) {
	body := struct {
		InvoiceID string   `json:"invoice_id"`
		Code      string   `json:"code"`
		Queue     string   `json:"queue,omitempty"`
		Summary   string   `json:"summary"`
		Evidence  []string `json:"evidence"`
	}{invoiceID, code, queue, strings.TrimSpace(fmt.Sprintf("Invoice %s needs a person: %s (%s). %s",
		invoiceID, code, ids, note)), append([]string(nil), a.evidence...)}
	r, err := a.create("hand_over "+invoiceID, http.MethodPost, "/handovers", body)
	if err != nil {
		return evalOutcome{}, err
	}
	if r.problem != nil {
		return evalOutcome{final: outcomeHandoverRefused}, nil
	}
	var h struct {
		HandoverID string `json:"handover_id"`
		Queue      string `json:"queue"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		return evalOutcome{}, fmt.Errorf("hand_over: %w", err)
	}
	return evalOutcome{final: final, queue: h.Queue, handoverID: h.HandoverID}, nil
}

// contractClause is what the agent reads off the supplier's contract when
// a person asks what allows a price variance.
const contractClause = "Clause 4.2 of the supply contract with Acme allows a raw material surcharge of up to 10 % on the PO price, so the 8 % variance is agreed."

// answerQuestion answers the question a person sent the approval back
// with: the same action requested again, its justification the answer
// the agent reads off its sources. The gateway makes it a new approval.
func (a *evalAgent) answerQuestion(invoiceID string, p *evalProblem) (evalOutcome, error) {
	a.evidence[len(a.evidence)-1] = fmt.Sprintf("get_approval %s: sent back by %s: %s",
		p.detail("approval_id"), p.detail("asked_by"), p.detail("question"))
	a.answer = fmt.Sprintf("Answer to %s on approval %s: %s", p.detail("asked_by"), p.detail("approval_id"), contractClause)
	return a.requestApproval(invoiceID, a.action, a.answer)
}

// requestApproval asks for the proposed action; an approval granted at once
// is posted, one waiting for a person puts the invoice on hold.
func (a *evalAgent) requestApproval(invoiceID, action, justification string) (evalOutcome, error) {
	a.approved, a.action = true, action
	r, err := a.create("request_approval "+invoiceID, http.MethodPost, "/invoices/"+invoiceID+"/approvals",
		map[string]string{"proposed_action": action, "justification": justification})
	if err != nil || r.problem != nil {
		return a.followOrFail(invoiceID, r, err)
	}
	var ap evalApproval
	if err := json.Unmarshal(r.body, &ap); err != nil {
		return evalOutcome{}, fmt.Errorf("request_approval: %w", err)
	}
	a.approval = ap.ApprovalID
	switch ap.Status {
	case "approved":
		return a.post(invoiceID, ap.ApprovalID)
	case "pending":
		return a.hold(invoiceID, fmt.Sprintf("Approval %s is pending a person's decision", ap.ApprovalID), outcomeHeldForApproval)
	}
	return evalOutcome{final: outcomeStopped}, nil
}

// evalApproval is the part of an approval the agent reads.
type evalApproval struct {
	ApprovalID     string `json:"approval_id"`
	Status         string `json:"status"`
	ProposedAction string `json:"proposed_action"`
	DecidedBy      string `json:"decided_by"`
	DecisionReason string `json:"decision_reason"`
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

// resume goes on with the held invoice in the same run, once the platform
// has told the agent that its hold was released: an invoice that waited
// for a person reads the decision, one that waited for goods is matched
// again. The gateway's answers decide; the event's next call is advice.
func (a *evalAgent) resume(invoiceID string, ev evalEvent) (evalOutcome, error) {
	a.evidence = append(a.evidence, fmt.Sprintf("%s %s: %s", ev.Event, ev.HoldID, ev.Arrived))
	out, err := a.resumeHeld(invoiceID)
	out.resumedOn, out.advised = ev.Event, ev.Next.Operation
	return out, err
}

func (a *evalAgent) resumeHeld(invoiceID string) (evalOutcome, error) {
	if a.approval == "" {
		return a.match(invoiceID, a.again)
	}
	r, err := a.call("get_approval "+a.approval, http.MethodGet, "/approvals/"+a.approval, nil)
	if err != nil || r.problem != nil {
		return a.followOrFail(invoiceID, r, err)
	}
	var ap evalApproval
	if err := json.Unmarshal(r.body, &ap); err != nil {
		return evalOutcome{}, fmt.Errorf("get_approval: %w", err)
	}
	switch ap.Status {
	case "approved":
		return a.post(invoiceID, ap.ApprovalID)
	case "rejected":
		a.evidence[len(a.evidence)-1] = fmt.Sprintf("get_approval %s: rejected by %s: %s", ap.ApprovalID, ap.DecidedBy, ap.DecisionReason)
		return a.handOverAbout(invoiceID, a.cause, "approval_id "+ap.ApprovalID, "", fmt.Sprintf(
			"Approval %s to %s was rejected by %s: %s", ap.ApprovalID, ap.ProposedAction, ap.DecidedBy, ap.DecisionReason),
			outcomeHandedOver)
	}
	return evalOutcome{final: outcomeHeldForApproval}, nil
}

// recheckTwice reads the pending approval the invoice is held for, then
// reads it again at once, with nothing changed in between: the loop the
// gateway must stop.
func (a *evalAgent) recheckTwice(invoiceID string) (evalOutcome, error) {
	label, path := "get_approval "+a.approval, "/approvals/"+a.approval
	r, err := a.call(label, http.MethodGet, path, nil)
	if err != nil || r.problem != nil {
		return a.followOrFail(invoiceID, r, err)
	}
	if r, err = a.again(label, http.MethodGet, path, nil); err != nil || r.problem != nil {
		return a.followOrFail(invoiceID, r, err)
	}
	return evalOutcome{final: outcomeHeldForApproval}, nil
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
