package recordstest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

func TestHelpers(t *testing.T) {
	for _, tc := range []struct {
		name, engine, prefix string
		open                 func(testing.TB) (records.Store, string)
	}{
		{"SQLite", "sqlite", "sqlite:", recordstest.SQLite},
		{"Postgres", "postgres", "postgres://", recordstest.Postgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, u := tc.open(t)
			if got := s.Engine(); got != tc.engine {
				t.Errorf("Engine() = %q, want %q", got, tc.engine)
			}
			if !strings.HasPrefix(u, tc.prefix) {
				t.Errorf("URL %q, want it to start with %q", u, tc.prefix)
			}
			ctx := context.Background()
			a, created, err := s.CreateApproval(ctx, records.Approval{InvoiceID: "5105600001", RequestedBy: "agent"}, false)
			if err != nil || !created {
				t.Fatalf("CreateApproval: created %v, err %v; want created", created, err)
			}
			if a.ID != "A0000001" {
				t.Errorf("first approval id %q, want A0000001: the database is not fresh", a.ID)
			}
		})
	}
}
