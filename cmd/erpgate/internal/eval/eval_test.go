package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

// evalJSON is the output of one full "erpgate eval -json", played once for
// every test that reads it.
var evalJSON struct {
	once sync.Once
	out  []byte
	err  error
}

// evalOutput plays the eval once, with -json, and decodes what it printed.
func evalOutput(t *testing.T) ([]byte, evalResult) {
	t.Helper()
	evalJSON.once.Do(func() {
		var out bytes.Buffer
		evalJSON.err = Run(context.Background(), []string{"-json"}, noEnv, &out, io.Discard)
		evalJSON.out = out.Bytes()
	})
	if evalJSON.err != nil {
		t.Fatalf("Run: %v\n%s", evalJSON.err, evalJSON.out)
	}
	var got evalResult
	if err := json.Unmarshal(evalJSON.out, &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, evalJSON.out)
	}
	return evalJSON.out, got
}

// evalResult is what -json prints.
type evalResult struct {
	Rows   []evalRow  `json:"rows"`
	Totals evalTotals `json:"totals"`
}

func TestEvalJSONRows(t *testing.T) {
	raw, got := evalOutput(t)
	out := bytes.NewBuffer(raw)
	want := []struct {
		invoice, name, first, final, queue string
		retries, calls                     int
	}{
		// get_invoice, run_three_way_match, request_approval, post_invoice
		{"5105600101", "clean", "MATCHED", "POSTED", "", 0, 4},
		// … request_approval (pending), hold_invoice
		{"5105600102", "tolerance exceeded", "TOLERANCE_EXCEEDED", "HELD_FOR_APPROVAL", "", 0, 4},
		// get_invoice, corrected get_invoice, hand_over (refused: the invoice is not in the ERP)
		{"5105600999", "invoice not found", "INVOICE_NOT_FOUND", "HANDED_OVER", "ap_queue", 1, 3},
		// get_invoice, run_three_way_match, corrected get_purchase_order, hand_over
		{"5105600103", "PO not found", "PO_NOT_FOUND", "HANDED_OVER", "ap_queue", 1, 4},
		// get_invoice, run_three_way_match, corrected get_supplier, hand_over
		{"5105600104", "supplier not found", "SUPPLIER_NOT_FOUND", "HANDED_OVER", "master_data", 1, 4},
		// get_invoice, run_three_way_match, hold_invoice
		{"5105600105", "GR missing", "GR_MISSING", "HELD", "", 0, 3},
		// get_invoice, run_three_way_match, hand_over
		{"5105600106", "PO closed", "PO_CLOSED", "HANDED_OVER", "procurement", 0, 3},
		{"5105600107", "duplicate invoice", "DUPLICATE_INVOICE", "HANDED_OVER", "ap_team", 0, 3},
		// get_invoice, run_three_way_match, request_approval, hand_over
		{"5105600108", "approver not found", "MATCHED", "HANDED_OVER", "ap_lead", 0, 4},
		// get_invoice, run_three_way_match, request_approval, post_invoice, hand_over
		{"5105600109", "period closed", "MATCHED", "ESCALATED", "finance", 0, 5},
		// post_invoice, request_approval, post_invoice
		{"5105600101", "posted first", "APPROVAL_MISSING", "POSTED", "", 0, 3},
		// get_invoice, run_three_way_match, request_approval (pending), hold_invoice;
		// a person approves; get_approval, post_invoice
		{"5105600102", "approved while held", "TOLERANCE_EXCEEDED", "POSTED", "", 0, 6},
		// … a person rejects; get_approval, hand_over
		{"5105600102", "rejected while held", "TOLERANCE_EXCEEDED", "HANDED_OVER", "ap_queue", 0, 6},
		// get_invoice, run_three_way_match (GR_MISSING), hold_invoice; the goods
		// arrive; run_three_way_match again, request_approval (approved), post_invoice
		{"5105600105", "goods arrive while held", "GR_MISSING", "POSTED", "", 0, 6},
		// get_invoice, run_three_way_match, request_approval twice, hold_invoice twice
		{"5105600102", "lost answers repeated", "TOLERANCE_EXCEEDED", "HELD_FOR_APPROVAL", "", 0, 6},
		// … hold_invoice, get_approval, get_approval again (LOOP_DETECTED), hand_over
		{"5105600102", "re-check loop", "TOLERANCE_EXCEEDED", "HANDED_OVER", "ap_queue", 0, 7},
		// get_invoice, run_three_way_match, request_approval (pending), hold_invoice;
		// a person sends it back; get_approval (APPROVAL_SENT_BACK), request_approval
		// answering the question (pending), hold_invoice; a person approves;
		// get_approval, post_invoice
		{"5105600102", "sent back while held", "TOLERANCE_EXCEEDED", "POSTED", "", 0, 9},
	}
	if len(got.Rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(got.Rows), len(want), out.String())
	}
	for i, w := range want {
		r := got.Rows[i]
		if r.InvoiceID != w.invoice || r.Case != w.name {
			t.Errorf("row %d is %s %q, want %s %q", i, r.InvoiceID, r.Case, w.invoice, w.name)
			continue
		}
		if r.FirstCode != w.first || r.Final != w.final || r.Queue != w.queue {
			t.Errorf("%s %q: first %s, final %s, queue %q; want %s, %s, %q",
				r.InvoiceID, r.Case, r.FirstCode, r.Final, r.Queue, w.first, w.final, w.queue)
		}
		if r.Retries != w.retries || r.Calls != w.calls {
			t.Errorf("%s %q: %d corrected retries in %d calls, want %d in %d",
				r.InvoiceID, r.Case, r.Retries, r.Calls, w.retries, w.calls)
		}
		if r.Loops != r.ExpectedLoops || !r.Expected {
			t.Errorf("%s %q: loops %d of %d expected, expected %v %v", r.InvoiceID, r.Case, r.Loops, r.ExpectedLoops, r.Expected, r.Missed)
		}
	}
	wantTotals := evalTotals{Cases: 17, Calls: 80, Retries: 3, Handovers: 9, Holds: 3, Posted: 5,
		Loops: 1, ExpectedLoops: 1, UnexpectedLoops: 0, Expected: 17}
	if got.Totals != wantTotals {
		t.Errorf("totals %+v, want %+v", got.Totals, wantTotals)
	}
}

