package records_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

func TestCaseState(t *testing.T) {
	tests := []struct {
		event string // the event that leaves the case so
		c     records.Case
		want  string
	}{
		{"none", records.Case{}, records.CaseOpen},
		{"approval.requested", records.Case{ApprovalID: "A0000001", ApprovalStatus: records.ApprovalPending}, records.CaseAwaitingApproval},
		{"approval.decided, approved", records.Case{ApprovalID: "A0000001", ApprovalStatus: records.ApprovalApproved}, records.CaseReady},
		{"approval.decided, rejected", records.Case{ApprovalID: "A0000001", ApprovalStatus: records.ApprovalRejected}, records.CaseOpen},
		{"approval.superseded", records.Case{ApprovalID: "A0000002", ApprovalStatus: records.ApprovalPending}, records.CaseAwaitingApproval},
		{"hold.placed", records.Case{HoldID: "H0000001", ApprovalID: "A0000001", ApprovalStatus: records.ApprovalPending}, records.CaseOnHold},
		{"hold.merged", records.Case{HoldID: "H0000001", ApprovalID: "A0000001", ApprovalStatus: records.ApprovalApproved}, records.CaseOnHold},
		{"hold.receipt_seen", records.Case{HoldID: "H0000001"}, records.CaseOnHold},
		{"hold.released", records.Case{ApprovalID: "A0000001", ApprovalStatus: records.ApprovalApproved}, records.CaseReady},
		{"hold.closed", records.Case{}, records.CaseOpen},
		{"handover.created", records.Case{HoldID: "H0000001", HandoverID: "HO0000001", HandoverStatus: records.HandoverQueued}, records.CaseHandedOver},
		{"handover.taken", records.Case{ApprovalStatus: records.ApprovalPending, HandoverID: "HO0000001", HandoverStatus: records.HandoverTaken}, records.CaseHandedOver},
		{"handover.resolved", records.Case{HandoverID: "HO0000001", HandoverStatus: records.HandoverResolved}, records.CaseResolved},
		{"handover.resolved, approval pending", records.Case{ApprovalStatus: records.ApprovalPending, HandoverStatus: records.HandoverResolved}, records.CaseAwaitingApproval},
		{"handover.resolved, held", records.Case{HoldID: "H0000001", HandoverStatus: records.HandoverResolved}, records.CaseOnHold},
		{"invoice.posted", records.Case{Posted: true, HoldID: "H0000001", HandoverStatus: records.HandoverQueued, ApprovalStatus: records.ApprovalApproved}, records.CasePosted},
	}
	for _, tc := range tests {
		if got := records.CaseState(tc.c); got != tc.want {
			t.Errorf("%s: state of %+v: got %q, want %q", tc.event, tc.c, got, tc.want)
		}
	}
}

// caseWatch follows one invoice's case through a test: each step's
// version is the one before it plus one, or the same.
type caseWatch struct {
	t       *testing.T
	s       records.Store
	invoice string
	version int64
}

func watchCase(t *testing.T, s records.Store, invoice string) *caseWatch {
	return &caseWatch{t: t, s: s, invoice: invoice}
}

// moved checks that the step moved the case by one version to state, with
// events of kinds, and returns the case and the events.
func (w *caseWatch) moved(step, state string, kinds ...string) (records.Case, []records.CaseEvent) {
	w.t.Helper()
	c, err := w.s.Case(w.t.Context(), w.invoice)
	if err != nil {
		w.t.Fatalf("%s: Case: %v", step, err)
	}
	if c.Version != w.version+1 || c.State != state {
		w.t.Errorf("%s: case at version %d, %s; want %d, %s", step, c.Version, c.State, w.version+1, state)
	}
	if derived := records.CaseState(c); c.State != derived {
		w.t.Errorf("%s: case state %s, but its records say %s", step, c.State, derived)
	}
	w.version = c.Version
	evs := w.events(c.Version)
	same(w.t, step+": events", ids(evs, func(e records.CaseEvent) string { return e.Kind }), append([]string{}, kinds...))
	return c, evs
}

// still checks that the step left the case's version as it was.
func (w *caseWatch) still(step string) {
	w.t.Helper()
	c, err := w.s.Case(w.t.Context(), w.invoice)
	if err != nil && !(errors.Is(err, records.ErrNotFound) && w.version == 0) {
		w.t.Fatalf("%s: Case: %v", step, err)
	}
	if c.Version != w.version {
		w.t.Errorf("%s: case at version %d, want %d as before", step, c.Version, w.version)
	}
}

// events returns the case's events of version.
func (w *caseWatch) events(version int64) []records.CaseEvent {
	w.t.Helper()
	all, err := w.s.CaseEvents(w.t.Context(), w.invoice, 1000)
	if err != nil {
		w.t.Fatal(err)
	}
	var evs []records.CaseEvent
	for _, ev := range all {
		if ev.InvoiceID != w.invoice {
			w.t.Errorf("event of %s among those of %s", ev.InvoiceID, w.invoice)
		}
		if ev.Version == version {
			evs = append(evs, ev)
		}
	}
	return evs
}

func item(n int) records.POItemRef {
	return records.POItemRef{POID: "4500000001", Item: fmt.Sprintf("%05d", n)}
}

