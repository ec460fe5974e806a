package records_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

func TestSQLite(t *testing.T) {
	testStore(t, func(t *testing.T) records.Store {
		s, u := recordstest.SQLite(t)
		urls.Store(s, u)
		return s
	})
	t.Run("concurrent opens migrate once", func(t *testing.T) {
		testConcurrentOpens(t, "sqlite:"+filepath.Join(t.TempDir(), records.DataFile))
	})
}

func TestPostgres(t *testing.T) {
	testStore(t, func(t *testing.T) records.Store {
		s, u := recordstest.Postgres(t)
		urls.Store(s, u)
		return s
	})
	t.Run("concurrent opens migrate once", func(t *testing.T) {
		testConcurrentOpens(t, recordstest.PostgresURL(t))
	})
}

// urls maps each store the suite opened to the URL of its database, so
// that a test can open a second store on the same database.
var urls sync.Map

// reopen opens another store on the database of s, closed at the test's
// end.
func reopen(t *testing.T, s records.Store) records.Store {
	t.Helper()
	return reopenWith(t, s, records.Options{})
}

// reopenWith opens another store with opts on the database of s, closed at
// the test's end.
func reopenWith(t *testing.T, s records.Store, opts records.Options) records.Store {
	t.Helper()
	u, ok := urls.Load(s)
	if !ok {
		t.Fatal("reopen: the store was not opened by the suite")
	}
	s2, err := records.Open(t.Context(), u.(string), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	urls.Store(s2, u)
	return s2
}

// t0 is the suite's clock: not in UTC, and with nanoseconds, as a caller's
// time may be.
var t0 = time.Date(2025, 3, 3, 10, 30, 15, 123456789, time.FixedZone("CET", 3600))

// stored is t as the store keeps it: UTC, to the microsecond.
func stored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// testStore runs every test of the Store contract on stores from open,
// each test on a new, empty database.
func testStore(t *testing.T, open func(t *testing.T) records.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s records.Store)
	}{
		{"engine and ping", testEngine},
		{"approval round trip", testApprovalRoundTrip},
		{"ids of the wrong form", testBadIDs},
		{"dedupe", testDedupe},
		{"dedupe under concurrency", testDedupeConcurrent},
		{"decide approval", testDecideApproval},
		{"list approvals", testListApprovals},
		{"page limits", testPageLimits},
		{"hold round trip", testHoldRoundTrip},
		{"claim due holds", testClaimDueHolds},
		{"claim due holds from two stores", testClaimHoldsTwoStores},
		{"reschedule hold", testRescheduleHold},
		{"release hold", testReleaseHold},
		{"list holds", testListHolds},
		{"handover round trip", testHandoverRoundTrip},
		{"handover transitions", testHandoverTransitions},
		{"list handovers", testListHandovers},
		{"outbox", testOutbox},
		{"claim deliveries from two stores", testClaimDeliveriesTwoStores},
		{"keys", testKeys},
		{"key cap", testKeyCap},
		{"key cap under concurrency", testKeyCapConcurrent},
		{"one claim of many at once", testKeyConcurrentClaim},
		{"one takeover of many at once", testKeyConcurrentTakeover},
		{"delete expired keys", testDeleteExpiredKeys},
		{"invoice leases", testInvoiceLeases},
		{"one invoice lease of many at once", testInvoiceLeaseConcurrent},
		{"one invoice lease takeover of many at once", testInvoiceLeaseConcurrentTakeover},
		{"claim a write", testClaimWrite},
		{"settle a write", testSettle},
		{"commits are durable after a claim", testDurableAfterClaim},
		{"audit", testAudit},
		{"audit is append-only", testAuditAppendOnly},
		{"times", testTimes},
		{"survives reopen", testReopen},
		{"case transitions", testCaseTransitions},
		{"holds of an invoice merge", testHoldsMerge},
		{"a new approval supersedes the pending one", testApprovalSupersedes},
		{"an approval approved supersedes the live ones", testApprovedSupersedes},
		{"a decision meets the hold's approval", testDecisionMeetsHold},
		{"hold awaiting", testHoldAwaiting},
		{"cases under concurrency", testCasesConcurrent},
		{"touch case", testTouchCase},
		{"record posting", testRecordPosting},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func testEngine(t *testing.T, s records.Store) {
	if got := s.Engine(); got != "sqlite" && got != "postgres" {
		t.Errorf("Engine() = %q, want sqlite or postgres", got)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// Fixtures.

func approval(invoice, requestedBy string) records.Approval {
	return records.Approval{
		InvoiceID: invoice, FiscalYear: "2025", CompanyCode: "1000", Status: records.ApprovalPending,
		Approver: "AP-MANAGERS", ProposedAction: "post", Justification: "price within tolerance",
		Amount: decimal.RequireFromString("1234.50"), Currency: "EUR",
		RequestedBy: requestedBy, RequestedAt: t0,
	}
}

func hold(invoice string, next time.Time) records.Hold {
	return records.Hold{
		InvoiceID: invoice, FiscalYear: "2025", Reason: "GR_MISSING", RecheckAt: next,
		Awaiting:  []records.POItemRef{{POID: "4500000001", Item: "00010"}, {POID: "4500000001", Item: "00020"}},
		CreatedBy: "agent", CreatedAt: t0,
	}
}

func handover(invoice, queue string) records.Handover {
	return records.Handover{
		InvoiceID: invoice, Queue: queue, Code: "PRICE_VARIANCE", Summary: "price 3% over the order",
		Evidence: []string{"PO 4500000001 item 10: 100.00", "invoice: 103.00"}, History: `[{"step":1}]`,
		CreatedBy: "agent", CreatedAt: t0,
	}
}

func createApproval(t *testing.T, s records.Store, a records.Approval, notify bool) records.Approval {
	t.Helper()
	got, created, err := s.CreateApproval(t.Context(), a, notify)
	if err != nil || !created {
		t.Fatalf("CreateApproval: created %v, err %v; want created", created, err)
	}
	return got
}

func createHold(t *testing.T, s records.Store, h records.Hold) records.Hold {
	t.Helper()
	got, created, err := s.CreateHold(t.Context(), h)
	if err != nil || !created {
		t.Fatalf("CreateHold: created %v, err %v; want created", created, err)
	}
	return got
}

func createHandover(t *testing.T, s records.Store, h records.Handover, notify bool) records.Handover {
	t.Helper()
	got, created, err := s.CreateHandover(t.Context(), h, notify)
	if err != nil || !created {
		t.Fatalf("CreateHandover: created %v, err %v; want created", created, err)
	}
	return got
}

// sameApproval fails the test unless got and want are the same approval;
// amounts compare by value (12.50 is 12.5).
func sameApproval(t *testing.T, what string, got, want records.Approval) {
	t.Helper()
	if got.Amount.Equal(want.Amount) {
		got.Amount = want.Amount
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\ngot  %+v\nwant %+v", what, got, want)
	}
}

func same[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\ngot  %+v\nwant %+v", what, got, want)
	}
}

func ids[T any](list []T, id func(T) string) []string {
	out := []string{}
	for _, v := range list {
		out = append(out, id(v))
	}
	return out
}

func approvalID(a records.Approval) string { return a.ID }
func holdID(h records.Hold) string         { return h.ID }
func handoverID(h records.Handover) string { return h.ID }
func deliveryID(d records.Delivery) string { return d.ID }

// Approvals.

func testApprovalRoundTrip(t *testing.T, s records.Store) {
	ctx := t.Context()
	a := approval("5105600001", "agent")
	a.Dedupe = "d1"
	got := createApproval(t, s, a, false)
	want := a
	want.ID, want.RequestedAt = "A0000001", stored(t0)
	sameApproval(t, "CreateApproval", got, want)
	read, err := s.Approval(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameApproval(t, "Approval", read, want)

	if second := createApproval(t, s, approval("5105600002", "agent"), false); second.ID != "A0000002" {
		t.Errorf("second approval id %q, want A0000002", second.ID)
	}

	// A zero Status is pending, a zero RequestedAt the time of the call.
	before := time.Now().Add(-time.Second)
	bare := createApproval(t, s, records.Approval{InvoiceID: "5105600003", RequestedBy: "agent"}, false)
	if bare.Status != records.ApprovalPending {
		t.Errorf("status of an approval created without one: got %q, want pending", bare.Status)
	}
	if bare.RequestedAt.Before(before) || bare.RequestedAt.Location() != time.UTC {
		t.Errorf("RequestedAt of an approval created without one: got %v, want now in UTC", bare.RequestedAt)
	}

	// An approval may be stored decided, as the routing's automatic one is.
	auto := approval("5105600004", "agent")
	auto.Status, auto.DecidedBy, auto.DecidedAt, auto.DecisionReason = records.ApprovalApproved, "auto", t0, "within the limit"
	got = createApproval(t, s, auto, false)
	read, err = s.Approval(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	auto.ID, auto.RequestedAt, auto.DecidedAt = got.ID, stored(t0), stored(t0)
	sameApproval(t, "decided approval", read, auto)
}

func testBadIDs(t *testing.T, s records.Store) {
	ctx := t.Context()
	createApproval(t, s, approval("5105600001", "agent"), false)
	h := createHold(t, s, hold("5105600001", t0))
	createHandover(t, s, handover("5105600001", "AP"), true)

	calls := []struct {
		name, prefix string
		list         bool // a list: an unknown id of the right form is a cursor like any other
		call         func(id string) error
	}{
		{"Approval", "A", false, func(id string) error { _, err := s.Approval(ctx, id); return err }},
		{"DecideApproval", "A", false, func(id string) error {
			_, err := s.DecideApproval(ctx, id, records.ApprovalApproved, "boss", "", t0)
			return err
		}},
		{"Hold", "H", false, func(id string) error { _, err := s.Hold(ctx, id); return err }},
		{"HoldEvents", "H", false, func(id string) error { _, err := s.HoldEvents(ctx, id); return err }},
		{"RescheduleHold", "H", false, func(id string) error { return s.RescheduleHold(ctx, id, t0, true, t0) }},
		{"ReleaseHold", "H", false, func(id string) error {
			return s.ReleaseHold(ctx, records.HoldEvent{HoldID: id, At: t0, Kind: "released"})
		}},
		{"Handover", "HO", false, func(id string) error { _, err := s.Handover(ctx, id); return err }},
		{"TakeHandover", "HO", false, func(id string) error { _, err := s.TakeHandover(ctx, id, "clerk", t0); return err }},
		{"ResolveHandover", "HO", false, func(id string) error {
			_, err := s.ResolveHandover(ctx, id, "clerk", "", t0)
			return err
		}},
		{"DeliveryDone", "D", false, func(id string) error { return s.DeliveryDone(ctx, id, t0) }},
		{"DeliveryFailed", "D", false, func(id string) error { return s.DeliveryFailed(ctx, id, t0, "boom") }},
		{"ListApprovals after", "A", true, func(id string) error {
			_, err := s.ListApprovals(ctx, records.ApprovalFilter{Page: records.Page{After: id}})
			return err
		}},
		{"ListHolds after", "H", true, func(id string) error {
			_, err := s.ListHolds(ctx, records.HoldFilter{Page: records.Page{After: id}})
			return err
		}},
		{"ListHandovers after", "HO", true, func(id string) error {
			_, err := s.ListHandovers(ctx, records.HandoverFilter{Page: records.Page{After: id}})
			return err
		}},
	}
	// Each of these exists, as a record of its kind.
	existing := []string{"A0000001", "H0000001", "HO0000001", "D0000001"}
	for _, c := range calls {
		p := c.prefix
		bad := []string{
			p, p + "1", p + "000001", p + "00000001", p + "0000000", p + "0000001x", p + "-000001",
			" " + p + "0000001", p + "99999999999999999999", "X0000001", strings.ToLower(p) + "0000001",
		}
		if !c.list {
			bad = append(bad, "", p+"9999999")
		}
		for _, id := range existing {
			if !strings.HasPrefix(id, p+"0") {
				bad = append(bad, id) // another kind's id
			}
		}
		for _, id := range bad {
			if err := c.call(id); !errors.Is(err, records.ErrNotFound) {
				t.Errorf("%s(%q): got %v, want ErrNotFound", c.name, id, err)
			}
		}
	}
	if got, err := s.Hold(ctx, h.ID); err != nil || got.ID != "H0000001" {
		t.Errorf("Hold(%q) = %q, %v; want it found", h.ID, got.ID, err)
	}
}

func testDedupe(t *testing.T, s records.Store) {
	ctx := t.Context()
	type created struct {
		id      string
		created bool
	}
	kinds := []struct {
		name   string
		create func(dedupe, invoice string) (created, error)
	}{
		{"approval", func(dedupe, invoice string) (created, error) {
			a := approval(invoice, "agent")
			a.Dedupe = dedupe
			got, ok, err := s.CreateApproval(ctx, a, true)
			if ok || err != nil {
				return created{got.ID, ok}, err
			}
			return created{got.ID, ok}, checkInvoice(got.InvoiceID)
		}},
		{"hold", func(dedupe, invoice string) (created, error) {
			h := hold(invoice, t0)
			h.Dedupe = dedupe
			got, ok, err := s.CreateHold(ctx, h)
			if ok || err != nil {
				return created{got.ID, ok}, err
			}
			return created{got.ID, ok}, checkInvoice(got.InvoiceID)
		}},
		{"handover", func(dedupe, invoice string) (created, error) {
			// Of invoices of their own: a handover closes its invoice's hold.
			h := handover("ho-"+invoice, "AP")
			h.Dedupe = dedupe
			got, ok, err := s.CreateHandover(ctx, h, true)
			if ok || err != nil {
				return created{got.ID, ok}, err
			}
			return created{got.ID, ok}, checkInvoice(strings.TrimPrefix(got.InvoiceID, "ho-"))
		}},
	}
	for _, k := range kinds {
		first, err := k.create("same", "first")
		if err != nil || !first.created {
			t.Fatalf("%s: first create: %+v, %v; want created", k.name, first, err)
		}
		again, err := k.create("same", "second")
		if err != nil {
			t.Fatal(err)
		}
		if again != (created{first.id, false}) {
			t.Errorf("%s: create with the same dedupe: got %+v, want %+v (the first, not created)", k.name, again, created{first.id, false})
		}
		// Of other invoices: a second hold of one invoice merges into its
		// first.
		e1, err1 := k.create("", "third")
		e2, err2 := k.create("", "fourth")
		if err1 != nil || err2 != nil || !e1.created || !e2.created || e1.id == e2.id {
			t.Errorf("%s: two creates without dedupe: got %+v %v, %+v %v; want two records", k.name, e1, err1, e2, err2)
		}
	}
	// The deduplicated creates queued nothing: one delivery per created
	// record with notify (the first approval and handover, and those
	// without dedupe).
	ds, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour), 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 6 {
		t.Errorf("deliveries queued: got %d, want 6 (none for a deduplicated create)", len(ds))
	}
	events, err := s.HoldEvents(ctx, "H0000001")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Errorf("events of a hold created twice: got %d, want 1", len(events))
	}
}

// checkInvoice is the check that a deduplicated create returned the record
// created first.
func checkInvoice(invoice string) error {
	if invoice != "first" {
		return fmt.Errorf("deduplicated create returned invoice %q, want the first record's", invoice)
	}
	return nil
}

func testDedupeConcurrent(t *testing.T, s records.Store) {
	ctx := t.Context()
	stores := twoStores(t, s)
	const n = 20
	kinds := []struct {
		name   string
		create func(i int) (string, bool, error)
	}{
		{"approval", func(i int) (string, bool, error) {
			a := approval(fmt.Sprint(i), "agent")
			a.Dedupe = "same"
			got, ok, err := stores[i%2].CreateApproval(ctx, a, true)
			return got.ID, ok, err
		}},
		{"hold", func(i int) (string, bool, error) {
			h := hold(fmt.Sprint(i), t0)
			h.Dedupe = "same"
			got, ok, err := stores[i%2].CreateHold(ctx, h)
			return got.ID, ok, err
		}},
		{"handover", func(i int) (string, bool, error) {
			h := handover(fmt.Sprint(i), "AP")
			h.Dedupe = "same"
			got, ok, err := stores[i%2].CreateHandover(ctx, h, true)
			return got.ID, ok, err
		}},
	}
	for _, k := range kinds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		created := 0
		seen := map[string]bool{}
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				id, ok, err := k.create(i)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("%s: create: %v", k.name, err)
					return
				}
				seen[id] = true
				if ok {
					created++
				}
			})
		}
		close(start)
		wg.Wait()
		if created != 1 || len(seen) != 1 {
			t.Errorf("%s: %d concurrent creates with one dedupe: got %d created, ids %v; want 1 created, one id", k.name, n, created, seen)
		}
	}
	ds, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour), 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 {
		t.Errorf("deliveries queued: got %d, want 2 (one approval, one handover)", len(ds))
	}
}

