package records_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// An approval sent back to the agent with a question, on both engines.
func TestSendBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) (records.Store, string)
	}{
		{"SQLite", func(t *testing.T) (records.Store, string) { return recordstest.SQLite(t) }},
		{"Postgres", func(t *testing.T) (records.Store, string) { return recordstest.Postgres(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, u := tc.open(t)
			urls.Store(s, u)
			t.Run("decision", func(t *testing.T) { testSendBack(t, reopenWith(t, s, records.Options{HoldEvents: true})) })
			t.Run("refusals", func(t *testing.T) { testSendBackRefused(t, s) })
		})
	}
}

func testSendBack(t *testing.T, s records.Store) {
	ctx := t.Context()
	asked := t0.Add(time.Hour)
	const question = "Is the 8 % surcharge in the contract? Quote the clause."
	w := watchCase(t, s, "5105600102")
	a := approval(w.invoice, "agent")
	a.Dedupe = "accept_variance 135.00"
	a = createApproval(t, s, a, false)
	h := hold(w.invoice, t0.Add(24*time.Hour))
	h.Awaiting, h.ApprovalID = nil, a.ID
	h = createHold(t, s, h)
	w.version = 2

	got, err := s.DecideApproval(ctx, a.ID, records.ApprovalSentBack, "m.keller", question, asked)
	if err != nil {
		t.Fatalf("DecideApproval sent_back: %v", err)
	}
	want := a
	want.Status, want.DecidedBy, want.DecisionReason, want.DecidedAt, want.Dedupe = records.ApprovalSentBack, "m.keller", question, stored(asked), ""
	sameApproval(t, "the approval sent back", got, want)
	read, err := s.Approval(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameApproval(t, "the approval sent back, read back", read, want)

	// The case moves on: no approval waits, the hold that waited for the
	// decision is released in the same transaction, and the events say
	// which decision it was.
	c, evs := w.moved("sent back", records.CaseOpen, "approval.decided", "hold.released")
	if c.ApprovalID != a.ID || c.ApprovalStatus != records.ApprovalSentBack || c.HoldID != "" {
		t.Errorf("case after the send-back: %+v; want approval %s sent_back, no hold", c, a.ID)
	}
	if len(evs) == 2 && (evs[0].Note != "sent_back by m.keller: "+question || evs[1].Note != "approval "+a.ID+" sent_back by m.keller") {
		t.Errorf("events: %q and %q; want the decision named", evs[0].Note, evs[1].Note)
	}
	rh, err := s.Hold(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rh.Status != records.HoldReleased || !rh.ReleasedAt.Equal(stored(asked)) {
		t.Errorf("the hold after the send-back: %s at %v; want released at %v", rh.Status, rh.ReleasedAt, stored(asked))
	}
	ds, err := s.ClaimDeliveries(ctx, asked.Add(time.Hour), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kinds := ids(ds, func(d records.Delivery) string { return d.Kind + " " + d.RecordID })
	slices.Sort(kinds)
	same(t, "deliveries", kinds, []string{records.DeliveryApprovalDecided + " " + a.ID, records.DeliveryHoldReleased + " " + h.ID})

	// A decision stands: the approval sent back is no longer decidable.
	again, err := s.DecideApproval(ctx, a.ID, records.ApprovalApproved, "j.doe", "fine after all", asked)
	if !errors.Is(err, records.ErrNotPending) {
		t.Errorf("approving the approval sent back: %v, want ErrNotPending", err)
	}
	sameApproval(t, "the approval returned with ErrNotPending", again, want)
	w.still("a decision on the approval sent back")

	// The same proposal asked again, with the question answered, is a
	// new pending approval, never the one sent back.
	answer := approval(w.invoice, "agent")
	answer.Dedupe, answer.Justification = "accept_variance 135.00", "Clause 4.2 of the contract allows the surcharge."
	answer = createApproval(t, s, answer, false)
	if answer.ID == a.ID || answer.Status != records.ApprovalPending {
		t.Errorf("the proposal asked again: %s %s; want a new pending approval", answer.ID, answer.Status)
	}
	c, evs = w.moved("asked again", records.CaseAwaitingApproval, "approval.requested")
	if c.ApprovalID != answer.ID {
		t.Errorf("case approval: %s, want %s", c.ApprovalID, answer.ID)
	}
	if read, _ := s.Approval(ctx, a.ID); read.Status != records.ApprovalSentBack || read.SupersededBy != "" {
		t.Errorf("the approval sent back after the new request: %s, superseded by %q; want it sent_back still", read.Status, read.SupersededBy)
	}
	// Asked once more, the proposal is the new approval.
	if twice, created, err := s.CreateApproval(ctx, answer, false); err != nil || created || twice.ID != answer.ID {
		t.Errorf("the proposal asked a third time: %s, created %v, %v; want %s", twice.ID, created, err, answer.ID)
	}
	list, err := s.ListApprovals(ctx, records.ApprovalFilter{Status: records.ApprovalSentBack})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "approvals sent back", ids(list, approvalID), []string{a.ID})
	if _, err := s.DecideApproval(ctx, answer.ID, records.ApprovalApproved, "m.keller", "Clause 4.2 confirmed.", asked.Add(time.Hour)); err != nil {
		t.Errorf("approving the answer: %v", err)
	}
	w.moved("answer approved", records.CaseReady, "approval.decided")
}

func testSendBackRefused(t *testing.T, s records.Store) {
	ctx := t.Context()
	a := createApproval(t, s, approval("5105600001", "agent"), false)
	if _, err := s.DecideApproval(ctx, a.ID, records.ApprovalSentBack, "agent", "Who are you?", t0); !errors.Is(err, records.ErrSameRequester) {
		t.Errorf("sent back by its requester: %v, want ErrSameRequester", err)
	}
	if _, err := s.DecideApproval(ctx, a.ID, records.ApprovalRejected, "boss", "no", t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.DecideApproval(ctx, a.ID, records.ApprovalSentBack, "other", "Why?", t0)
	if !errors.Is(err, records.ErrNotPending) || got.Status != records.ApprovalRejected {
		t.Errorf("a rejected approval sent back: %s, %v; want it rejected still and ErrNotPending", got.Status, err)
	}
	if _, err := s.DecideApproval(ctx, "A0000999", records.ApprovalSentBack, "boss", "Why?", t0); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("an unknown approval sent back: %v, want ErrNotFound", err)
	}
}

// The migration that allows sent_back keeps every approval, its id
// sequence and the one pending approval per invoice.
func TestMigrateSentBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), records.DataFile) }},
		{"Postgres", func(t *testing.T) string { return recordstest.PostgresURL(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) { testMigrateSentBack(t, tc.url(t)) })
	}
}