func testCaseTransitions(t *testing.T, s records.Store) {
	ctx := t.Context()
	w := watchCase(t, s, "5105600001")
	if _, err := s.Case(ctx, w.invoice); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("Case before anything made it: got %v, want ErrNotFound", err)
	}

	a1 := approval(w.invoice, "agent")
	a1.Dedupe = "p1"
	a1 = createApproval(t, s, a1, false)
	c, evs := w.moved("approval requested", records.CaseAwaitingApproval, "approval.requested")
	if c.ApprovalID != a1.ID || c.ApprovalStatus != records.ApprovalPending || c.Calls != 0 {
		t.Errorf("case after the approval: %+v", c)
	}
	if len(evs) == 1 {
		same(t, "approval.requested", evs[0], records.CaseEvent{ID: evs[0].ID, InvoiceID: w.invoice, Version: 1,
			At: stored(t0), Kind: "approval.requested", Ref: a1.ID, Note: "pending post 1234.50 EUR"})
	}
	if again, created, err := s.CreateApproval(ctx, a1, false); err != nil || created || again.ID != a1.ID {
		t.Errorf("CreateApproval with the same dedupe: %s, created %v, %v; want %s again", again.ID, created, err, a1.ID)
	}
	w.still("approval asked again")

	h := hold(w.invoice, t0.Add(time.Hour))
	h.ApprovalID, h.Awaiting, h.RunID = a1.ID, nil, "run-1"
	h = createHold(t, s, h)
	c, evs = w.moved("hold placed", records.CaseOnHold, "hold.placed")
	if c.HoldID != h.ID || len(evs) != 1 || evs[0].Ref != h.ID || evs[0].RunID != "run-1" {
		t.Errorf("hold placed: case %+v, events %+v", c, evs)
	}

	more := hold(w.invoice, t0.Add(2*time.Hour))
	more.Awaiting = []records.POItemRef{item(10), item(20)}
	more.Until = t0.Add(48 * time.Hour)
	merged, created, err := s.CreateHold(ctx, more)
	if err != nil || created || merged.ID != h.ID {
		t.Fatalf("CreateHold on a held hold: %s, created %v, %v; want %s merged", merged.ID, created, err, h.ID)
	}
	w.moved("hold merged", records.CaseOnHold, "hold.merged")
	read, err := s.Hold(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "merged hold", read, merged)
	if !slices.Equal(read.Awaiting, more.Awaiting) || read.ApprovalID != a1.ID || !read.Until.Equal(stored(more.Until)) ||
		!read.RecheckAt.Equal(stored(t0.Add(time.Hour))) || read.RunID != "run-1" {
		t.Errorf("merged hold: %+v", read)
	}
	if _, created, err := s.CreateHold(ctx, more); err != nil || created {
		t.Errorf("CreateHold that adds nothing: created %v, %v", created, err)
	}
	w.still("hold merged again")

	if err := s.HoldAwaiting(ctx, h.ID, []records.POItemRef{item(20)}, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, evs = w.moved("receipt seen", records.CaseOnHold, "hold.receipt_seen")
	if len(evs) == 1 && evs[0].Note != "goods receipts seen: 4500000001/00010" {
		t.Errorf("receipt seen: note %q", evs[0].Note)
	}
	if err := s.HoldAwaiting(ctx, h.ID, []records.POItemRef{item(20)}, t0.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	w.still("nothing more seen")

	a2 := approval(w.invoice, "agent")
	a2.ProposedAction, a2.Dedupe = "reduce", "p2"
	a2 = createApproval(t, s, a2, false)
	c, evs = w.moved("approval superseded", records.CaseOnHold, "approval.superseded", "approval.requested", "hold.merged")
	if c.ApprovalID != a2.ID || len(evs) != 3 || evs[0].Ref != a1.ID || evs[1].Ref != a2.ID || evs[2].Ref != h.ID {
		t.Errorf("approval superseded: case %+v, events %+v", c, evs)
	}
	if read, _ := s.Hold(ctx, h.ID); read.ApprovalID != a2.ID {
		t.Errorf("the hold waits for %q, want the new approval %s", read.ApprovalID, a2.ID)
	}

	decided := t0.Add(5 * time.Hour)
	if _, err := s.DecideApproval(ctx, a2.ID, records.ApprovalApproved, "boss", "fine", decided); err != nil {
		t.Fatal(err)
	}
	c, evs = w.moved("approval decided, goods still awaited", records.CaseOnHold, "approval.decided", "hold.merged")
	if c.ApprovalStatus != records.ApprovalApproved || c.HoldID != h.ID || len(evs) == 0 || evs[0].Note != "approved by boss: fine" {
		t.Errorf("approval decided: case %+v, events %+v", c, evs)
	}

	if err := s.RescheduleHold(ctx, h.ID, t0.Add(6*time.Hour), true, t0.Add(6*time.Hour)); err != nil {
		t.Fatal(err)
	}
	w.still("hold rescheduled")

	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h.ID, At: t0.Add(7 * time.Hour), Kind: "released", Note: "GR posted"}); err != nil {
		t.Fatal(err)
	}
	c, _ = w.moved("hold released", records.CaseReady, "hold.released")
	if c.HoldID != "" {
		t.Errorf("case names hold %q after its release", c.HoldID)
	}
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h.ID, At: t0.Add(8 * time.Hour), Kind: "closed"}); err != nil {
		t.Fatal(err)
	}
	w.still("hold released again")

	if _, err := s.RecordPosting(ctx, w.invoice, a2.ID, "run-2", t0.Add(9*time.Hour)); err != nil {
		t.Fatal(err)
	}
	w.moved("posted", records.CasePosted, "invoice.posted")

	// Handovers.
	w = watchCase(t, s, "5105600002")
	ho := handover(w.invoice, "AP")
	ho.Dedupe = "ho1"
	ho = createHandover(t, s, ho, false)
	c, _ = w.moved("handover created", records.CaseHandedOver, "handover.created")
	if c.HandoverID != ho.ID || c.HandoverStatus != records.HandoverQueued {
		t.Errorf("handover created: case %+v", c)
	}
	if _, created, err := s.CreateHandover(ctx, ho, false); err != nil || created {
		t.Errorf("CreateHandover with the same dedupe: created %v, %v", created, err)
	}
	w.still("handover asked again")
	if _, err := s.TakeHandover(ctx, ho.ID, "clerk", t0); err != nil {
		t.Fatal(err)
	}
	w.moved("handover taken", records.CaseHandedOver, "handover.taken")
	if _, err := s.TakeHandover(ctx, ho.ID, "clerk", t0); !errors.Is(err, records.ErrHandoverState) {
		t.Errorf("TakeHandover twice: %v, want ErrHandoverState", err)
	}
	w.still("handover taken again")
	if _, err := s.ResolveHandover(ctx, ho.ID, "lead", "paid", t0); err != nil {
		t.Fatal(err)
	}
	c, _ = w.moved("handover resolved", records.CaseResolved, "handover.resolved")
	if c.HandoverStatus != records.HandoverResolved {
		t.Errorf("handover resolved: case %+v", c)
	}

	// A hold closed, an approval rejected.
	w = watchCase(t, s, "5105600003")
	h3 := createHold(t, s, hold(w.invoice, t0))
	w.moved("hold placed", records.CaseOnHold, "hold.placed")
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h3.ID, At: t0, Kind: "closed", Note: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	w.moved("hold closed", records.CaseOpen, "hold.closed")
	a3 := createApproval(t, s, approval(w.invoice, "agent"), false)
	w.moved("approval requested", records.CaseAwaitingApproval, "approval.requested")
	if _, err := s.DecideApproval(ctx, a3.ID, records.ApprovalRejected, "boss", "no", t0); err != nil {
		t.Fatal(err)
	}
	c, _ = w.moved("approval rejected", records.CaseOpen, "approval.decided")
	if c.ApprovalStatus != records.ApprovalRejected {
		t.Errorf("approval rejected: case %+v", c)
	}
	if _, err := s.DecideApproval(ctx, a3.ID, records.ApprovalApproved, "boss", "", t0); !errors.Is(err, records.ErrNotPending) {
		t.Errorf("DecideApproval twice: %v, want ErrNotPending", err)
	}
	w.still("approval decided again")

	all, err := s.CaseEvents(ctx, "5105600001", 3)
	if err != nil || len(all) != 3 || all[0].Kind != "approval.requested" || all[0].ID >= all[1].ID {
		t.Errorf("CaseEvents with a limit of 3: %+v, %v; want the first three", all, err)
	}
	if none, err := s.CaseEvents(ctx, "no such invoice", 0); err != nil || len(none) != 0 {
		t.Errorf("CaseEvents of an invoice without a case: %+v, %v", none, err)
	}
}

