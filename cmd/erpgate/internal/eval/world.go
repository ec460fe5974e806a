package eval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/cmd/internal/gateway"
)

// The world around the agent: the gateway with its simulated ERP, the
// clock they share, the agent's platform that hears from the gateway, the
// people who decide and the warehouse that receives goods, and the
// evaluator's own reads of what the gateway recorded.

// evalWait bounds every wait for the gateway to tell the platform
// something.
const evalWait = 30 * time.Second

// eventHoldReleased is the event that tells the platform a hold was
// released, so that the run waiting on the invoice goes on.
const eventHoldReleased = "hold.released"

// The person who decides the approvals, and what they say.
const (
	approver      = "m.keller"
	approveReason = "The supplier's price list of November confirms the surcharge."
	rejectReason  = "The surcharge of 10.00 EUR per pump was never agreed; ask Acme for a credit note."
	// personKey is the approver's API key: a demonstration person of the
	// eval's gateway, which runs without API keys, so the agent calls
	// without one and only this key decides and reads the handovers.
	personKey = "eval-key-of-m.keller"
	// sendBackQuestion is what the person asks when they send the
	// approval back to the agent instead of deciding it.
	sendBackQuestion = "Which clause of the supply contract with Acme allows the surcharge? Quote it."
)

// evalStack is one case's world: a gateway over its simulated ERP, both on
// loopback, with their clock and the platform receiving the gateway's
// events.
type evalStack struct {
	gw    *gateway.Gateway
	url   string
	clock *evalClock
	hooks *evalHooks
	http  *http.Client // the people's and the evaluator's client
	stop  func()
}

