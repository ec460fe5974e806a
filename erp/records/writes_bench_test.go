package records_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// BenchmarkWritePath is the store work of one keyed post: claimed and
// settled in two transactions, and in the five separate calls the two fold
// together. SQLite always; PostgreSQL when ERPGATE_TEST_DATABASE_URL names
// a server (bash .ci/test.sh starts one, without fsync: its figures are
// round trips and work, not the disk).
func BenchmarkWritePath(b *testing.B) {
	for _, e := range []struct {
		name string
		open func(testing.TB) (records.Store, string)
	}{{"sqlite", recordstest.SQLite}, {"postgres", recordstest.Postgres}} {
		b.Run(e.name, func(b *testing.B) {
			if e.name == "postgres" && os.Getenv(recordstest.EnvDatabaseURL) == "" {
				b.Skip(recordstest.EnvDatabaseURL + " is not set: no PostgreSQL to measure")
			}
			benchWritePath(b, func() records.Store { s, _ := e.open(b); return s })
		})
	}
}

func benchWritePath(b *testing.B, open func() records.Store) {
	resp := records.Response{Status: 200, Outcome: "OK", Header: map[string][]string{"Content-Type": {"application/json"}},
		Body: []byte(`{"invoice_id":"5105600101","fiscal_year":"2026","status":"posted"}`)}
	opts := records.KeyOptions{Lease: time.Minute, MaxPerClient: 100000}
	call := func(i int) (records.Key, records.InvoiceLease, records.AuditEntry) {
		k := records.Key{Client: "agent", Key: fmt.Sprint("k", i), Operation: "post_invoice", Digest: "d"}
		l := records.InvoiceLease{InvoiceID: "5105600101", Holder: fmt.Sprint("h", i), Operation: "post_invoice"}
		return k, l, records.AuditEntry{At: time.Now(), Client: "agent", Operation: "post_invoice", InvoiceID: l.InvoiceID,
			ArgsDigest: "d", Outcome: "OK", RequestID: fmt.Sprint("r", i)}
	}
	post := func(name string, write func(ctx context.Context, s records.Store, k records.Key, l records.InvoiceLease, e records.AuditEntry, now time.Time) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			s := open()
			i := 0
			for b.Loop() {
				i++
				k, l, e := call(i)
				if err := write(b.Context(), s, k, l, e, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	post("two transactions", func(ctx context.Context, s records.Store, k records.Key, l records.InvoiceLease, e records.AuditEntry, now time.Time) error {
		c, err := s.ClaimWrite(ctx, records.WriteClaim{Key: k, KeyOptions: opts, Lease: &l, LeaseFor: time.Minute}, now)
		if err != nil || !c.Lease.Claimed {
			return fmt.Errorf("claim: %+v, %v", c, err)
		}
		return s.Settle(ctx, records.Settlement{Audit: &e, Lease: &l,
			Key: &records.KeySettlement{Client: k.Client, Key: k.Key, Response: &resp, Expires: now.Add(time.Hour)}})
	})
	post("five calls", func(ctx context.Context, s records.Store, k records.Key, l records.InvoiceLease, e records.AuditEntry, now time.Time) error {
		if c, err := s.ClaimKey(ctx, k, now, opts); err != nil || c.State != records.KeyClaimed {
			return fmt.Errorf("claim key: %+v, %v", c, err)
		}
		if c, err := s.ClaimInvoice(ctx, l, now, time.Minute); err != nil || !c.Claimed {
			return fmt.Errorf("claim invoice: %+v, %v", c, err)
		}
		if err := s.AppendAudit(ctx, e); err != nil {
			return err
		}
		if err := s.CompleteKey(ctx, k.Client, k.Key, resp, now.Add(time.Hour)); err != nil {
			return err
		}
		return s.ReleaseInvoice(ctx, l.InvoiceID, l.Holder)
	})
}