func testDecideApproval(t *testing.T, s records.Store) {
	ctx := t.Context()
	at := t0.Add(time.Hour)
	tests := []struct {
		name     string
		before   func(id string) // runs before the decision
		id       string          // empty: the approval's
		status   string
		by       string
		wantErr  error
		wantStat string // the approval's status afterwards
	}{
		{name: "approve", status: records.ApprovalApproved, by: "boss", wantStat: records.ApprovalApproved},
		{name: "reject", status: records.ApprovalRejected, by: "boss", wantStat: records.ApprovalRejected},
		{name: "by the requester", status: records.ApprovalApproved, by: "alice", wantErr: records.ErrSameRequester, wantStat: records.ApprovalPending},
		{name: "decided before", before: func(id string) {
			if _, err := s.DecideApproval(ctx, id, records.ApprovalApproved, "boss", "ok", at); err != nil {
				t.Fatal(err)
			}
		}, status: records.ApprovalRejected, by: "other", wantErr: records.ErrNotPending, wantStat: records.ApprovalApproved},
		{name: "unknown", id: "A0000999", status: records.ApprovalApproved, by: "boss", wantErr: records.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := createApproval(t, s, approval("5105600001", "alice"), false)
			if tc.before != nil {
				tc.before(a.ID)
			}
			id := tc.id
			if id == "" {
				id = a.ID
			}
			got, err := s.DecideApproval(ctx, id, tc.status, tc.by, "reason "+tc.name, at)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("DecideApproval: got error %v, want %v", err, tc.wantErr)
			}
			if tc.wantStat == "" {
				return
			}
			cur, err := s.Approval(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if cur.Status != tc.wantStat {
				t.Errorf("status afterwards: got %q, want %q", cur.Status, tc.wantStat)
			}
			switch tc.wantErr {
			case nil:
				want := a
				want.Status, want.DecidedBy, want.DecisionReason, want.DecidedAt = tc.status, tc.by, "reason "+tc.name, stored(at)
				sameApproval(t, "decided approval", got, want)
				sameApproval(t, "decided approval read back", cur, want)
			case records.ErrNotPending:
				sameApproval(t, "approval returned with ErrNotPending", got, cur)
				if cur.DecidedBy != "boss" {
					t.Errorf("DecidedBy after a refused decision: got %q, want boss", cur.DecidedBy)
				}
			}
		})
	}
	if _, err := s.DecideApproval(ctx, "A0000001", "maybe", "boss", "", at); err == nil {
		t.Error(`DecideApproval with status "maybe": got no error`)
	}
}

