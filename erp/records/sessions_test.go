package records_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

// onBothEngines runs fn on a new SQLite store and on a new PostgreSQL one.
func onBothEngines(t *testing.T, fn func(t *testing.T, s records.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, u := recordstest.SQLite(t)
		urls.Store(s, u)
		fn(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		s, u := recordstest.Postgres(t)
		urls.Store(s, u)
		fn(t, s)
	})
}

// TestSessions checks a console session's life in the store: made, read
// on another store over the same database (another replica), ended there
// for both, and swept once expired; the token itself is not stored.
func TestSessions(t *testing.T) {
	onBothEngines(t, func(t *testing.T, s records.Store) {
		ctx := t.Context()
		const token = "a-random-token-of-the-cookie"
		want := records.Session{Client: "m.keller", KeyFP: "0011223344556677", CreatedAt: stored(t0),
			ExpiresAt: stored(t0.Add(8 * time.Hour))}
		if err := s.CreateSession(ctx, token, want); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSession(ctx, token, want); err == nil {
			t.Error("a second session with the same token: got no error")
		}
		if err := s.CreateSession(ctx, "other", records.Session{Client: "x"}); err == nil {
			t.Error("a session without an expiry: got no error")
		}
		replica := reopen(t, s)
		got, err := replica.Session(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "session on the other replica", got, want)
		if !got.Live(t0) || got.Live(t0.Add(8*time.Hour)) {
			t.Errorf("Live: want live before its expiry and not at it")
		}
		if _, err := s.Session(ctx, "not-a-token"); !errors.Is(err, records.ErrNotFound) {
			t.Errorf("an unknown token: got %v, want ErrNotFound", err)
		}

		var leaked int
		if err := records.DB(s).QueryRowContext(ctx, records.Rebind(s,
			"SELECT COUNT(*) FROM console_sessions WHERE id = ? OR client = ? OR key_fp = ?"), token, token, token).Scan(&leaked); err != nil {
			t.Fatal(err)
		}
		if leaked != 0 {
			t.Error("the token itself is in the table")
		}

		// Signing out on one replica ends the session on the other.
		end := t0.Add(time.Hour)
		if err := replica.EndSession(ctx, token, end); err != nil {
			t.Fatal(err)
		}
		if err := s.EndSession(ctx, token, end.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.EndSession(ctx, "not-a-token", end); err != nil {
			t.Errorf("ending an unknown session: %v, want no error", err)
		}
		got, err = s.Session(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if !got.EndedAt.Equal(stored(end)) || got.Live(t0.Add(2*time.Hour)) {
			t.Errorf("after sign-out: ended %v, live %v; want ended at the first sign-out and not live", got.EndedAt, got.Live(t0.Add(2*time.Hour)))
		}

		// The sweep drops expired sessions, ended or not, and only them.
		if err := s.CreateSession(ctx, "later", records.Session{Client: "j.doe", KeyFP: "ff", CreatedAt: t0,
			ExpiresAt: t0.Add(24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		for _, st := range []struct {
			at   time.Time
			want int
		}{{t0.Add(time.Hour), 0}, {t0.Add(8 * time.Hour), 1}, {t0.Add(8 * time.Hour), 0}} {
			if n, err := s.DeleteExpiredSessions(ctx, st.at); err != nil || n != st.want {
				t.Errorf("DeleteExpiredSessions at %v: got %d, %v; want %d", st.at, n, err, st.want)
			}
		}
		if _, err := s.Session(ctx, token); !errors.Is(err, records.ErrNotFound) {
			t.Errorf("an expired session after the sweep: got %v, want ErrNotFound", err)
		}
		if _, err := s.Session(ctx, "later"); err != nil {
			t.Errorf("a live session after the sweep: %v", err)
		}
	})
}

// TestAuditFilters checks each filter of the audit log alone and together,
// with the cursor, on both engines.
func TestAuditFilters(t *testing.T) {
	onBothEngines(t, func(t *testing.T, s records.Store) {
		ctx := t.Context()
		// Six rows a minute apart: two clients, three operations, two
		// invoices.
		rows := []struct{ client, op, invoice string }{
			{"agent", "request_approval", "5105600102"},
			{"agent", "hold_invoice", "5105600102"},
			{"m.keller", "decide_approval", "5105600102"},
			{"agent", "post_invoice", "5105600102"},
			{"agent", "request_approval", "5105600103"},
			{"j.doe", "decide_approval", "5105600103"},
		}
		for i, r := range rows {
			if err := s.AppendAudit(ctx, records.AuditEntry{At: t0.Add(time.Duration(i) * time.Minute), Client: r.client,
				Operation: r.op, InvoiceID: r.invoice, Outcome: "OK", RequestID: fmt.Sprint("req-", i)}); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.Audit(ctx, records.AuditFilter{})
		if err != nil || len(all) != len(rows) {
			t.Fatalf("every row: got %d, %v; want %d", len(all), err, len(rows))
		}
		reqs := func(es []records.AuditEntry) []string {
			return ids(es, func(e records.AuditEntry) string { return e.RequestID })
		}
		for _, tc := range []struct {
			name string
			f    records.AuditFilter
			want []string
		}{
			{"client", records.AuditFilter{Client: "agent"}, []string{"req-4", "req-3", "req-1", "req-0"}},
			{"operation", records.AuditFilter{Operation: "decide_approval"}, []string{"req-5", "req-2"}},
			{"from, inclusive", records.AuditFilter{From: t0.Add(4 * time.Minute)}, []string{"req-5", "req-4"}},
			{"to, exclusive", records.AuditFilter{To: t0.Add(2 * time.Minute)}, []string{"req-1", "req-0"}},
			{"from and to", records.AuditFilter{From: t0.Add(time.Minute), To: t0.Add(3 * time.Minute)}, []string{"req-2", "req-1"}},
			{"every filter", records.AuditFilter{InvoiceID: "5105600102", Client: "agent", Operation: "request_approval",
				From: t0, To: t0.Add(time.Hour)}, []string{"req-0"}},
			{"client and invoice", records.AuditFilter{Client: "agent", InvoiceID: "5105600103"}, []string{"req-4"}},
			{"client, with the cursor", records.AuditFilter{Client: "agent", Limit: 2, BeforeID: all[1].ID}, []string{"req-3", "req-1"}},
			{"a client without rows", records.AuditFilter{Client: "nobody"}, []string{}},
			{"a time in another zone", records.AuditFilter{From: t0.Add(5 * time.Minute).In(time.FixedZone("X", -5*3600))}, []string{"req-5"}},
		} {
			got, err := s.Audit(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			same(t, tc.name, reqs(got), tc.want)
		}
	})
}
