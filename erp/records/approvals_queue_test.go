package records_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

func TestApprovalQueueSQLite(t *testing.T) {
	s, _ := recordstest.SQLite(t)
	testApprovalQueue(t, s)
}

func TestApprovalQueuePostgres(t *testing.T) {
	s, _ := recordstest.Postgres(t)
	testApprovalQueue(t, s)
}

// testApprovalQueue checks the approvers' queue: the filters by approver
// group, supplier, amount and requester, both orders with their cursors,
// and the count, which agrees with the list.
func testApprovalQueue(t *testing.T, s records.Store) {
	ctx := context.Background()
	type seed struct {
		group, supplier, amount, by string
	}
	seeds := []seed{
		{"ap_manager", "100042", "13500.00", "agent"},
		{"ap_manager", "100043", "9999.99", "agent"},
		{"finance_director", "100042", "150000.00", "agent"},
		{"ap_manager", "100042", "10000", "m.keller"},
		{"ap_manager", "", "20000.50", "agent"},
		{"finance_director", "100043", "100000.00", "agent"},
	}
	ids := make([]string, len(seeds))
	for i, sd := range seeds {
		a, _, err := s.CreateApproval(ctx, records.Approval{InvoiceID: fmt.Sprintf("51056002%02d", i), FiscalYear: "2026",
			CompanyCode: "1010", Status: records.ApprovalPending, Approver: sd.group, ProposedAction: "accept_variance",
			Justification: "Seeded.", Amount: decimal.RequireFromString(sd.amount), Currency: "EUR", RequestedBy: sd.by,
			RequestedAt: t0.Add(time.Duration(i) * time.Minute), SupplierID: sd.supplier}, false)
		if err != nil {
			t.Fatal(err)
		}
		if a.SupplierID != sd.supplier {
			t.Fatalf("created approval's supplier %q, want %q", a.SupplierID, sd.supplier)
		}
		ids[i] = a.ID
	}
	// One decided: it leaves the pending queue.
	if _, _, err := s.CreateApproval(ctx, records.Approval{InvoiceID: "5105600299", Status: records.ApprovalApproved,
		Approver: "ap_manager", Amount: decimal.RequireFromString("15000"), Currency: "EUR", RequestedBy: "agent",
		DecidedBy: "j.doe", DecidedAt: t0, SupplierID: "100042"}, false); err != nil {
		t.Fatal(err)
	}
	a, err := s.Approval(ctx, ids[0])
	if err != nil || a.SupplierID != "100042" {
		t.Fatalf("approval read back: supplier %q, %v; want 100042", a.SupplierID, err)
	}
	amount := func(v string) *decimal.Decimal {
		d := decimal.RequireFromString(v)
		return &d
	}
	pending := records.ApprovalFilter{Status: records.ApprovalPending}
	with := func(edit func(*records.ApprovalFilter)) records.ApprovalFilter {
		f := pending
		edit(&f)
		return f
	}
	for _, tc := range []struct {
		name string
		f    records.ApprovalFilter
		want []int // indexes of seeds, newest first
	}{
		{"pending", pending, []int{5, 4, 3, 2, 1, 0}},
		{"approver group", with(func(f *records.ApprovalFilter) { f.Approver = "ap_manager" }), []int{4, 3, 1, 0}},
		{"supplier", with(func(f *records.ApprovalFilter) { f.SupplierID = "100042" }), []int{3, 2, 0}},
		{"amount from", with(func(f *records.ApprovalFilter) { f.MinAmount = amount("10000") }), []int{5, 4, 3, 2, 0}},
		{"amount to", with(func(f *records.ApprovalFilter) { f.MaxAmount = amount("13500") }), []int{3, 1, 0}},
		{"amount between, as numbers not text", with(func(f *records.ApprovalFilter) {
			f.MinAmount, f.MaxAmount = amount("9999.995"), amount("100000")
		}), []int{5, 4, 3, 0}},
		{"not my own", with(func(f *records.ApprovalFilter) { f.NotRequestedBy = "m.keller" }), []int{5, 4, 2, 1, 0}},
		{"all of them", with(func(f *records.ApprovalFilter) {
			f.Approver, f.SupplierID, f.MinAmount, f.NotRequestedBy = "ap_manager", "100042", amount("10000"), "m.keller"
		}), []int{0}},
		{"none", with(func(f *records.ApprovalFilter) { f.SupplierID = "999999" }), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, i := range tc.want {
				want = append(want, ids[i])
			}
			if got := listIDs(t, s, tc.f); !slices.Equal(got, want) {
				t.Errorf("newest first: got %v, want %v", got, want)
			}
			tc.f.OldestFirst = true
			slices.Reverse(want)
			if got := listIDs(t, s, tc.f); !slices.Equal(got, want) {
				t.Errorf("oldest first: got %v, want %v", got, want)
			}
			n, err := s.CountApprovals(ctx, tc.f)
			if err != nil || n != len(want) {
				t.Errorf("count: %d, %v; want %d", n, err, len(want))
			}
		})
	}

	t.Run("pages in both orders", func(t *testing.T) {
		for _, oldest := range []bool{false, true} {
			f := pending
			f.OldestFirst = oldest
			f.Limit = 4
			first := listIDs(t, s, f)
			f.After = first[len(first)-1]
			second := listIDs(t, s, f)
			want := slices.Clone(ids)
			if !oldest {
				slices.Reverse(want)
			}
			if got := append(first, second...); !slices.Equal(got, want) {
				t.Errorf("oldest first %v: pages %v then %v, want %v", oldest, first, second, want)
			}
		}
	})

	t.Run("count ignores the page", func(t *testing.T) {
		f := pending
		f.Limit, f.After = 1, ids[3]
		if n, err := s.CountApprovals(ctx, f); err != nil || n != len(seeds) {
			t.Errorf("count with a page: %d, %v; want %d", n, err, len(seeds))
		}
		if n, err := s.CountApprovals(ctx, records.ApprovalFilter{}); err != nil || n != len(seeds)+1 {
			t.Errorf("count of every approval: %d, %v; want %d", n, err, len(seeds)+1)
		}
	})
}

func listIDs(t *testing.T, s records.Store, f records.ApprovalFilter) []string {
	t.Helper()
	list, err := s.ListApprovals(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range list {
		ids = append(ids, a.ID)
	}
	return ids
}