// TestEvalCrossesTime checks what the cases that cross time did, one run
// id each: the event they resumed on, the calls they sent again on
// purpose, the codes they met and the case the gateway reports at the end.
func TestEvalCrossesTime(t *testing.T) {
	_, got := evalOutput(t)
	rows := map[string]evalRow{}
	for _, r := range got.Rows {
		rows[r.Case] = r
	}
	for _, w := range []struct {
		name, resumed, advised, state string
		loops, repeats                int
		codes                         []string
	}{
		{"approved while held", "hold.released", "post_invoice", "posted", 0, 0, nil},
		{"rejected while held", "hold.released", "hand_over", "handed_over", 0, 0, []string{"TOLERANCE_EXCEEDED"}},
		{"goods arrive while held", "hold.released", "run_three_way_match", "posted", 0, 1, []string{"GR_MISSING", "MATCHED"}},
		{"lost answers repeated", "", "", "on_hold", 0, 2, []string{"TOLERANCE_EXCEEDED"}},
		{"re-check loop", "", "", "handed_over", 1, 1, []string{"TOLERANCE_EXCEEDED", "LOOP_DETECTED"}},
		{"sent back while held", "hold.released", "post_invoice", "posted", 0, 0,
			[]string{"TOLERANCE_EXCEEDED", "APPROVAL_SENT_BACK", "TOLERANCE_EXCEEDED"}},
	} {
		r, ok := rows[w.name]
		if !ok {
			t.Errorf("no row %q", w.name)
			continue
		}
		if r.ResumedOn != w.resumed || r.Advised != w.advised || r.CaseState != w.state {
			t.Errorf("%q: resumed on %q advising %q, case %q; want %q, %q, %q", w.name, r.ResumedOn, r.Advised, r.CaseState,
				w.resumed, w.advised, w.state)
		}
		if r.Loops != w.loops || r.ExpectedLoops != w.loops || r.Repeats != w.repeats {
			t.Errorf("%q: %d loops (%d expected), %d repeats; want %d loops, %d repeats", w.name, r.Loops, r.ExpectedLoops,
				r.Repeats, w.loops, w.repeats)
		}
		if w.codes != nil && !slices.Equal(r.Codes, w.codes) {
			t.Errorf("%q: codes %v, want %v", w.name, r.Codes, w.codes)
		}
	}
	// The cases the eval had before keep their meaning: no repeats, no
	// loops, no waiting.
	for _, r := range got.Rows[:11] {
		if r.Repeats != 0 || r.Loops != 0 || r.ExpectedLoops != 0 || r.ResumedOn != "" {
			t.Errorf("%s %q: %d repeats, %d loops (%d expected), resumed on %q", r.InvoiceID, r.Case, r.Repeats, r.Loops,
				r.ExpectedLoops, r.ResumedOn)
		}
	}
}