func testMigrateSentBack(t *testing.T, u string) {
	ctx := t.Context()
	db, err := records.OpenAtVersion(ctx, u, 5)
	if err != nil {
		t.Fatal(err)
	}
	const at = "'2025-03-03T09:30:15.123456Z'"
	for _, q := range []string{
		`INSERT INTO approvals (invoice_id, status, requested_by, requested_at, dedupe, superseded_by) VALUES
			('INV', 'superseded', 'agent', ` + at + `, '', 'A0000002'),
			('INV', 'pending', 'agent', ` + at + `, 'p2', ''),
			('OTHER', 'approved', 'agent', ` + at + `, 'p3', ''),
			('GONE', 'rejected', 'agent', ` + at + `, '', '')`,
		// An id once given is not given again.
		"DELETE FROM approvals WHERE id = 4",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO approvals (invoice_id, status) VALUES ('INV', 'sent_back')`); err == nil {
		t.Error("a sent_back approval stored before the migration")
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
		[]string{"A0000003 approved  p3", "A0000002 pending  p2", "A0000001 superseded A0000002 "})
	if _, err := records.DB(s).ExecContext(ctx, records.Rebind(s, `INSERT INTO approvals (invoice_id, status) VALUES ('INV', 'pending')`)); err == nil {
		t.Error("a second pending approval of INV stored after the migration")
	}
	if _, err := records.DB(s).ExecContext(ctx, records.Rebind(s, `INSERT INTO approvals (invoice_id, status) VALUES ('INV', 'maybe')`)); err == nil {
		t.Error("an approval of status maybe stored after the migration")
	}
	if _, err := s.DecideApproval(ctx, "A0000002", records.ApprovalSentBack, "boss", "Which contract?", t0); err != nil {
		t.Fatalf("sending A0000002 back after the migration: %v", err)
	}
	// The refused inserts above may have used ids of PostgreSQL's
	// sequence: a new id is past the deleted A0000004, not the next one.
	a := createApproval(t, s, approval("INV", "agent"), false)
	if a.ID <= "A0000004" {
		t.Errorf("new approval's id: %s, want one after A0000004", a.ID)
	}
}