func testHoldsMerge(t *testing.T, s records.Store) {
	ctx := t.Context()
	const invoice = "5105600001"
	var first records.Hold
	var want []records.POItemRef
	for i := range 5 {
		h := hold(invoice, t0.Add(time.Duration(i)*time.Hour))
		h.Dedupe, h.Awaiting = fmt.Sprint("d", i), []records.POItemRef{item(10 * (i + 1))}
		got, created, err := s.CreateHold(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, item(10*(i+1)))
		if i == 0 {
			first = got
		}
		if created != (i == 0) || got.ID != first.ID || !slices.Equal(got.Awaiting, want) {
			t.Errorf("CreateHold %d: %s created %v awaiting %v; want %s created %v awaiting %v",
				i, got.ID, created, got.Awaiting, first.ID, i == 0, want)
		}
	}
	held, err := s.ListHolds(ctx, records.HoldFilter{InvoiceID: invoice, Status: records.HoldHeld})
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || !slices.Equal(held[0].Awaiting, want) || held[0].Dedupe != "d0" {
		t.Errorf("held holds of the invoice: %+v; want one, awaiting %v", held, want)
	}
	events, err := s.HoldEvents(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "events", ids(events, func(e records.HoldEvent) string { return e.Kind }),
		[]string{"placed", "merged", "merged", "merged", "merged"})
	if len(events) == 5 && events[4].Note != "awaiting 4500000001/00050" {
		t.Errorf("merged event's note: %q", events[4].Note)
	}
	if again, created, err := s.CreateHold(ctx, records.Hold{InvoiceID: "other", Dedupe: "d0"}); err != nil || created || again.ID != first.ID {
		t.Errorf("CreateHold with the first dedupe: %s, created %v, %v", again.ID, created, err)
	}

	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: first.ID, Kind: "released"}); err != nil {
		t.Fatal(err)
	}
	next := hold(invoice, t0)
	next.Dedupe = "after"
	if got := createHold(t, s, next); got.ID == first.ID {
		t.Errorf("CreateHold after the release: got the released hold %s, want a new one", got.ID)
	}
	// A hold stored released is no held hold to merge into.
	ended := hold(invoice, t0)
	ended.Status = records.HoldReleased
	createHold(t, s, ended)
}