// TestEvalTable prints the rows of the eval without -json: the table Run
// prints is report's over the same rows.
func TestEvalTable(t *testing.T) {
	_, res := evalOutput(t)
	var out bytes.Buffer
	if err := report(&out, res.Rows, false); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 19 {
		t.Fatalf("%d lines, want a header, 17 rows and the totals:\n%s", len(lines), out.String())
	}
	if h := strings.Fields(lines[0]); len(h) == 0 || h[0] != "INVOICE" || !strings.Contains(lines[0], "FINAL") ||
		!strings.Contains(lines[0], "LOOPS") || h[len(h)-1] != "EXPECTED" {
		t.Errorf("header %q", lines[0])
	}
	for _, row := range lines[1:18] {
		if f := strings.Fields(row); len(f) < 10 || len(f[0]) != 10 || f[len(f)-1] != "yes" {
			t.Errorf("row %q", row)
		}
	}
	if !strings.Contains(lines[16], "1 (1 expected)") {
		t.Errorf("the loop row does not say its loop was expected: %q", lines[16])
	}
	total := lines[18]
	for _, part := range []string{"17 cases", "80 calls", "3 corrected retries", "9 handovers", "3 holds", "5 posted",
		"loops: 1 (1 expected, 0 unexpected)", "expected: 17/17"} {
		if !strings.Contains(total, part) {
			t.Errorf("totals line %q lacks %q", total, part)
		}
	}
}