func testListApprovals(t *testing.T, s records.Store) {
	ctx := t.Context()
	// Each new approval of an invoice supersedes its pending one; one
	// approved stays until another is approved.
	for i := 1; i <= 7; i++ {
		a := createApproval(t, s, approval(fmt.Sprint("INV", i%2), "agent"), false)
		if i%3 == 0 {
			if _, err := s.DecideApproval(ctx, a.ID, records.ApprovalApproved, "boss", "", t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name string
		f    records.ApprovalFilter
		want []string
	}{
		{"all", records.ApprovalFilter{}, []string{"A0000007", "A0000006", "A0000005", "A0000004", "A0000003", "A0000002", "A0000001"}},
		{"pending", records.ApprovalFilter{Status: records.ApprovalPending}, []string{"A0000007"}},
		{"superseded", records.ApprovalFilter{Status: records.ApprovalSuperseded}, []string{"A0000005", "A0000004", "A0000002", "A0000001"}},
		{"approved", records.ApprovalFilter{Status: records.ApprovalApproved}, []string{"A0000006", "A0000003"}},
		{"invoice", records.ApprovalFilter{InvoiceID: "INV1"}, []string{"A0000007", "A0000005", "A0000003", "A0000001"}},
		{"invoice and status", records.ApprovalFilter{InvoiceID: "INV0", Status: records.ApprovalApproved}, []string{"A0000006"}},
		{"first page", records.ApprovalFilter{Page: records.Page{Limit: 3}}, []string{"A0000007", "A0000006", "A0000005"}},
		{"second page", records.ApprovalFilter{Page: records.Page{Limit: 3, After: "A0000005"}}, []string{"A0000004", "A0000003", "A0000002"}},
		{"last page", records.ApprovalFilter{Page: records.Page{Limit: 3, After: "A0000002"}}, []string{"A0000001"}},
		{"past the end", records.ApprovalFilter{Page: records.Page{Limit: 3, After: "A0000001"}}, []string{}},
		{"page of a filter", records.ApprovalFilter{Status: records.ApprovalSuperseded, Page: records.Page{Limit: 2, After: "A0000005"}}, []string{"A0000004", "A0000002"}},
	}
	for _, tc := range tests {
		got, err := s.ListApprovals(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		same(t, tc.name, ids(got, approvalID), tc.want)
	}
}

func testPageLimits(t *testing.T, s records.Store) {
	for _, tc := range []struct{ limit, want int }{{0, 50}, {-1, 50}, {1, 1}, {500, 500}, {501, 500}, {100000, 500}} {
		if got := records.PageLimit(records.Page{Limit: tc.limit}); got != tc.want {
			t.Errorf("page limit for Limit %d: got %d, want %d", tc.limit, got, tc.want)
		}
	}
	for _, tc := range []struct{ limit, want int }{{0, 100}, {-5, 100}, {7, 7}, {1000, 1000}, {1001, 1000}} {
		if got := records.AuditLimit(records.AuditFilter{Limit: tc.limit}); got != tc.want {
			t.Errorf("audit limit for Limit %d: got %d, want %d", tc.limit, got, tc.want)
		}
	}
	ctx := t.Context()
	for range 55 {
		createApproval(t, s, approval("INV", "agent"), false)
	}
	got, err := s.ListApprovals(ctx, records.ApprovalFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 || got[0].ID != "A0000055" {
		t.Errorf("list of 55 without a limit: got %d from %v, want 50 from A0000055", len(got), ids(got[:1], approvalID))
	}
}

// Holds.

func testHoldRoundTrip(t *testing.T, s records.Store) {
	ctx := t.Context()
	h := hold("5105600001", t0.Add(time.Hour))
	h.Dedupe = "h1"
	got := createHold(t, s, h)
	want := h
	want.ID, want.Status, want.CreatedAt = "H0000001", records.HoldHeld, stored(t0)
	want.RecheckAt, want.NextCheckAt = stored(t0.Add(time.Hour)), stored(t0.Add(time.Hour))
	same(t, "CreateHold", got, want)
	read, err := s.Hold(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Hold", read, want)
	events, err := s.HoldEvents(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "HoldEvents", events, []records.HoldEvent{{HoldID: got.ID, At: stored(t0), Kind: "placed", Note: "GR_MISSING"}})

	// A NextCheckAt of its own stands; no items awaited stays none.
	h2 := hold("5105600002", t0.Add(time.Hour))
	h2.NextCheckAt, h2.Awaiting = t0.Add(time.Minute), nil
	got = createHold(t, s, h2)
	read, err = s.Hold(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !read.NextCheckAt.Equal(stored(t0.Add(time.Minute))) || len(read.Awaiting) != 0 || read.ID != "H0000002" {
		t.Errorf("second hold: got id %s, next check %v, awaiting %v; want H0000002, %v, none", read.ID, read.NextCheckAt, read.Awaiting, t0.Add(time.Minute))
	}
}

func testClaimDueHolds(t *testing.T, s records.Store) {
	ctx := t.Context()
	h1 := createHold(t, s, hold("1", t0.Add(-2*time.Hour)))
	h2 := createHold(t, s, hold("2", t0.Add(-time.Hour)))
	createHold(t, s, hold("3", t0.Add(time.Hour)))
	h4 := createHold(t, s, hold("4", t0.Add(-3*time.Hour)))
	h5 := createHold(t, s, hold("5", t0)) // due at exactly now
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h4.ID, At: t0, Kind: "released"}); err != nil {
		t.Fatal(err)
	}
	lease := 5 * time.Minute
	steps := []struct {
		name  string
		now   time.Time
		limit int
		want  []string
	}{
		{"due, earliest first, not released", t0, 10, []string{h1.ID, h2.ID, h5.ID}},
		{"claimed within the lease", t0.Add(time.Minute), 10, []string{}},
		{"lease over, limit 2", t0.Add(lease), 2, []string{h1.ID, h2.ID}},
		{"the rest", t0.Add(lease), 10, []string{h5.ID}},
		{"limit 0", t0.Add(24 * time.Hour), 0, []string{}},
	}
	for _, st := range steps {
		got, err := s.ClaimDueHolds(ctx, st.now, st.limit, lease)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		same(t, st.name, ids(got, holdID), st.want)
		for _, h := range got {
			if want := stored(st.now.Add(lease)); !h.NextCheckAt.Equal(want) {
				t.Errorf("%s: NextCheckAt of claimed %s: got %v, want now+lease %v", st.name, h.ID, h.NextCheckAt, want)
			}
			if read, _ := s.Hold(ctx, h.ID); !read.NextCheckAt.Equal(h.NextCheckAt) {
				t.Errorf("%s: stored NextCheckAt of %s: got %v, want %v", st.name, h.ID, read.NextCheckAt, h.NextCheckAt)
			}
		}
	}
}

func testClaimHoldsTwoStores(t *testing.T, s records.Store) {
	const n = 30
	for i := range n {
		createHold(t, s, hold(fmt.Sprint(i), t0.Add(-time.Duration(i)*time.Second)))
	}
	claimed := claimFromTwoStores(t, s, func(ctx context.Context, s records.Store) ([]string, error) {
		hs, err := s.ClaimDueHolds(ctx, t0, 2, time.Hour)
		return ids(hs, holdID), err
	})
	checkClaimedOnce(t, claimed, n)
}

// claimFromTwoStores claims with claim from s and from a second store on
// the same database at once, each until a claim gets nothing, and returns
// how often each id was claimed.
func claimFromTwoStores(t *testing.T, s records.Store, claim func(context.Context, records.Store) ([]string, error)) map[string]int {
	stores := twoStores(t, s)
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for _, st := range stores {
		for range 2 {
			wg.Go(func() {
				for {
					got, err := claim(t.Context(), st)
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, id := range got {
						claimed[id]++
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return claimed
}

func checkClaimedOnce(t *testing.T, claimed map[string]int, n int) {
	t.Helper()
	if len(claimed) != n {
		t.Errorf("claimed %d records, want %d", len(claimed), n)
	}
	for id, c := range claimed {
		if c != 1 {
			t.Errorf("%s claimed %d times, want once", id, c)
		}
	}
}

func testRescheduleHold(t *testing.T, s records.Store) {
	ctx := t.Context()
	h := createHold(t, s, hold("1", t0))
	next := t0.Add(time.Hour)
	if err := s.RescheduleHold(ctx, h.ID, next, true, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.RescheduleHold(ctx, h.ID, next.Add(time.Hour), false, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Hold(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Checks != 1 || !got.NextCheckAt.Equal(stored(next.Add(time.Hour))) || !got.RecheckAt.Equal(stored(t0)) {
		t.Errorf("after a checked and an unchecked reschedule: got checks %d, next %v, recheck %v; want 1, %v, %v",
			got.Checks, got.NextCheckAt, got.RecheckAt, next.Add(time.Hour), t0)
	}
	events, err := s.HoldEvents(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	kinds := ids(events, func(e records.HoldEvent) string { return e.Kind })
	same(t, "events", kinds, []string{"placed", "rechecked"})
	if len(events) == 2 && !events[1].At.Equal(stored(t0.Add(time.Minute))) {
		t.Errorf("rechecked at: got %v, want %v", events[1].At, t0.Add(time.Minute))
	}

	if err := s.RescheduleHold(ctx, "H0000999", next, true, t0); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("RescheduleHold of an unknown hold: got %v, want ErrNotFound", err)
	}
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h.ID, At: t0, Kind: "closed"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RescheduleHold(ctx, h.ID, next, true, t0); err != nil {
		t.Errorf("RescheduleHold of a released hold: got %v, want nil", err)
	}
	if got, _ := s.Hold(ctx, h.ID); got.Checks != 1 {
		t.Errorf("checks after rescheduling a released hold: got %d, want 1", got.Checks)
	}
}

func testReleaseHold(t *testing.T, s records.Store) {
	ctx := t.Context()
	h := createHold(t, s, hold("1", t0))
	at := t0.Add(time.Hour)
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h.ID, At: at, Kind: "released", Note: "GR 5000000001 posted"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Hold(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != records.HoldReleased || !got.ReleasedAt.Equal(stored(at)) {
		t.Errorf("released hold: got status %q at %v, want released at %v", got.Status, got.ReleasedAt, at)
	}
	// Ending it again is no error and records nothing.
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h.ID, At: at.Add(time.Hour), Kind: "closed"}); err != nil {
		t.Errorf("second ReleaseHold: got %v, want nil", err)
	}
	events, err := s.HoldEvents(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "events", events, []records.HoldEvent{
		{HoldID: h.ID, At: stored(t0), Kind: "placed", Note: "GR_MISSING"},
		{HoldID: h.ID, At: stored(at), Kind: "released", Note: "GR 5000000001 posted"},
	})
	if again, _ := s.Hold(ctx, h.ID); !again.ReleasedAt.Equal(stored(at)) {
		t.Errorf("ReleasedAt after a second release: got %v, want %v", again.ReleasedAt, at)
	}
	if due, err := s.ClaimDueHolds(ctx, at.Add(24*time.Hour), 10, time.Minute); err != nil || len(due) != 0 {
		t.Errorf("claim after release: got %v, %v; want none", ids(due, holdID), err)
	}
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: "H0000999", At: at, Kind: "released"}); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("ReleaseHold of an unknown hold: got %v, want ErrNotFound", err)
	}
	h2 := createHold(t, s, hold("2", t0))
	if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h2.ID, At: at, Kind: "rechecked"}); err == nil || errors.Is(err, records.ErrNotFound) {
		t.Errorf(`ReleaseHold with kind "rechecked": got %v, want an error`, err)
	}
}

func testListHolds(t *testing.T, s records.Store) {
	ctx := t.Context()
	// An invoice has one held hold: the released ones are of INV0.
	for i := 1; i <= 5; i++ {
		invoice := fmt.Sprint("INV", i)
		if i%2 == 0 {
			invoice = "INV0"
		}
		h := createHold(t, s, hold(invoice, t0))
		if i%2 == 0 {
			if err := s.ReleaseHold(ctx, records.HoldEvent{HoldID: h.ID, At: t0, Kind: "released"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name string
		f    records.HoldFilter
		want []string
	}{
		{"all", records.HoldFilter{}, []string{"H0000005", "H0000004", "H0000003", "H0000002", "H0000001"}},
		{"held", records.HoldFilter{Status: records.HoldHeld}, []string{"H0000005", "H0000003", "H0000001"}},
		{"released", records.HoldFilter{Status: records.HoldReleased}, []string{"H0000004", "H0000002"}},
		{"invoice", records.HoldFilter{InvoiceID: "INV0"}, []string{"H0000004", "H0000002"}},
		{"page", records.HoldFilter{Page: records.Page{Limit: 2, After: "H0000004"}}, []string{"H0000003", "H0000002"}},
	}
	for _, tc := range tests {
		got, err := s.ListHolds(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		same(t, tc.name, ids(got, holdID), tc.want)
	}
	if _, err := s.ListHolds(ctx, records.HoldFilter{Page: records.Page{After: "A0000001"}}); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("ListHolds after an approval id: got %v, want ErrNotFound", err)
	}
}

// Handovers.

func testHandoverRoundTrip(t *testing.T, s records.Store) {
	ctx := t.Context()
	h := handover("5105600001", "AP-CLERKS")
	h.Dedupe = "x"
	got := createHandover(t, s, h, false)
	want := h
	want.ID, want.Status, want.CreatedAt = "HO0000001", records.HandoverQueued, stored(t0)
	same(t, "CreateHandover", got, want)
	read, err := s.Handover(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "Handover", read, want)
	if got := createHandover(t, s, records.Handover{InvoiceID: "2"}, false); got.ID != "HO0000002" || got.Evidence != nil {
		t.Errorf("second handover: got id %q, evidence %v; want HO0000002, none", got.ID, got.Evidence)
	}
}

func testHandoverTransitions(t *testing.T, s records.Store) {
	ctx := t.Context()
	at := t0.Add(time.Hour)
	take := func(id string) (records.Handover, error) { return s.TakeHandover(ctx, id, "clerk", at) }
	resolve := func(id string) (records.Handover, error) {
		return s.ResolveHandover(ctx, id, "lead", "paid after call", at)
	}
	tests := []struct {
		name    string
		steps   []func(string) (records.Handover, error)
		wantErr error
		want    string
	}{
		{"take queued", []func(string) (records.Handover, error){take}, nil, records.HandoverTaken},
		{"resolve queued", []func(string) (records.Handover, error){resolve}, nil, records.HandoverResolved},
		{"resolve taken", []func(string) (records.Handover, error){take, resolve}, nil, records.HandoverResolved},
		{"take taken", []func(string) (records.Handover, error){take, take}, records.ErrHandoverState, records.HandoverTaken},
		{"take resolved", []func(string) (records.Handover, error){resolve, take}, records.ErrHandoverState, records.HandoverResolved},
		{"resolve resolved", []func(string) (records.Handover, error){take, resolve, resolve}, records.ErrHandoverState, records.HandoverResolved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := createHandover(t, s, handover("1", "AP"), false)
			var got records.Handover
			var err error
			for i, step := range tc.steps {
				got, err = step(h.ID)
				if i < len(tc.steps)-1 && err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("last step: got %v, want %v", err, tc.wantErr)
			}
			if got.Status != tc.want {
				t.Errorf("status returned: got %q, want %q", got.Status, tc.want)
			}
			read, err := s.Handover(ctx, h.ID)
			if err != nil {
				t.Fatal(err)
			}
			same(t, "returned and stored", got, read)
			if read.Status == records.HandoverTaken && (read.TakenBy != "clerk" || !read.TakenAt.Equal(stored(at))) {
				t.Errorf("taken: got by %q at %v, want clerk at %v", read.TakenBy, read.TakenAt, at)
			}
			if read.Status == records.HandoverResolved && (read.ResolvedBy != "lead" || read.Note != "paid after call" || !read.ResolvedAt.Equal(stored(at))) {
				t.Errorf("resolved: got by %q at %v note %q, want lead at %v", read.ResolvedBy, read.ResolvedAt, read.Note, at)
			}
		})
	}
	for _, f := range []func(string) (records.Handover, error){take, resolve} {
		if _, err := f("HO0000999"); !errors.Is(err, records.ErrNotFound) {
			t.Errorf("move of an unknown handover: got %v, want ErrNotFound", err)
		}
	}
}

func testListHandovers(t *testing.T, s records.Store) {
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		h := createHandover(t, s, handover("1", fmt.Sprint("Q", i%2)), false)
		if i >= 4 {
			if _, err := s.TakeHandover(ctx, h.ID, "clerk", t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name string
		f    records.HandoverFilter
		want []string
	}{
		{"all", records.HandoverFilter{}, []string{"HO0000005", "HO0000004", "HO0000003", "HO0000002", "HO0000001"}},
		{"queue", records.HandoverFilter{Queue: "Q1"}, []string{"HO0000005", "HO0000003", "HO0000001"}},
		{"status", records.HandoverFilter{Status: records.HandoverTaken}, []string{"HO0000005", "HO0000004"}},
		{"queue and status", records.HandoverFilter{Queue: "Q0", Status: records.HandoverQueued}, []string{"HO0000002"}},
		{"page", records.HandoverFilter{Page: records.Page{Limit: 1, After: "HO0000003"}}, []string{"HO0000002"}},
	}
	for _, tc := range tests {
		got, err := s.ListHandovers(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		same(t, tc.name, ids(got, handoverID), tc.want)
	}
}

// Outbox.

func testOutbox(t *testing.T, s records.Store) {
	ctx := t.Context()
	h := createHandover(t, s, handover("1", "AP"), true)
	createHandover(t, s, handover("2", "AP"), false)
	a := approval("3", "agent")
	a.RequestedAt = t0.Add(time.Second)
	a = createApproval(t, s, a, true)

	if got, err := s.ClaimDeliveries(ctx, t0.Add(-time.Millisecond), 10, time.Minute); err != nil || len(got) != 0 {
		t.Errorf("claim before the records were created: got %v, %v; want none", got, err)
	}
	lease := time.Minute
	got, err := s.ClaimDeliveries(ctx, t0.Add(time.Second), 10, lease)
	if err != nil {
		t.Fatal(err)
	}
	until := stored(t0.Add(time.Second + lease))
	same(t, "claimed", got, []records.Delivery{
		{ID: "D0000001", Kind: records.DeliveryHandover, RecordID: h.ID, NextAt: until},
		{ID: "D0000002", Kind: records.DeliveryApproval, RecordID: a.ID, NextAt: until},
	})
	if again, err := s.ClaimDeliveries(ctx, t0.Add(30*time.Second), 10, lease); err != nil || len(again) != 0 {
		t.Errorf("claim within the lease: got %v, %v; want none", again, err)
	}

	next := t0.Add(10 * time.Minute)
	if err := s.DeliveryFailed(ctx, "D0000001", next, "503 Service Unavailable"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeliveryDone(ctx, "D0000002", t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimDeliveries(ctx, next.Add(-time.Second), 10, lease); err != nil || len(got) != 0 {
		t.Errorf("claim before the next attempt: got %v, %v; want none", got, err)
	}
	got, err = s.ClaimDeliveries(ctx, next, 10, lease)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "claimed for the second attempt", got, []records.Delivery{
		{ID: "D0000001", Kind: records.DeliveryHandover, RecordID: h.ID, Attempts: 1, NextAt: stored(next.Add(lease)), LastError: "503 Service Unavailable"},
	})
	if err := s.DeliveryDone(ctx, "D0000001", next); err != nil {
		t.Fatal(err)
	}
	if err := s.DeliveryDone(ctx, "D0000001", next.Add(time.Hour)); err != nil {
		t.Errorf("DeliveryDone twice: got %v, want nil", err)
	}
	if err := s.DeliveryFailed(ctx, "D0000001", next, "late"); err != nil {
		t.Errorf("DeliveryFailed after done: got %v, want nil", err)
	}
	if got, err := s.ClaimDeliveries(ctx, next.Add(24*time.Hour), 10, lease); err != nil || len(got) != 0 {
		t.Errorf("claim after delivery: got %v, %v; want none", got, err)
	}
	for _, f := range []func() error{
		func() error { return s.DeliveryDone(ctx, "D0000999", t0) },
		func() error { return s.DeliveryFailed(ctx, "D0000999", t0, "x") },
	} {
		if err := f(); !errors.Is(err, records.ErrNotFound) {
			t.Errorf("unknown delivery: got %v, want ErrNotFound", err)
		}
	}
}

func testClaimDeliveriesTwoStores(t *testing.T, s records.Store) {
	const n = 30
	for i := range n {
		createHandover(t, s, handover(fmt.Sprint(i), "AP"), true)
	}
	claimed := claimFromTwoStores(t, s, func(ctx context.Context, s records.Store) ([]string, error) {
		ds, err := s.ClaimDeliveries(ctx, t0, 2, time.Hour)
		return ids(ds, deliveryID), err
	})
	checkClaimedOnce(t, claimed, n)
}

// Idempotency keys.

func testKeys(t *testing.T, s records.Store) {
	ctx := t.Context()
	k := records.Key{Client: "c1", Key: "k1", Operation: "post", Digest: "dg1"}
	other := k
	other.Digest = "dg2"
	opts := records.KeyOptions{Lease: time.Minute}
	resp := records.Response{Status: 201, Header: map[string][]string{"Content-Type": {"application/json"}, "X-Many": {"a", "b"}},
		Body: []byte(`{"document":"5105600001"}` + "\x00\xff")}
	claim := func(k records.Key, now time.Time) func() (records.KeyClaim, error) {
		return func() (records.KeyClaim, error) { return s.ClaimKey(ctx, k, now, opts) }
	}
	do := func(f func() error) func() (records.KeyClaim, error) {
		return func() (records.KeyClaim, error) { return records.KeyClaim{}, f() }
	}
	steps := []struct {
		name string
		do   func() (records.KeyClaim, error)
		want records.KeyClaim
	}{
		{"new key", claim(k, t0), records.KeyClaim{State: records.KeyClaimed}},
		{"in flight", claim(k, t0.Add(30*time.Second)), records.KeyClaim{State: records.KeyInFlight, LeaseUntil: stored(t0.Add(time.Minute))}},
		{"in flight, other digest", claim(other, t0.Add(30*time.Second)), records.KeyClaim{State: records.KeyReused}},
		{"lease over, other digest", claim(other, t0.Add(2*time.Minute)), records.KeyClaim{State: records.KeyReused}},
		{"lease over", claim(k, t0.Add(time.Minute)), records.KeyClaim{State: records.KeyClaimed, TakenOver: true}},
		{"in flight after takeover", claim(k, t0.Add(90*time.Second)), records.KeyClaim{State: records.KeyInFlight, LeaseUntil: stored(t0.Add(2 * time.Minute))}},
		{"complete", do(func() error { return s.CompleteKey(ctx, k.Client, k.Key, resp, t0.Add(time.Hour)) }), records.KeyClaim{}},
		{"replay", claim(k, t0.Add(59*time.Minute)), records.KeyClaim{State: records.KeyReplay, Response: &resp}},
		{"replay, other digest", claim(other, t0.Add(59*time.Minute)), records.KeyClaim{State: records.KeyReused}},
		{"other client", claim(records.Key{Client: "c2", Key: "k1", Digest: "dg2"}, t0), records.KeyClaim{State: records.KeyClaimed}},
		{"expired", claim(k, t0.Add(time.Hour)), records.KeyClaim{State: records.KeyClaimed}},
		{"release", do(func() error { return s.ReleaseKey(ctx, k.Client, k.Key) }), records.KeyClaim{}},
		{"released, other digest", claim(other, t0.Add(time.Hour)), records.KeyClaim{State: records.KeyClaimed}},
		{"complete without a body", do(func() error {
			return s.CompleteKey(ctx, k.Client, k.Key, records.Response{Status: 204}, t0.Add(2*time.Hour))
		}), records.KeyClaim{}},
		{"replay without a body", claim(other, t0.Add(time.Hour)), records.KeyClaim{State: records.KeyReplay, Response: &records.Response{Status: 204}}},
		{"expired, other digest", claim(k, t0.Add(2*time.Hour)), records.KeyClaim{State: records.KeyClaimed}},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got.Response != nil && st.want.Response != nil && bytes.Equal(got.Response.Body, st.want.Response.Body) {
			got.Response.Body = st.want.Response.Body
		}
		same(t, st.name, got, st.want)
	}
	if err := s.CompleteKey(ctx, "c1", "never claimed", resp, t0); !errors.Is(err, records.ErrNotFound) {
		t.Errorf("CompleteKey of a key not claimed: got %v, want ErrNotFound", err)
	}
	if err := s.ReleaseKey(ctx, "c1", "never claimed"); err != nil {
		t.Errorf("ReleaseKey of a key not claimed: got %v, want nil", err)
	}
}

func testKeyCap(t *testing.T, s records.Store) {
	ctx := t.Context()
	opts := records.KeyOptions{Lease: time.Minute, MaxPerClient: 2}
	key := func(client, k string) records.Key { return records.Key{Client: client, Key: k, Digest: "d"} }
	steps := []struct {
		name string
		k    records.Key
		at   time.Time
		want records.KeyState
	}{
		{"first", key("c", "1"), t0, records.KeyClaimed},
		{"second", key("c", "2"), t0, records.KeyClaimed},
		{"third", key("c", "3"), t0, records.KeyCapReached},
		{"a held key is no new key", key("c", "1"), t0, records.KeyInFlight},
		{"other client", key("d", "1"), t0, records.KeyClaimed},
		{"a lapsed claim still counts", key("c", "3"), t0.Add(time.Hour), records.KeyCapReached},
	}
	for _, st := range steps {
		got, err := s.ClaimKey(ctx, st.k, st.at, opts)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got.State != st.want {
			t.Errorf("%s: got state %d, want %d", st.name, got.State, st.want)
		}
	}
	// A kept answer counts until it expires.
	if err := s.CompleteKey(ctx, "c", "1", records.Response{Status: 200}, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseKey(ctx, "c", "2"); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		name string
		k    records.Key
		at   time.Time
		want records.KeyState
	}{
		{"released room", key("c", "3"), t0.Add(time.Hour), records.KeyClaimed},
		{"full again", key("c", "4"), t0.Add(time.Hour), records.KeyCapReached},
		{"kept answer expired", key("c", "4"), t0.Add(2 * time.Hour), records.KeyClaimed},
	} {
		got, err := s.ClaimKey(ctx, st.k, st.at, opts)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got.State != st.want {
			t.Errorf("%s: got state %d, want %d", st.name, got.State, st.want)
		}
	}
}

func testKeyCapConcurrent(t *testing.T, s records.Store) {
	const n, max = 20, 5
	stores := twoStores(t, s)
	var mu sync.Mutex
	states := map[records.KeyState]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			k := records.Key{Client: "c", Key: fmt.Sprint(i), Digest: "d"}
			opts := records.KeyOptions{MaxPerClient: max}
			// Half claim as a write does (on PostgreSQL a new key's claim
			// is one function call), half with ClaimKey's transaction: the
			// two count under one lock.
			var c records.KeyClaim
			var err error
			if i%4 < 2 {
				var w records.WriteClaimed
				w, err = stores[i%2].ClaimWrite(t.Context(), records.WriteClaim{Key: k, KeyOptions: opts}, t0)
				c = w.Key
			} else {
				c, err = stores[i%2].ClaimKey(t.Context(), k, t0, opts)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("ClaimKey: %v", err)
				return
			}
			states[c.State]++
		})
	}
	close(start)
	wg.Wait()
	same(t, "states of 20 new keys claimed at once with a cap of 5", states,
		map[records.KeyState]int{records.KeyClaimed: max, records.KeyCapReached: n - max})
}

// twoStores returns s and a second store on its database, their pools
// filled, for tests of concurrency: goroutines on both meet in the
// database as gateways do, not in one store's queue for its SQLite
// writer, and run on connections at once rather than one after another
// while a pool dials.
func twoStores(t *testing.T, s records.Store) [2]records.Store {
	t.Helper()
	stores := [2]records.Store{s, reopen(t, s)}
	for _, st := range stores {
		db := records.DB(st)
		var conns []*sql.Conn
		for range records.DefaultMaxConns {
			c, err := db.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
	}
	return stores
}

// claimAtOnce claims k from n goroutines at now and counts the states.
func claimAtOnce(t *testing.T, s records.Store, n int, k records.Key, now time.Time) map[records.KeyState]int {
	stores := twoStores(t, s)
	var mu sync.Mutex
	states := map[records.KeyState]int{}
	takenOver := 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := stores[i%2].ClaimKey(t.Context(), k, now, records.KeyOptions{Lease: time.Minute})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("ClaimKey: %v", err)
				return
			}
			states[c.State]++
			if c.TakenOver {
				takenOver++
			}
		})
	}
	close(start)
	wg.Wait()
	if takenOver > 1 {
		t.Errorf("%d claims took over, want at most 1", takenOver)
	}
	return states
}

func testKeyConcurrentClaim(t *testing.T, s records.Store) {
	k := records.Key{Client: "c", Key: "k", Operation: "post", Digest: "d"}
	got := claimAtOnce(t, s, 50, k, t0)
	same(t, "states of 50 claims at once", got, map[records.KeyState]int{records.KeyClaimed: 1, records.KeyInFlight: 49})
}

func testKeyConcurrentTakeover(t *testing.T, s records.Store) {
	k := records.Key{Client: "c", Key: "k", Operation: "post", Digest: "d"}
	if c, err := s.ClaimKey(t.Context(), k, t0, records.KeyOptions{Lease: time.Minute}); err != nil || c.State != records.KeyClaimed {
		t.Fatalf("first claim: %+v, %v", c, err)
	}
	got := claimAtOnce(t, s, 20, k, t0.Add(2*time.Minute))
	same(t, "states of 20 claims of a lapsed key at once", got, map[records.KeyState]int{records.KeyClaimed: 1, records.KeyInFlight: 19})
}

func testDeleteExpiredKeys(t *testing.T, s records.Store) {
	ctx := t.Context()
	for i, exp := range []time.Duration{time.Minute, 2 * time.Minute, time.Hour} {
		k := records.Key{Client: "c", Key: fmt.Sprint(i), Digest: "d"}
		if _, err := s.ClaimKey(ctx, k, t0, records.KeyOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.CompleteKey(ctx, k.Client, k.Key, records.Response{Status: 200}, t0.Add(exp)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ClaimKey(ctx, records.Key{Client: "c", Key: "in flight", Digest: "d"}, t0, records.KeyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		at   time.Time
		want int
	}{{t0, 0}, {t0.Add(2 * time.Minute), 2}, {t0.Add(2 * time.Minute), 0}, {t0.Add(48 * time.Hour), 1}} {
		n, err := s.DeleteExpiredKeys(ctx, st.at)
		if err != nil {
			t.Fatal(err)
		}
		if n != st.want {
			t.Errorf("DeleteExpiredKeys at %v: got %d, want %d", st.at, n, st.want)
		}
	}
	if c, err := s.ClaimKey(ctx, records.Key{Client: "c", Key: "in flight", Digest: "d"}, t0, records.KeyOptions{}); err != nil || c.State != records.KeyInFlight {
		t.Errorf("claim in flight after DeleteExpiredKeys: got %+v, %v; want it still in flight", c, err)
	}
}

// Audit log.

func auditEntry(i int) records.AuditEntry {
	return records.AuditEntry{
		At: t0.Add(time.Duration(i) * time.Second), Client: "agent", Operation: "post_invoice",
		InvoiceID: fmt.Sprint("INV", i%2), ArgsDigest: "ad", ApprovalID: "A0000001", Document: "5105600001",
		Outcome: "OK", RequestID: fmt.Sprint("req-", i), Note: fmt.Sprint("note ", i),
	}
}

func testAudit(t *testing.T, s records.Store) {
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		if err := s.AppendAudit(ctx, auditEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Audit(ctx, records.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("audit rows: got %d, want 5", len(all))
	}
	for i, e := range all {
		want := auditEntry(5 - i)
		want.ID, want.At = e.ID, stored(want.At)
		same(t, fmt.Sprint("row ", i), e, want)
		if i > 0 && e.ID >= all[i-1].ID {
			t.Errorf("row %d: id %d not below the previous %d (newest first)", i, e.ID, all[i-1].ID)
		}
	}
	reqs := func(es []records.AuditEntry) []string {
		return ids(es, func(e records.AuditEntry) string { return e.RequestID })
	}
	for _, tc := range []struct {
		name string
		f    records.AuditFilter
		want []string
	}{
		{"invoice", records.AuditFilter{InvoiceID: "INV1"}, []string{"req-5", "req-3", "req-1"}},
		{"limit", records.AuditFilter{Limit: 2}, []string{"req-5", "req-4"}},
		{"before", records.AuditFilter{Limit: 2, BeforeID: all[1].ID}, []string{"req-3", "req-2"}},
		{"before, invoice", records.AuditFilter{InvoiceID: "INV0", BeforeID: all[1].ID}, []string{"req-2"}},
	} {
		got, err := s.Audit(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		same(t, tc.name, reqs(got), tc.want)
	}
}

func testAuditAppendOnly(t *testing.T, s records.Store) {
	ctx := t.Context()
	if err := s.AppendAudit(ctx, auditEntry(1)); err != nil {
		t.Fatal(err)
	}
	db := records.DB(s)
	stmts := []string{
		records.Rebind(s, "UPDATE audit_log SET outcome = ? WHERE request_id = ?"),
		records.Rebind(s, "DELETE FROM audit_log WHERE request_id = ?"),
	}
	args := [][]any{{"FORGED", "req-1"}, {"req-1"}}
	if s.Engine() == "postgres" {
		stmts = append(stmts, "TRUNCATE audit_log")
		args = append(args, nil)
	}
	for i, q := range stmts {
		if _, err := db.ExecContext(ctx, q, args[i]...); err == nil {
			t.Errorf("%s: got no error, want the database to refuse it", q)
		}
	}
	got, err := s.Audit(ctx, records.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Outcome != "OK" {
		t.Errorf("audit after refused changes: got %+v, want the one row as appended", got)
	}
}

// Times.

func testTimes(t *testing.T, s records.Store) {
	ctx := t.Context()
	a := approval("1", "agent")
	a.RequestedAt = time.Date(2025, 6, 30, 23, 59, 59, 987654321, time.FixedZone("PDT", -7*3600))
	got := createApproval(t, s, a, false)
	read, err := s.Approval(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read.RequestedAt.Location() != time.UTC {
		t.Errorf("RequestedAt location: got %v, want UTC", read.RequestedAt.Location())
	}
	if d := a.RequestedAt.Sub(read.RequestedAt); d < 0 || d >= time.Millisecond {
		t.Errorf("RequestedAt: got %v, want %v to the millisecond", read.RequestedAt, a.RequestedAt)
	}
	if !read.DecidedAt.IsZero() {
		t.Errorf("DecidedAt of a pending approval: got %v, want the zero time", read.DecidedAt)
	}
	// Order by time is kept across a day and a zone change.
	early := createHold(t, s, hold("early", time.Date(2025, 7, 1, 0, 30, 0, 0, time.FixedZone("CEST", 2*3600))))  // 22:30Z
	late := createHold(t, s, hold("late", time.Date(2025, 6, 30, 23, 0, 0, 0, time.FixedZone("UTC-1", -1*3600)))) // 00:00Z
	due, err := s.ClaimDueHolds(ctx, time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "due at midnight UTC", ids(due, holdID), []string{early.ID, late.ID})
}

// Reopen.

func testReopen(t *testing.T, s records.Store) {
	ctx := t.Context()
	a := createApproval(t, s, approval("1", "agent"), true)
	h := createHold(t, s, hold("1", t0))
	if err := s.RescheduleHold(ctx, h.ID, t0.Add(time.Hour), true, t0); err != nil {
		t.Fatal(err)
	}
	h, _ = s.Hold(ctx, h.ID)
	events, _ := s.HoldEvents(ctx, h.ID)
	ho := createHandover(t, s, handover("2", "AP"), true)
	k := records.Key{Client: "c", Key: "k", Digest: "d"}
	resp := records.Response{Status: 200, Header: map[string][]string{"A": {"b"}}, Body: []byte("body")}
	if _, err := s.ClaimKey(ctx, k, t0, records.KeyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteKey(ctx, k.Client, k.Key, resp, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, auditEntry(1)); err != nil {
		t.Fatal(err)
	}
	audit, _ := s.Audit(ctx, records.AuditFilter{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := reopen(t, s)
	if got, err := s2.Approval(ctx, a.ID); err != nil {
		t.Error(err)
	} else {
		sameApproval(t, "approval", got, a)
	}
	if got, err := s2.Hold(ctx, h.ID); err != nil || !reflect.DeepEqual(got, h) {
		t.Errorf("hold: got %+v, %v; want %+v", got, err, h)
	}
	if got, err := s2.HoldEvents(ctx, h.ID); err != nil || !reflect.DeepEqual(got, events) {
		t.Errorf("hold events: got %+v, %v; want %+v", got, err, events)
	}
	if got, err := s2.Handover(ctx, ho.ID); err != nil || !reflect.DeepEqual(got, ho) {
		t.Errorf("handover: got %+v, %v; want %+v", got, err, ho)
	}
	if got, err := s2.ClaimKey(ctx, k, t0.Add(time.Minute), records.KeyOptions{}); err != nil || got.State != records.KeyReplay || !reflect.DeepEqual(*got.Response, resp) {
		t.Errorf("key: got %+v, %v; want a replay of %+v", got, err, resp)
	}
	if got, err := s2.Audit(ctx, records.AuditFilter{}); err != nil || !reflect.DeepEqual(got, audit) {
		t.Errorf("audit: got %+v, %v; want %+v", got, err, audit)
	}
	ds, err := s2.ClaimDeliveries(ctx, t0, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "deliveries", ids(ds, func(d records.Delivery) string { return d.Kind + " " + d.RecordID }),
		[]string{records.DeliveryApproval + " " + a.ID, records.DeliveryHandover + " " + ho.ID})
	if next := createApproval(t, s2, approval("2", "agent"), false); next.ID != "A0000002" {
		t.Errorf("id after reopen: got %q, want A0000002", next.ID)
	}
}

// testConcurrentOpens opens stores on the fresh database at u at once: all
// must open, and the schema must be migrated once.
func testConcurrentOpens(t *testing.T, u string) {
	const n = 4
	stores := make([]records.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = records.Open(t.Context(), u, records.Options{})
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open %d: %v", i, errs[i])
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	s := stores[0]
	var count, versions int
	if err := records.DB(s).QueryRowContext(t.Context(), "SELECT COUNT(*), COUNT(DISTINCT version) FROM schema_migrations").Scan(&count, &versions); err != nil {
		t.Fatal(err)
	}
	if want := records.MigrationCount(s.Engine()); count != want || versions != want {
		t.Errorf("schema_migrations: got %d rows of %d versions, want %d of %d", count, versions, want, want)
	}
	for i, st := range stores {
		a, created, err := st.CreateApproval(t.Context(), approval("1", "agent"), false)
		if err != nil || !created {
			t.Errorf("store %d: CreateApproval: %+v, %v", i, a, err)
		}
	}
}

func testInvoiceLeases(t *testing.T, s records.Store) {
	ctx := t.Context()
	claim := func(holder, op string, at time.Time) records.LeaseClaim {
		t.Helper()
		c, err := s.ClaimInvoice(ctx, records.InvoiceLease{InvoiceID: "5105600101", Holder: holder, Operation: op}, at, time.Minute)
		if err != nil {
			t.Fatalf("ClaimInvoice %s: %v", holder, err)
		}
		return c
	}
	if c := claim("a", "post_invoice", t0); !c.Claimed || c.TakenOver {
		t.Fatalf("first claim: %+v, want claimed", c)
	}
	// Another holder finds it held, with the holder's operation and lease.
	c := claim("b", "hold_invoice", t0.Add(30*time.Second))
	if c.Claimed || c.Operation != "post_invoice" || !c.LeaseUntil.Equal(stored(t0.Add(time.Minute))) {
		t.Errorf("claim while held: %+v, want held by post_invoice until %v", c, stored(t0.Add(time.Minute)))
	}
	// Another invoice is free.
	if c, err := s.ClaimInvoice(ctx, records.InvoiceLease{InvoiceID: "5105600102", Holder: "b"}, t0, time.Minute); err != nil || !c.Claimed {
		t.Errorf("other invoice: %+v, %v", c, err)
	}
	// Only the holder releases it.
	if err := s.ReleaseInvoice(ctx, "5105600101", "b"); err != nil {
		t.Fatal(err)
	}
	if c := claim("b", "hold_invoice", t0.Add(30*time.Second)); c.Claimed {
		t.Errorf("claim after another holder's release: %+v, want still held", c)
	}
	if err := s.ReleaseInvoice(ctx, "5105600101", "a"); err != nil {
		t.Fatal(err)
	}
	if c := claim("b", "hold_invoice", t0.Add(30*time.Second)); !c.Claimed || c.TakenOver {
		t.Errorf("claim after release: %+v, want claimed", c)
	}
	// A lease that lapsed unreleased is taken over, and its old holder's
	// release leaves the new holder's lease alone.
	if c := claim("c", "post_invoice", t0.Add(91*time.Second)); !c.Claimed || !c.TakenOver {
		t.Errorf("claim of a lapsed lease: %+v, want taken over", c)
	}
	if err := s.ReleaseInvoice(ctx, "5105600101", "b"); err != nil {
		t.Fatal(err)
	}
	if c := claim("d", "post_invoice", t0.Add(100*time.Second)); c.Claimed || c.Operation != "post_invoice" {
		t.Errorf("claim after the old holder's release: %+v, want held by c", c)
	}
}

// leaseAtOnce claims one invoice's lease from n goroutines over two stores
// and counts the claims won and taken over.
func leaseAtOnce(t *testing.T, s records.Store, n int, now time.Time) (won, takenOver int) {
	stores := twoStores(t, s)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			l := records.InvoiceLease{InvoiceID: "5105600101", Holder: fmt.Sprint("h", i), Operation: "post_invoice"}
			c, err := stores[i%2].ClaimInvoice(t.Context(), l, now, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("ClaimInvoice: %v", err)
			case c.Claimed:
				won++
				if c.TakenOver {
					takenOver++
				}
			case c.Operation != "post_invoice" || c.LeaseUntil.IsZero():
				t.Errorf("claim lost to %+v, want the holder's operation and lease", c)
			}
		})
	}
	close(start)
	wg.Wait()
	return won, takenOver
}

func testInvoiceLeaseConcurrent(t *testing.T, s records.Store) {
	if won, over := leaseAtOnce(t, s, 50, t0); won != 1 || over != 0 {
		t.Errorf("50 claims at once: %d won, %d took over; want 1 and 0", won, over)
	}
}

func testInvoiceLeaseConcurrentTakeover(t *testing.T, s records.Store) {
	if c, err := s.ClaimInvoice(t.Context(), records.InvoiceLease{InvoiceID: "5105600101", Holder: "dead"}, t0, time.Minute); err != nil || !c.Claimed {
		t.Fatalf("first claim: %+v, %v", c, err)
	}
	if won, over := leaseAtOnce(t, s, 20, t0.Add(2*time.Minute)); won != 1 || over != 1 {
		t.Errorf("20 claims of a lapsed lease at once: %d won, %d took over; want 1 and 1", won, over)
	}
}

func testClaimWrite(t *testing.T, s records.Store) {
	ctx := t.Context()
	write := func(key, holder string) records.WriteClaim {
		return records.WriteClaim{
			Key:        records.Key{Client: "c1", Key: key, Operation: "post_invoice", Digest: "d"},
			KeyOptions: records.KeyOptions{Lease: time.Minute},
			Lease:      &records.InvoiceLease{InvoiceID: "5105600101", Holder: holder, Operation: "post_invoice"},
			LeaseFor:   time.Minute,
		}
	}
	claimed := records.KeyClaim{State: records.KeyClaimed}
	steps := []struct {
		name string
		c    records.WriteClaim
		at   time.Time
		want records.WriteClaimed
	}{
		{"key and lease free", write("k1", "a"), t0, records.WriteClaimed{Key: claimed, Lease: records.LeaseClaim{Claimed: true}, LeaseTried: true}},
		{"key in flight: no lease tried", write("k1", "b"), t0.Add(time.Second),
			records.WriteClaimed{Key: records.KeyClaim{State: records.KeyInFlight, LeaseUntil: stored(t0.Add(time.Minute))}}},
		{"new key, lease held: the key stays claimed", write("k2", "b"), t0.Add(time.Second),
			records.WriteClaimed{Key: claimed, Lease: records.LeaseClaim{Operation: "post_invoice", LeaseUntil: stored(t0.Add(time.Minute))}, LeaseTried: true}},
		{"no lease asked", records.WriteClaim{Key: records.Key{Client: "c1", Key: "k3", Digest: "d"}}, t0,
			records.WriteClaimed{Key: claimed}},
		{"lease lapsed: taken over", write("k4", "c"), t0.Add(2 * time.Minute),
			records.WriteClaimed{Key: claimed, Lease: records.LeaseClaim{Claimed: true, TakenOver: true}, LeaseTried: true}},
	}
	for _, st := range steps {
		got, err := s.ClaimWrite(ctx, st.c, st.at)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		same(t, st.name, got, st.want)
	}
	// The key claimed without its lease is in flight, as ClaimKey leaves it.
	if c, err := s.ClaimKey(ctx, write("k2", "").Key, t0.Add(2*time.Second), records.KeyOptions{Lease: time.Minute}); err != nil || c.State != records.KeyInFlight {
		t.Errorf("key claimed while the lease was held: %+v, %v; want in flight", c, err)
	}
	// A key at the client's cap takes no lease.
	capped := write("k5", "d")
	capped.KeyOptions.MaxPerClient = 1
	if got, err := s.ClaimWrite(ctx, capped, t0.Add(3*time.Minute)); err != nil || got.Key.State != records.KeyCapReached || got.LeaseTried {
		t.Errorf("at the cap: %+v, %v; want KeyCapReached and no lease", got, err)
	}
}

func testSettle(t *testing.T, s records.Store) {
	ctx := t.Context()
	key := records.Key{Client: "c1", Key: "k1", Operation: "post_invoice", Digest: "d"}
	lease := records.InvoiceLease{InvoiceID: "5105600101", Holder: "a", Operation: "post_invoice"}
	c, err := s.ClaimWrite(ctx, records.WriteClaim{Key: key, Lease: &lease}, t0)
	if err != nil || !c.Lease.Claimed {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	resp := records.Response{Status: 201, Outcome: "OK", Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(`{"a":1}`)}
	entry := auditEntry(1)
	err = s.Settle(ctx, records.Settlement{Audit: &entry,
		Key:   &records.KeySettlement{Client: key.Client, Key: key.Key, Response: &resp, Expires: t0.Add(time.Hour)},
		Lease: &lease})
	if err != nil {
		t.Fatal(err)
	}
	// All three parts took effect: the answer replays, the lease is free,
	// the row is in the log.
	if got, err := s.ClaimKey(ctx, key, t0.Add(time.Second), records.KeyOptions{}); err != nil || got.State != records.KeyReplay || string(got.Response.Body) != `{"a":1}` {
		t.Errorf("after settle, the key: %+v, %v; want its answer", got, err)
	}
	if got, err := s.ClaimInvoice(ctx, records.InvoiceLease{InvoiceID: lease.InvoiceID, Holder: "b"}, t0.Add(time.Second), time.Minute); err != nil || !got.Claimed {
		t.Errorf("after settle, the lease: %+v, %v; want free", got, err)
	}
	if rows, err := s.Audit(ctx, records.AuditFilter{InvoiceID: entry.InvoiceID}); err != nil || len(rows) != 1 || rows[0].RequestID != entry.RequestID {
		t.Errorf("after settle, the audit log: %+v, %v; want the row", rows, err)
	}

	// A key given up: claimed anew with other arguments.
	k2 := records.Key{Client: "c1", Key: "k2", Digest: "d"}
	if _, err := s.ClaimKey(ctx, k2, t0, records.KeyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, records.Settlement{Key: &records.KeySettlement{Client: "c1", Key: "k2"}}); err != nil {
		t.Fatal(err)
	}
	k2.Digest = "other"
	if got, err := s.ClaimKey(ctx, k2, t0, records.KeyOptions{}); err != nil || got.State != records.KeyClaimed {
		t.Errorf("a key given up: %+v, %v; want claimed anew", got, err)
	}

	// A key no longer in flight does not hold back the audit row.
	entry2 := auditEntry(2)
	err = s.Settle(ctx, records.Settlement{Audit: &entry2,
		Key: &records.KeySettlement{Client: "c1", Key: "never claimed", Response: &resp, Expires: t0.Add(time.Hour)}})
	if !errors.Is(err, records.ErrNotFound) {
		t.Errorf("settling a key not in flight: %v, want ErrNotFound", err)
	}
	if rows, err := s.Audit(ctx, records.AuditFilter{InvoiceID: entry2.InvoiceID}); err != nil || len(rows) == 0 || rows[0].RequestID != entry2.RequestID {
		t.Errorf("the audit row of a settlement whose key was gone: %+v, %v; want it written", rows, err)
	}
}

// testDurableAfterClaim: a write's claim commits without waiting for the
// disk, and leaves the writer's next commits as durable as before.
func testDurableAfterClaim(t *testing.T, s records.Store) {
	ctx := t.Context()
	durable := func() string {
		t.Helper()
		var v string
		q := "PRAGMA synchronous"
		if s.Engine() == "postgres" {
			q = "SHOW synchronous_commit"
		}
		if err := records.WriterDB(s).QueryRowContext(ctx, q).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// SQLite's writer is FULL (2); PostgreSQL's is the server's setting,
	// which the tests' throwaway cluster turns off.
	want := durable()
	if s.Engine() == "sqlite" && want != "2" {
		t.Fatalf("before a claim: %s, want 2 (FULL)", want)
	}
	for i := range 3 {
		c := records.WriteClaim{Key: records.Key{Client: "c1", Key: fmt.Sprint("k", i), Digest: "d"},
			Lease: &records.InvoiceLease{InvoiceID: "5105600101", Holder: fmt.Sprint("h", i)}}
		if _, err := s.ClaimWrite(ctx, c, t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := durable(); got != want {
			t.Errorf("after claim %d: %s, want %s", i, got, want)
		}
	}
	// On PostgreSQL the claims have a pool of their own, whose commits do
	// not wait for the disk.
	if lazy := records.LazyDB(s); s.Engine() == "postgres" {
		var v string
		if err := lazy.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "off" {
			t.Errorf("the claims' pool: synchronous_commit %q, %v; want off", v, err)
		}
	}
	// So does a record made within a call that settles later, without
	// or with a webhook to queue.
	for _, notify := range []bool{false, true} {
		later := records.SettledLater(ctx)
		got, created, err := s.CreateHandover(later, handover(fmt.Sprint("5105600", 200+len(fmt.Sprint(notify))), "ap"), notify)
		if err != nil || !created {
			t.Fatalf("CreateHandover in a call settled later (notify %v): %+v, %v", notify, got, err)
		}
		if back, err := s.Handover(ctx, got.ID); err != nil || back.InvoiceID != got.InvoiceID {
			t.Errorf("the handover made in a call settled later: %+v, %v", back, err)
		}
		if d := durable(); d != want {
			t.Errorf("after a record made in a call settled later (notify %v): %s, want %s", notify, d, want)
		}
	}
	// A claim that fails leaves the writer durable too.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.ClaimWrite(canceled, records.WriteClaim{Key: records.Key{Client: "c1", Key: "k9", Digest: "d"}}, t0); err == nil {
		t.Error("a claim with its context canceled succeeded")
	}
	if got := durable(); got != want {
		t.Errorf("after a failed claim: %s, want %s", got, want)
	}
}

// TestClaimFunctionLocksAsTheStore: erpgate_claim_new_key takes the same
// advisory lock of a client's keys as the store's transaction.
func TestClaimFunctionLocksAsTheStore(t *testing.T) {
	b, err := os.ReadFile("migrations/postgres/0004_claim_new_key.sql")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("pg_advisory_xact_lock(%d, hashtext(p_client))", records.ClientLockSpace)
	if !strings.Contains(string(b), want) {
		t.Errorf("the claim function does not take %s", want)
	}
}