func testApprovalSupersedes(t *testing.T, s records.Store) {
	ctx := t.Context()
	w := watchCase(t, s, "5105600001")
	a1 := approval(w.invoice, "agent")
	a1.Dedupe = "post"
	a1 = createApproval(t, s, a1, true)
	w.moved("first", records.CaseAwaitingApproval, "approval.requested")
	a2 := approval(w.invoice, "agent")
	a2.ProposedAction, a2.Dedupe = "reduce", "reduce"
	a2 = createApproval(t, s, a2, true)
	w.moved("second", records.CaseAwaitingApproval, "approval.superseded", "approval.requested")

	old, err := s.Approval(ctx, a1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if old.Status != records.ApprovalSuperseded || old.SupersededBy != a2.ID || old.Dedupe != "" {
		t.Errorf("the first approval: status %s, superseded by %q, dedupe %q; want superseded by %s, no dedupe",
			old.Status, old.SupersededBy, old.Dedupe, a2.ID)
	}
	pending, err := s.ListApprovals(ctx, records.ApprovalFilter{InvoiceID: w.invoice, Status: records.ApprovalPending})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "pending approvals", ids(pending, approvalID), []string{a2.ID})

	got, err := s.DecideApproval(ctx, a1.ID, records.ApprovalApproved, "boss", "", t0)
	if !errors.Is(err, records.ErrNotPending) {
		t.Errorf("deciding the superseded approval: %v, want ErrNotPending", err)
	}
	sameApproval(t, "the superseded approval, returned with ErrNotPending", got, old)
	w.still("superseded approval decided")

	if again, created, err := s.CreateApproval(ctx, a2, true); err != nil || created || again.ID != a2.ID {
		t.Errorf("CreateApproval with the same dedupe: %s, created %v, %v; want %s", again.ID, created, err, a2.ID)
	}
	w.still("approval asked again")

	// The superseded approval gave its dedupe up: asked again, the
	// proposal makes a new approval.
	a3 := approval(w.invoice, "agent")
	a3.Dedupe = "post"
	a3 = createApproval(t, s, a3, true)
	if a3.ID == a1.ID {
		t.Errorf("the first proposal asked again: got the superseded %s", a1.ID)
	}
	w.moved("first asked again", records.CaseAwaitingApproval, "approval.superseded", "approval.requested")
	ds, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "deliveries", ids(ds, func(d records.Delivery) string { return d.RecordID }), []string{a1.ID, a2.ID, a3.ID})
}