// startEvalStack starts a gateway over a simulated ERP seeded with the
// golden set, with its background work running and its hold events sent to
// a platform of the stack's own.
func startEvalStack(ctx context.Context) (*evalStack, error) {
	hooks := &evalHooks{arrived: make(chan struct{}, 1), seen: map[string]bool{}}
	hooksURL, stopHooks, err := serveLoopback(hooks)
	if err != nil {
		return nil, err
	}
	clock := &evalClock{}
	// The eval re-checks the holds itself, once it has moved the clock:
	// the scheduler's own pass, which Run starts at once, finds none due.
	gw, err := gateway.New(ctx, gateway.Config{HoldWebhook: hooksURL, Now: clock.Now, RecheckInterval: 24 * time.Hour,
		DemoPeople: []api.Credential{{Name: approver, KeySHA256: sha256.Sum256([]byte(personKey)), Scopes: []string{api.ScopeApprove, api.ScopeReview}}}})
	if err != nil {
		stopHooks()
		return nil, err
	}
	gwURL, stopGW, err := serveLoopback(gw.Handler())
	if err != nil {
		gw.Close()
		stopHooks()
		return nil, err
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		gw.Run(bg)
	}()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	st := &evalStack{gw: gw, url: gwURL, clock: clock, hooks: hooks,
		http: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
	st.stop = func() {
		cancel()
		<-done
		transport.CloseIdleConnections()
		stopGW()
		gw.Close()
		stopHooks()
	}
	return st, nil
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

// evalClock is the time of one case's world: the gateway's, its simulated
// ERP's and the agent's. It runs with the wall clock; the eval moves it
// forward where a case waits for a re-check.
type evalClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the world's time.
func (c *evalClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *evalClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// evalEvent is the part of a hold webhook's event the platform reads.
type evalEvent struct {
	Event       string `json:"event"`
	InvoiceID   string `json:"invoice_id"`
	HoldID      string `json:"hold_id"`
	CaseVersion int64  `json:"case_version"`
	RunID       string `json:"run_id"`
	Arrived     string `json:"arrived"`
	Next        struct {
		Operation  string `json:"operation"`
		ApprovalID string `json:"approval_id"`
	} `json:"next"`
}

// evalHooks is the agent's platform: it receives the gateway's hold
// events, each once however often it is delivered, and lets the run that
// waits on an invoice go on when its hold is released.
type evalHooks struct {
	mu      sync.Mutex
	seen    map[string]bool // Webhook-Id of every delivery received
	events  []evalEvent
	taken   map[string]bool // hold_id of every release await returned
	arrived chan struct{}   // signalled after every new event
}

// ServeHTTP takes one delivery of the gateway's hold webhook.
func (h *evalHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev evalEvent
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&ev); err != nil {
		http.Error(w, "not an event: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	id := r.Header.Get("Webhook-Id")
	if id == "" || !h.seen[id] {
		if id != "" {
			h.seen[id] = true
		}
		h.events = append(h.events, ev)
		select {
		case h.arrived <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// await waits at most wait for the release of a hold of run's invoice
// that no await returned before, and reports whether it came.
func (h *evalHooks) await(ctx context.Context, run, invoiceID string, wait time.Duration) (evalEvent, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		h.mu.Lock()
		for _, ev := range h.events {
			if ev.Event == eventHoldReleased && ev.RunID == run && ev.InvoiceID == invoiceID && !h.taken[ev.HoldID] {
				if h.taken == nil {
					h.taken = map[string]bool{}
				}
				h.taken[ev.HoldID] = true
				h.mu.Unlock()
				return ev, true
			}
		}
		h.mu.Unlock()
		select {
		case <-h.arrived:
		case <-timer.C:
			return evalEvent{}, false
		case <-ctx.Done():
			return evalEvent{}, false
		}
	}
}

// errAnswerLost is what the agent sees of an answer lost on its way back,
// as after a connection reset: the gateway did the call.
var errAnswerLost = errors.New("connection reset before the answer arrived")

// lossyTransport loses the first answer to each create (an approval
// request, a hold, a handover) on its way back to the agent, and keeps
// every answer to a create for the evaluator.
type lossyTransport struct {
	next    http.RoundTripper
	mu      sync.Mutex
	answers map[string][][]byte // by method and path
	lost    map[string]bool
}

// isCreate says whether a request makes a record whose answer names it.
func isCreate(r *http.Request) bool {
	p := r.URL.Path
	return r.Method == http.MethodPost &&
		(strings.HasSuffix(p, "/approvals") || strings.HasSuffix(p, "/hold") || p == "/handovers")
}

// RoundTrip sends the request; the first answer to each create it keeps and
// loses.
func (t *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || !isCreate(r) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.answers == nil {
		t.answers, t.lost = map[string][][]byte{}, map[string]bool{}
	}
	call := r.Method + " " + r.URL.Path
	t.answers[call] = append(t.answers[call], body)
	if !t.lost[call] {
		t.lost[call] = true
		return nil, errAnswerLost
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// missed says, for every create whose answer was lost, how the answer to
// its repeat differs from the lost one: it must name the same record.
func (t *lossyTransport) missed() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for call := range t.lost {
		got := t.answers[call]
		if len(got) != 2 {
			out = append(out, fmt.Sprintf("%s answered %d times, want the lost answer and its repeat's", call, len(got)))
			continue
		}
		lost, again := recordID(got[0]), recordID(got[1])
		if lost == "" || lost != again {
			out = append(out, fmt.Sprintf("%s made %q, its repeat answered %q: want the same record", call, lost, again))
		}
	}
	if len(t.lost) == 0 {
		out = append(out, "no answer was lost")
	}
	sort.Strings(out)
	return out
}

// recordID is the id of the record a create's answer names, "" for none.
func recordID(body []byte) string {
	var m struct {
		ApprovalID string `json:"approval_id"`
		HoldID     string `json:"hold_id"`
		HandoverID string `json:"handover_id"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return m.ApprovalID + m.HoldID + m.HandoverID
}

// decide is the approver at work: they find the invoice's approval among
// the pending ones and decide it, outside any run.
func (s *evalStack) decide(ctx context.Context, invoiceID, decision string) error {
	var list struct {
		Approvals []struct {
			ApprovalID string `json:"approval_id"`
			InvoiceID  string `json:"invoice_id"`
		} `json:"approvals"`
	}
	if err := s.doAs(ctx, personKey, http.MethodGet, s.url+"/approvals?status=pending", nil, http.StatusOK, &list); err != nil {
		return fmt.Errorf("list_approvals: %w", err)
	}
	for _, a := range list.Approvals {
		if a.InvoiceID != invoiceID {
			continue
		}
		reason := approveReason
		switch decision {
		case "reject":
			reason = rejectReason
		case "send_back":
			reason = sendBackQuestion
		}
		body := map[string]string{"decision": decision, "reason": reason}
		if err := s.doAs(ctx, personKey, http.MethodPost, s.url+"/approvals/"+a.ApprovalID+"/decision", body, http.StatusOK, nil); err != nil {
			return fmt.Errorf("decide_approval %s: %w", a.ApprovalID, err)
		}
		return nil
	}
	return fmt.Errorf("no approval of invoice %s is pending: %+v", invoiceID, list.Approvals)
}

// receiveGoods is the warehouse posting the goods receipt in the ERP, then
// time passing until the hold's re-check is due and the scheduler's pass
// that finds the receipt.
func (s *evalStack) receiveGoods(ctx context.Context, r evalReceipt) error {
	body := map[string]string{"po_id": r.po, "item": r.item, "quantity": r.quantity}
	if err := s.do(ctx, http.MethodPost, s.gw.ERPURL()+"/sim/admin/goods-receipts", body, http.StatusCreated, nil); err != nil {
		return fmt.Errorf("goods receipt for PO %s item %s: %w", r.po, r.item, err)
	}
	s.clock.advance(recheckAfter + time.Minute)
	rep, err := s.gw.Recheck(ctx)
	if err != nil {
		return fmt.Errorf("re-check: %w", err)
	}
	if rep.Released != 1 {
		return fmt.Errorf("the re-check after the goods receipt released %d holds, want 1: %+v", rep.Released, rep)
	}
	return nil
}

// evalFacts is what the evaluator reads off the gateway after a case, apart
// from what the agent saw.
type evalFacts struct {
	loops     int // calls of the run refused as LOOP_DETECTED
	caseState string
	handover  evalHandover // the handover the agent made, as stored
}

// evalHandover is the part of a stored handover the evaluator reads.
type evalHandover struct {
	ID       string   `json:"handover_id"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence"`
}

// read reads what the gateway recorded of the case: the agent's run, the
// invoice's case and the handover the agent made.
func (s *evalStack) read(ctx context.Context, a *evalAgent, invoiceID string, out evalOutcome) (evalFacts, error) {
	var f evalFacts
	var run struct {
		Calls []struct {
			Code    string `json:"code"`
			Refused bool   `json:"refused"`
		} `json:"calls"`
	}
	if err := s.do(ctx, http.MethodGet, s.url+"/runs/"+url.PathEscape(a.runID), nil, http.StatusOK, &run); err != nil {
		return f, fmt.Errorf("get_run %s: %w", a.runID, err)
	}
	if len(run.Calls) != a.calls {
		return f, fmt.Errorf("get_run %s: the gateway recorded %d calls, the agent made %d", a.runID, len(run.Calls), a.calls)
	}
	for _, c := range run.Calls {
		if c.Refused && c.Code == "LOOP_DETECTED" {
			f.loops++
		}
	}
	// An invoice the ERP does not know has no case.
	var cs struct {
		State string `json:"state"`
	}
	if err := s.do(ctx, http.MethodGet, s.url+"/invoices/"+invoiceID+"/case", nil, http.StatusOK, &cs); err == nil {
		f.caseState = cs.State
	}
	if out.handoverID == "" {
		return f, nil
	}
	var list struct {
		Handovers []evalHandover `json:"handovers"`
	}
	if err := s.doAs(ctx, personKey, http.MethodGet, s.url+"/handovers", nil, http.StatusOK, &list); err != nil {
		return f, fmt.Errorf("list_handovers: %w", err)
	}
	for _, h := range list.Handovers {
		if h.ID == out.handoverID {
			f.handover = h
		}
	}
	return f, nil
}

// do makes one call outside any run and decodes its answer into out,
// unless out is nil; an answer with another status than want is an error.
func (s *evalStack) do(ctx context.Context, method, u string, body any, want int, out any) error {
	return s.doAs(ctx, "", method, u, body, want, out)
}

// doAs is do with the API key of a person, when key is not empty.
func (s *evalStack) doAs(ctx context.Context, key, method, u string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("status %d, want %d: %s", resp.StatusCode, want, raw)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}