// TestReportCountsExpectedLoopsApart checks that a loop a case was built
// to meet does not fail the eval, and that any other loop does.
func TestReportCountsExpectedLoopsApart(t *testing.T) {
	expected := evalRow{InvoiceID: "5105600102", Case: "re-check loop", Final: "HANDED_OVER", Loops: 1, ExpectedLoops: 1, Expected: true}
	var out bytes.Buffer
	if err := report(&out, []evalRow{expected}, true); err != nil {
		t.Errorf("an expected loop failed the eval: %v", err)
	}
	var res evalResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Totals.Loops != 1 || res.Totals.ExpectedLoops != 1 || res.Totals.UnexpectedLoops != 0 {
		t.Errorf("totals %+v, want 1 loop, expected", res.Totals)
	}
	unexpected := evalRow{InvoiceID: "5105600101", Case: "clean", Final: "POSTED", Loops: 1, Expected: true}
	out.Reset()
	err := report(&out, []evalRow{expected, unexpected}, false)
	if err == nil || !strings.Contains(err.Error(), "1 unexpected loops") {
		t.Errorf("report: %v, want the unexpected loop to fail the eval", err)
	}
	if !strings.Contains(out.String(), "loops: 2 (1 expected, 1 unexpected)") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestJudge checks what judge holds a case to beyond its final outcome.
func TestJudge(t *testing.T) {
	cases := map[string]evalCase{}
	for _, c := range evalCases() {
		cases[c.name] = c
	}
	a := &evalAgent{codes: []string{"TOLERANCE_EXCEEDED"}, calls: 6}
	out := evalOutcome{final: outcomeHandedOver, queue: "ap_queue", handoverID: "HO0000001",
		resumedOn: eventHoldReleased, advised: "hand_over"}
	good := evalFacts{caseState: "handed_over", handover: evalHandover{ID: "HO0000001",
		Summary: "Approval A0000001 was rejected by m.keller: " + rejectReason, Evidence: []string{"get_approval A0000001: rejected: " + rejectReason}}}
	if r := judge(cases["rejected while held"], a, out, good); !r.Expected {
		t.Errorf("judge missed %v", r.Missed)
	}
	for name, f := range map[string]evalFacts{
		"no reason in the summary":  {caseState: "handed_over", handover: evalHandover{ID: "HO0000001", Evidence: good.handover.Evidence}},
		"no reason in the evidence": {caseState: "handed_over", handover: evalHandover{ID: "HO0000001", Summary: good.handover.Summary}},
		"case not handed over":      {caseState: "on_hold", handover: good.handover},
		"an unexpected loop":        {caseState: "handed_over", handover: good.handover, loops: 1},
	} {
		if r := judge(cases["rejected while held"], a, out, f); r.Expected {
			t.Errorf("%s: judge found nothing missed", name)
		}
	}
	notResumed := out
	notResumed.resumedOn, notResumed.advised = "", ""
	if r := judge(cases["rejected while held"], a, notResumed, good); r.Expected {
		t.Error("a case that never resumed was judged as expected")
	}
	loop := cases["re-check loop"]
	a = &evalAgent{codes: []string{"TOLERANCE_EXCEEDED", "LOOP_DETECTED"}}
	out = evalOutcome{final: outcomeHandedOver, queue: "ap_queue"}
	if r := judge(loop, a, out, evalFacts{caseState: "handed_over"}); r.Expected {
		t.Error("a case built to meet a loop was judged as expected without one")
	}
	if r := judge(loop, a, out, evalFacts{caseState: "handed_over", loops: 1}); !r.Expected || r.ExpectedLoops != 1 {
		t.Errorf("the loop case: %+v", r)
	}
	// A question sent back must be met and answered, not only posted past.
	sent := cases["sent back while held"]
	out = evalOutcome{final: outcomePosted, resumedOn: eventHoldReleased, advised: "post_invoice"}
	a = &evalAgent{codes: []string{"TOLERANCE_EXCEEDED", "APPROVAL_SENT_BACK"}, answer: "Answer to m.keller on approval A0000001: " + contractClause}
	if r := judge(sent, a, out, evalFacts{caseState: "posted"}); !r.Expected {
		t.Errorf("the question answered: judge missed %v", r.Missed)
	}
	for name, agent := range map[string]*evalAgent{
		"never met":      {codes: []string{"TOLERANCE_EXCEEDED"}, answer: a.answer},
		"never answered": {codes: a.codes},
	} {
		if r := judge(sent, agent, out, evalFacts{caseState: "posted"}); r.Expected {
			t.Errorf("a question %s was judged as expected", name)
		}
	}
}

// TestAgentRepeatsOnlyOnPurpose checks the agent's guard: call never sends
// a call twice, again sends only a call made before, with its key.
func TestAgentRepeatsOnlyOnPurpose(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"approval_id":"A0000001","status":"pending"}`)
	}))
	defer srv.Close()
	a := newEvalAgent(context.Background(), &evalStack{url: srv.URL, clock: &evalClock{}}, "run-guard", false)
	defer a.transport.CloseIdleConnections()
	body := map[string]string{"proposed_action": "accept_variance", "justification": "As matched."}
	if _, err := a.again("request_approval", http.MethodPost, "/invoices/5105600102/approvals", body); err == nil {
		t.Error("again sent a call the agent never made")
	}
	if _, err := a.call("request_approval", http.MethodPost, "/invoices/5105600102/approvals", body); err != nil {
		t.Fatal(err)
	}
	if _, err := a.call("request_approval", http.MethodPost, "/invoices/5105600102/approvals", body); err == nil {
		t.Error("call repeated a call")
	}
	if _, err := a.again("request_approval", http.MethodPost, "/invoices/5105600102/approvals", body); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if a.calls != 2 || a.repeats != 1 || len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("%d calls, %d repeats, keys %q; want 2 calls, 1 repeat, one key twice", a.calls, a.repeats, keys)
	}
}

// TestLostAnswers checks the transport that loses answers: the first
// answer to each create is lost, the agent sends the call again without a
// key, and a repeat that names another record is caught.
func TestLostAnswers(t *testing.T) {
	var mu sync.Mutex
	n := 0
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n++
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"hold_id":"H%07d","status":"held"}`, n)
	}))
	defer srv.Close()
	a := newEvalAgent(context.Background(), &evalStack{url: srv.URL, clock: &evalClock{}}, "run-lost", true)
	defer a.transport.CloseIdleConnections()
	r, err := a.create("hold_invoice", http.MethodPost, "/invoices/5105600105/hold", map[string]string{"reason": "Waiting."})
	if err != nil || r.problem != nil {
		t.Fatalf("create: %v %+v", err, r.problem)
	}
	if a.calls != 2 || a.repeats != 1 {
		t.Errorf("%d calls, %d repeats; want the lost call and its repeat", a.calls, a.repeats)
	}
	mu.Lock()
	if len(keys) != 2 || keys[0] != "" || keys[1] != "" {
		t.Errorf("Idempotency-Keys %q, want none", keys)
	}
	mu.Unlock()
	// The server made a new hold each time: the repeat is not the same
	// create.
	if m := a.lossy.missed(); len(m) != 1 || !strings.Contains(m[0], "H0000001") || !strings.Contains(m[0], "H0000002") {
		t.Errorf("missed %q, want the two holds named", m)
	}
	if _, err := a.call("get_hold", http.MethodGet, "/holds/H0000001", nil); err != nil {
		t.Errorf("a read's answer was lost: %v", err)
	}
}