func testApprovedSupersedes(t *testing.T, s records.Store) {
	ctx := t.Context()
	const invoice = "5105600001"
	auto := func() records.Approval {
		a := approval(invoice, "agent")
		a.Status, a.Approver, a.DecidedBy, a.DecidedAt = records.ApprovalApproved, "auto", "auto", t0
		return createApproval(t, s, a, false)
	}
	status := func(want map[string]string) {
		t.Helper()
		for id, w := range want {
			a, err := s.Approval(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Status + " " + a.SupersededBy; got != w {
				t.Errorf("%s: %q, want %q", id, got, w)
			}
		}
	}
	a1 := auto()
	a2 := createApproval(t, s, approval(invoice, "agent"), false)
	// A pending approval leaves an approved one live.
	status(map[string]string{a1.ID: "approved ", a2.ID: "pending "})
	if _, err := s.DecideApproval(ctx, a2.ID, records.ApprovalApproved, "boss", "", t0); err != nil {
		t.Fatal(err)
	}
	status(map[string]string{a1.ID: "superseded " + a2.ID, a2.ID: "approved "})
	a3 := auto()
	status(map[string]string{a2.ID: "superseded " + a3.ID, a3.ID: "approved "})
	a4 := createApproval(t, s, approval(invoice, "agent"), false)
	a5 := auto()
	status(map[string]string{a3.ID: "superseded " + a5.ID, a4.ID: "superseded " + a5.ID, a5.ID: "approved "})
	// A rejection supersedes nothing.
	a6 := createApproval(t, s, approval(invoice, "agent"), false)
	if _, err := s.DecideApproval(ctx, a6.ID, records.ApprovalRejected, "boss", "", t0); err != nil {
		t.Fatal(err)
	}
	status(map[string]string{a5.ID: "approved ", a6.ID: "rejected "})
	c, err := s.Case(ctx, invoice)
	if err != nil {
		t.Fatal(err)
	}
	if c.ApprovalID != a6.ID || c.ApprovalStatus != records.ApprovalRejected || c.Version != 8 {
		t.Errorf("case: %+v; want approval %s rejected at version 8", c, a6.ID)
	}
}

func testDecisionMeetsHold(t *testing.T, s records.Store) {
	ctx := t.Context()
	decided := t0.Add(time.Hour)
	deliveries := func(st records.Store) []string {
		t.Helper()
		ds, err := st.ClaimDeliveries(ctx, decided.Add(time.Hour), 10, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		out := ids(ds, func(d records.Delivery) string { return d.Kind + " " + d.RecordID })
		slices.Sort(out)
		return out
	}
	waiting := func(st records.Store, invoice string, awaiting ...records.POItemRef) (records.Approval, records.Hold) {
		t.Helper()
		a := createApproval(t, st, approval(invoice, "agent"), false)
		h := hold(invoice, t0.Add(24*time.Hour))
		h.ApprovalID, h.Awaiting = a.ID, awaiting
		return a, createHold(t, st, h)
	}

	// Without HoldEvents the decision queues nothing.
	w := watchCase(t, s, "5105600001")
	a, h := waiting(s, w.invoice)
	w.version = 2
	if _, err := s.DecideApproval(ctx, a.ID, records.ApprovalApproved, "boss", "ok", decided); err != nil {
		t.Fatal(err)
	}
	c, evs := w.moved("decided", records.CaseReady, "approval.decided", "hold.released")
	if c.HoldID != "" || len(evs) != 2 || evs[1].Ref != h.ID || evs[1].Note != "approval "+a.ID+" approved by boss" {
		t.Errorf("decided: case %+v, events %+v", c, evs)
	}
	read, err := s.Hold(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read.Status != records.HoldReleased || !read.ReleasedAt.Equal(stored(decided)) || read.ApprovalID != "" {
		t.Errorf("the hold after the decision: %+v; want released at %v", read, decided)
	}
	events, _ := s.HoldEvents(ctx, h.ID)
	same(t, "hold events", ids(events, func(e records.HoldEvent) string { return e.Kind + ": " + e.Note }),
		[]string{"placed: GR_MISSING", "released: approval " + a.ID + " approved by boss"})
	same(t, "deliveries without HoldEvents", deliveries(s), []string{})

	// With HoldEvents it queues the decision and the release.
	s2 := reopenWith(t, s, records.Options{HoldEvents: true})
	a, h = waiting(s2, "5105600002")
	if _, err := s2.DecideApproval(ctx, a.ID, records.ApprovalRejected, "boss", "no", decided); err != nil {
		t.Fatal(err)
	}
	if read, _ := s2.Hold(ctx, h.ID); read.Status != records.HoldReleased {
		t.Errorf("the hold after a rejection: %s, want released", read.Status)
	}
	same(t, "deliveries with HoldEvents", deliveries(s2),
		[]string{records.DeliveryApprovalDecided + " " + a.ID, records.DeliveryHoldReleased + " " + h.ID})

	// A hold that awaits goods receipts stays held, due at once.
	w = watchCase(t, s2, "5105600003")
	a, h = waiting(s2, w.invoice, item(10))
	w.version = 2
	if _, err := s2.DecideApproval(ctx, a.ID, records.ApprovalApproved, "boss", "ok", decided); err != nil {
		t.Fatal(err)
	}
	w.moved("decided, goods awaited", records.CaseOnHold, "approval.decided", "hold.merged")
	read, _ = s2.Hold(ctx, h.ID)
	if read.Status != records.HoldHeld || !read.NextCheckAt.Equal(stored(decided)) || read.ApprovalID != "" {
		t.Errorf("the hold after the decision: %+v; want held, due at %v", read, decided)
	}
	events, _ = s2.HoldEvents(ctx, h.ID)
	if last := events[len(events)-1]; last.Kind != "merged" || last.Note != "approval "+a.ID+" decided; still awaiting goods receipts" {
		t.Errorf("last hold event: %+v", last)
	}
	same(t, "deliveries of a decision that releases nothing", deliveries(s2), []string{records.DeliveryApprovalDecided + " " + a.ID})
	if due, err := s2.ClaimDueHolds(ctx, decided, 10, time.Minute); err != nil || len(due) != 1 || due[0].ID != h.ID {
		t.Errorf("due holds at the decision: %v, %v; want %s", ids(due, holdID), err, h.ID)
	}

	// The routing's automatic approval meets the hold's approval at once.
	w = watchCase(t, s2, "5105600004")
	_, h = waiting(s2, w.invoice)
	w.version = 2
	auto := approval(w.invoice, "agent")
	auto.Status, auto.DecidedBy, auto.DecidedAt = records.ApprovalApproved, "auto", decided
	auto = createApproval(t, s2, auto, false)
	w.moved("approved automatically", records.CaseReady, "approval.superseded", "approval.requested", "hold.released")
	if read, _ := s2.Hold(ctx, h.ID); read.Status != records.HoldReleased || !read.ReleasedAt.Equal(stored(decided)) {
		t.Errorf("the hold after an automatic approval: %+v", read)
	}
	same(t, "deliveries of an automatic approval", deliveries(s2), []string{records.DeliveryHoldReleased + " " + h.ID})

	// Releases queue a delivery, closings do not.
	h5 := createHold(t, s2, hold("5105600005", t0))
	h6 := createHold(t, s2, hold("5105600006", t0))
	for _, ev := range []records.HoldEvent{{HoldID: h5.ID, At: decided, Kind: "released"}, {HoldID: h6.ID, At: decided, Kind: "closed"}} {
		if err := s2.ReleaseHold(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	same(t, "deliveries of a release and a closing", deliveries(s2), []string{records.DeliveryHoldReleased + " " + h5.ID})
}

func testHoldAwaiting(t *testing.T, s records.Store) {
	ctx := t.Context()
	h := hold("5105600001", t0)
	h.Awaiting = []records.POItemRef{item(10), item(20), item(30)}
	h = createHold(t, s, h)
	w := watchCase(t, s, h.InvoiceID)
	w.version = 1
	// More or other items than it awaits change nothing.
	if err := s.HoldAwaiting(ctx, h.ID, []records.POItemRef{item(10), item(20), item(40)}, t0); err != nil {
		t.Fatal(err)
	}
	w.still("other items")
	if err := s.HoldAwaiting(ctx, h.ID, nil, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, evs := w.moved("all arrived", records.CaseOnHold, "hold.receipt_seen")
	if len(evs) == 1 && evs[0].Note != "goods receipts seen: 4500000001/00010, 4500000001/00020, 4500000001/00030" {
		t.Errorf("note: %q", evs[0].Note)
	}
	read, _ := s.Hold(ctx, h.ID)
	if read.Status != records.HoldHeld || len(read.Awaiting) != 0 {
		t.Errorf("the hold: %+v; want held, awaiting none", read)
	}
	events, _ := s.HoldEvents(ctx, h.ID)
	if last := events[len(events)-1]; last.Kind != "receipt_seen" || !last.At.Equal(stored(t0.Add(time.Hour))) {
		t.Errorf("last hold event: %+v", last)
	}
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h.ID, Kind: "closed"}); err != nil {
		t.Fatal(err)
	}
	w.version++
	h2 := hold("5105600001", t0)
	h2 = createHold(t, s, h2)
	w.version++
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h2.ID, Kind: "closed"}); err != nil {
		t.Fatal(err)
	}
	w.version++
	if err := s.HoldAwaiting(ctx, h2.ID, h2.Awaiting[:1], t0); err != nil {
		t.Errorf("HoldAwaiting of an ended hold: %v", err)
	}
	w.still("ended hold")
	if read, _ := s.Hold(ctx, h2.ID); len(read.Awaiting) != 2 {
		t.Errorf("an ended hold's items: %v, want them as they were", read.Awaiting)
	}
	for _, id := range []string{"H0000999", "x"} {
		if err := s.HoldAwaiting(ctx, id, nil, t0); !errors.Is(err, records.ErrNotFound) {
			t.Errorf("HoldAwaiting(%q): %v, want ErrNotFound", id, err)
		}
	}
}

func testCasesConcurrent(t *testing.T, s records.Store) {
	ctx := t.Context()
	stores := twoStores(t, s)
	const n = 16
	race := func(f func(i int, s records.Store)) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				f(i, stores[i%2])
			})
		}
		close(start)
		wg.Wait()
	}
	version := func(invoice string) int64 {
		t.Helper()
		c, err := s.Case(ctx, invoice)
		if err != nil {
			t.Fatal(err)
		}
		return c.Version
	}

	// Holds of one invoice merge into one.
	var mu sync.Mutex
	holds, created := map[string]bool{}, 0
	race(func(i int, st records.Store) {
		h := hold("5105600001", t0)
		h.Dedupe, h.Awaiting = fmt.Sprint("h", i), []records.POItemRef{item(i + 1)}
		got, ok, err := st.CreateHold(ctx, h)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("CreateHold: %v", err)
			return
		}
		holds[got.ID] = true
		if ok {
			created++
		}
	})
	held, err := s.ListHolds(ctx, records.HoldFilter{InvoiceID: "5105600001"})
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != 1 || created != 1 || len(held) != 1 || len(held[0].Awaiting) != n {
		t.Errorf("%d CreateHold at once: ids %v, %d created, holds %+v; want one, created once, awaiting %d items", n, holds, created, held, n)
	}
	if v := version("5105600001"); v != n {
		t.Errorf("case version after %d holds placed or merged: %d", n, v)
	}

	// Approvals of one invoice: one pending at the end.
	race(func(i int, st records.Store) {
		a := approval("5105600002", "agent")
		a.ProposedAction, a.Dedupe = fmt.Sprint("proposal ", i), fmt.Sprint("a", i)
		if _, _, err := st.CreateApproval(ctx, a, true); err != nil {
			t.Errorf("CreateApproval: %v", err)
		}
	})
	as, err := s.ListApprovals(ctx, records.ApprovalFilter{InvoiceID: "5105600002"})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]int{}
	for _, a := range as {
		statuses[a.Status]++
		if a.Status == records.ApprovalSuperseded && a.SupersededBy == "" {
			t.Errorf("%s superseded by nothing", a.ID)
		}
	}
	same(t, fmt.Sprint(n, " CreateApproval at once"), statuses, map[string]int{records.ApprovalPending: 1, records.ApprovalSuperseded: n - 1})
	if v := version("5105600002"); v != n {
		t.Errorf("case version after %d approvals: %d", n, v)
	}

	// Decisions on two live approvals, and automatic approvals besides:
	// one approval is left approved and not superseded.
	const invoice = "5105600003"
	first := approval(invoice, "agent")
	first.Status, first.DecidedBy, first.DecidedAt = records.ApprovalApproved, "auto", t0
	first = createApproval(t, s, first, false)
	pending := createApproval(t, s, approval(invoice, "agent"), false)
	decided := 0
	race(func(i int, st records.Store) {
		var err error
		switch i % 4 {
		case 0, 1:
			_, err = st.DecideApproval(ctx, pending.ID, records.ApprovalApproved, fmt.Sprint("boss", i), "", t0)
		case 2:
			_, err = st.DecideApproval(ctx, first.ID, records.ApprovalApproved, fmt.Sprint("boss", i), "", t0)
		case 3:
			a := approval(invoice, "agent")
			a.Status, a.DecidedBy, a.DecidedAt, a.Dedupe = records.ApprovalApproved, "auto", t0, fmt.Sprint("auto", i)
			_, _, err = st.CreateApproval(ctx, a, false)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil && i%4 != 3:
			decided++
		case err != nil && !errors.Is(err, records.ErrNotPending):
			t.Errorf("%d: %v", i, err)
		}
	})
	as, err = s.ListApprovals(ctx, records.ApprovalFilter{InvoiceID: invoice})
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, a := range as {
		switch a.Status {
		case records.ApprovalApproved:
			live++
		case records.ApprovalPending:
			t.Errorf("%s still pending", a.ID)
		}
	}
	if live != 1 || decided > 1 {
		t.Errorf("after racing decisions: %d approved and not superseded, %d decisions taken; want 1, at most 1", live, decided)
	}
}

func testTouchCase(t *testing.T, s records.Store) {
	ctx := t.Context()
	touch := func(ref records.CaseRef, run string) records.Case {
		t.Helper()
		c, err := s.TouchCase(ctx, ref, run)
		if err != nil {
			t.Fatalf("TouchCase(%+v): %v", ref, err)
		}
		return c
	}
	counts := func(what string, c records.Case, invoice string, calls, runs int, version int64) {
		t.Helper()
		if c.InvoiceID != invoice || c.Calls != calls || c.Runs != runs || c.Version != version {
			t.Errorf("%s: case %s with %d calls, %d runs at version %d; want %s, %d, %d, %d",
				what, c.InvoiceID, c.Calls, c.Runs, c.Version, invoice, calls, runs, version)
		}
	}
	c := touch(records.CaseRef{InvoiceID: "5105600001"}, "run-a")
	counts("first call", c, "5105600001", 1, 1, 0)
	if c.State != records.CaseOpen || c.CreatedAt.IsZero() {
		t.Errorf("a case made by a call: %+v", c)
	}
	counts("second call", touch(records.CaseRef{InvoiceID: "5105600001"}, "run-a"), "5105600001", 2, 1, 0)
	counts("a call of a second run", touch(records.CaseRef{InvoiceID: "5105600001"}, "run-b"), "5105600001", 3, 2, 0)
	counts("a call of no run", touch(records.CaseRef{InvoiceID: "5105600001"}, ""), "5105600001", 4, 2, 0)
	counts("the second run again", touch(records.CaseRef{InvoiceID: "5105600001"}, "run-b"), "5105600001", 5, 2, 0)
	counts("the first run resumed", touch(records.CaseRef{InvoiceID: "5105600001"}, "run-a"), "5105600001", 6, 3, 0)
	if read, err := s.Case(ctx, "5105600001"); err != nil || read.Calls != 6 {
		t.Errorf("Case after three calls: %+v, %v", read, err)
	}

	a := createApproval(t, s, approval("5105600002", "agent"), false)
	c = touch(records.CaseRef{ApprovalID: a.ID}, "run-a")
	counts("by approval", c, "5105600002", 1, 1, 1)
	if c.State != records.CaseAwaitingApproval {
		t.Errorf("by approval: state %s", c.State)
	}
	h := hold("5105600003", t0)
	h.Awaiting = []records.POItemRef{item(10)}
	h = createHold(t, s, h)
	counts("by hold", touch(records.CaseRef{HoldID: h.ID}, ""), "5105600003", 1, 0, 1)
	counts("by item", touch(records.CaseRef{POItem: item(10)}, "run-a"), "5105600003", 1, 0, 1)
	counts("by item, read again", touch(records.CaseRef{POItem: item(10)}, "run-a"), "5105600003", 1, 0, 1)

	// The newest hold that waited for the item, held or not.
	h2 := hold("5105600004", t0)
	h2.Awaiting = []records.POItemRef{item(20), item(10)}
	h2 = createHold(t, s, h2)
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h2.ID, Kind: "released"}); err != nil {
		t.Fatal(err)
	}
	counts("by item of two holds", touch(records.CaseRef{POItem: item(10)}, ""), "5105600004", 0, 0, 2)

	for _, ref := range []records.CaseRef{
		{ApprovalID: "A0000999"}, {ApprovalID: "x"}, {HoldID: "H0000999"}, {HoldID: a.ID}, {POItem: item(99)},
	} {
		if c, err := s.TouchCase(ctx, ref, "run-a"); err != nil || c != (records.Case{}) {
			t.Errorf("TouchCase(%+v) of an unknown record: %+v, %v; want the zero Case", ref, c, err)
		}
	}
	for _, ref := range []records.CaseRef{{}, {InvoiceID: "1", HoldID: h.ID}} {
		if _, err := s.TouchCase(ctx, ref, "run-a"); err == nil {
			t.Errorf("TouchCase(%+v): no error, want one", ref)
		}
	}
}