// TestPlatformWaitsForItsRun checks the agent's platform: it takes each
// delivery once, resumes only the run and invoice a release names, and
// gives up at its deadline.
func TestPlatformWaitsForItsRun(t *testing.T) {
	hooks := &evalHooks{arrived: make(chan struct{}, 1), seen: map[string]bool{}}
	u, stop, err := serveLoopback(hooks)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deliver := func(id, body string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Webhook-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("delivery %s: status %d", id, resp.StatusCode)
		}
	}
	deliver("d1", `{"event":"approval.decided","invoice_id":"5105600102"}`)
	deliver("d2", `{"event":"hold.released","invoice_id":"5105600102","hold_id":"H0000001","run_id":"other","next":{"operation":"post_invoice"}}`)
	deliver("d3", `{"event":"hold.released","invoice_id":"5105600102","hold_id":"H0000002","run_id":"mine","next":{"operation":"post_invoice"}}`)
	deliver("d3", `{"event":"hold.released","invoice_id":"5105600102","hold_id":"H0000002","run_id":"mine","next":{"operation":"post_invoice"}}`)
	ctx := context.Background()
	ev, ok := hooks.await(ctx, "mine", "5105600102", evalWait)
	if !ok || ev.HoldID != "H0000002" || ev.Next.Operation != "post_invoice" {
		t.Errorf("await: %+v %v", ev, ok)
	}
	hooks.mu.Lock()
	if len(hooks.events) != 3 {
		t.Errorf("%d events kept, want 3: a delivery repeated is one event", len(hooks.events))
	}
	hooks.mu.Unlock()
	if _, ok := hooks.await(ctx, "mine", "5105600105", time.Millisecond); ok {
		t.Error("await found a release of another invoice")
	}
}

func TestEvalRefusesArguments(t *testing.T) {
	if err := Run(context.Background(), []string{"extra"}, noEnv, io.Discard, io.Discard); err == nil {
		t.Error("Run accepted a stray argument")
	}
}