func testRecordPosting(t *testing.T, s records.Store) {
	ctx := t.Context()
	w := watchCase(t, s, "5105600001")
	a := createApproval(t, s, approval(w.invoice, "agent"), false)
	if _, err := s.DecideApproval(ctx, a.ID, records.ApprovalApproved, "boss", "", t0); err != nil {
		t.Fatal(err)
	}
	h := createHold(t, s, hold(w.invoice, t0))
	w.version = 3
	at := t0.Add(time.Hour)
	c, err := s.RecordPosting(ctx, w.invoice, a.ID, "run-1", at)
	if err != nil {
		t.Fatal(err)
	}
	read, evs := w.moved("posted", records.CasePosted, "hold.closed", "invoice.posted")
	same(t, "case returned and read", c, read)
	if !c.Posted || c.HoldID != "" || !c.UpdatedAt.Equal(stored(at)) {
		t.Errorf("posted case: %+v", c)
	}
	if len(evs) == 2 && (evs[0].Ref != h.ID || evs[1].Ref != a.ID || evs[1].RunID != "run-1" || evs[0].RunID != "run-1") {
		t.Errorf("events: %+v", evs)
	}
	hr, _ := s.Hold(ctx, h.ID)
	if hr.Status != records.HoldReleased || !hr.ReleasedAt.Equal(stored(at)) {
		t.Errorf("hold after the posting: %+v", hr)
	}
	events, _ := s.HoldEvents(ctx, h.ID)
	if last := events[len(events)-1]; last.Kind != "closed" || last.Note != "invoice posted" {
		t.Errorf("last hold event: %+v", last)
	}

	again, err := s.RecordPosting(ctx, w.invoice, a.ID, "run-2", at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	same(t, "posting recorded again", again, c)
	w.still("posting recorded again")

	// An invoice nothing made a case of.
	c, err = s.RecordPosting(ctx, "5105600002", "", "", time.Time{})
	if err != nil || c.Version != 1 || c.State != records.CasePosted {
		t.Errorf("posting of a new case: %+v, %v", c, err)
	}
}

// TestMigrateCases: a database of schema version 4 with two pending
// approvals and two held holds of one invoice migrates to one of each.
func TestMigrateCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), records.DataFile) }},
		{"Postgres", func(t *testing.T) string { return recordstest.PostgresURL(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testMigrateCases(t, tc.url(t))
		})
	}
}

func testMigrateCases(t *testing.T, u string) {
	ctx := t.Context()
	db, err := records.OpenAtVersion(ctx, u, 4)
	if err != nil {
		t.Fatal(err)
	}
	const at = "'2025-03-03T09:30:15.123456Z'"
	for _, q := range []string{
		`INSERT INTO approvals (invoice_id, status, requested_by, requested_at, dedupe) VALUES
			('INV', 'pending', 'agent', ` + at + `, 'p1'),
			('INV', 'pending', 'agent', ` + at + `, 'p2'),
			('OTHER', 'pending', 'agent', ` + at + `, 'p3'),
			('INV', 'rejected', 'agent', ` + at + `, '')`,
		// An id once given is not given again.
		"DELETE FROM approvals WHERE id = 4",
		`INSERT INTO holds (invoice_id, reason, status, awaiting, created_at, next_check_at) VALUES
			('INV', 'GR_MISSING', 'held', '[{"po_id":"4500000001","item":"10"}]', ` + at + `, ` + at + `),
			('INV', 'GR_MISSING', 'held', '[{"po_id":"4500000001","item":"20"}]', ` + at + `, ` + at + `),
			('OTHER', 'GR_MISSING', 'held', 'null', ` + at + `, ` + at + `)`,
		"INSERT INTO hold_events (hold_id, at, kind, note) VALUES (1, " + at + ", 'placed', ''), (2, " + at + ", 'placed', ''), (3, " + at + ", 'placed', '')",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := records.Open(ctx, u, records.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	as, err := s.ListApprovals(ctx, records.ApprovalFilter{})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "approvals", ids(as, func(a records.Approval) string { return a.ID + " " + a.Status + " " + a.SupersededBy + " " + a.Dedupe }),
		[]string{"A0000003 pending  p3", "A0000002 pending  p2", "A0000001 superseded A0000002 "})
	hs, err := s.ListHolds(ctx, records.HoldFilter{})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "holds", ids(hs, func(h records.Hold) string { return h.ID + " " + h.Status }),
		[]string{"H0000003 held", "H0000002 held", "H0000001 released"})
	events, err := s.HoldEvents(ctx, "H0000001")
	if err != nil {
		t.Fatal(err)
	}
	same(t, "events of the hold merged", ids(events, func(e records.HoldEvent) string { return e.Kind + " " + e.Note }),
		[]string{"placed ", "closed merged into H0000002"})
	if len(events) == 2 && (events[1].At.IsZero() || !events[1].At.Equal(hs[2].ReleasedAt)) {
		t.Errorf("closed at %v, released at %v; want the same time", events[1].At, hs[2].ReleasedAt)
	}

	// The records go on from there.
	a := createApproval(t, s, approval("INV", "agent"), false)
	if a.ID != "A0000005" {
		t.Errorf("new approval's id: %s, want A0000005", a.ID)
	}
	if old, _ := s.Approval(ctx, "A0000002"); old.Status != records.ApprovalSuperseded || old.SupersededBy != a.ID {
		t.Errorf("A0000002 after a new approval: %+v", old)
	}
	if _, created, err := s.CreateHold(ctx, hold("INV", t0)); err != nil || created {
		t.Errorf("CreateHold of INV: created %v, %v; want merged", created, err)
	}
	if c, err := s.TouchCase(ctx, records.CaseRef{POItem: records.POItemRef{POID: "4500000001", Item: "10"}}, ""); err != nil || c.InvoiceID != "INV" {
		t.Errorf("the case of an item a hold awaited before the migration: %+v, %v", c, err)
	}
}
