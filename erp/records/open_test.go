package records_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/records/recordstest"
)

func TestOpenURLs(t *testing.T) {
	dir := t.TempDir()
	pg := recordstest.PostgresURL(t)
	tests := []struct {
		name, url, engine string // engine "": Open fails
	}{
		{"sqlite:", "sqlite:" + filepath.Join(dir, "a.db"), "sqlite"},
		{"sqlite:// with an absolute path", "sqlite://" + filepath.Join(dir, "b.db"), "sqlite"},
		{"sqlite: with any file name", "sqlite:" + filepath.Join(dir, "records.sqlite3"), "sqlite"},
		{"bare path ending in .db", filepath.Join(dir, "c.db"), "sqlite"},
		{"postgres://", pg, "postgres"},
		{"postgresql://", "postgresql://" + strings.TrimPrefix(pg, "postgres://"), "postgres"},
		{"empty", "", ""},
		{"other scheme", "mysql://root@127.0.0.1/erpgate", ""},
		{"bare path not ending in .db", filepath.Join(dir, "d.sqlite"), ""},
		{"sqlite: without a file", "sqlite:", ""},
		{"in-memory", "sqlite::memory:", ""},
		{"query in the path", "sqlite:" + filepath.Join(dir, "e.db") + "?mode=ro", ""},
		{"missing directory", "sqlite:" + filepath.Join(dir, "no", "such", "f.db"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := records.Open(t.Context(), tc.url, records.Options{})
			if tc.engine == "" {
				if err == nil {
					s.Close()
					t.Fatalf("Open(%q): got no error, want one", tc.url)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.url, err)
			}
			defer s.Close()
			if got := s.Engine(); got != tc.engine {
				t.Errorf("Open(%q).Engine() = %q, want %q", tc.url, got, tc.engine)
			}
		})
	}
}

func TestOpenRedactsPasswords(t *testing.T) {
	tests := []struct{ url, password string }{
		{"postgres://erp:s3cr3t-in-userinfo@127.0.0.1:1/erpgate?sslmode=disable&connect_timeout=5", "s3cr3t-in-userinfo"},
		{"postgresql://erp@127.0.0.1:1/erpgate?sslmode=disable&password=s3cr3t-in-query", "s3cr3t-in-query"},
		{"postgres://erp:s3cr3t-unparsable@[::1/erpgate", "s3cr3t-unparsable"},
		{"postgres://erp:s3cr3t%2Fescaped@127.0.0.1:1/erpgate?sslmode=disable", "s3cr3t"},
		{"postgres://erp:s3cr3t-bad-option@127.0.0.1:1/erpgate?sslmode=bogus", "s3cr3t-bad-option"},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		s, err := records.Open(ctx, tc.url, records.Options{})
		cancel()
		if err == nil {
			s.Close()
			t.Errorf("Open(%s): got no error, want one (nothing listens on port 1)", records.Redact(tc.url))
			continue
		}
		t.Logf("Open(%s): %v", records.Redact(tc.url), err)
		if strings.Contains(err.Error(), tc.password) {
			t.Errorf("Open error names the password: %v", err)
		}
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ url, want string }{
		{"postgres://erp:secret@db:5432/erpgate", "postgres://erp:xxxxx@db:5432/erpgate"},
		{"postgres://erp@db/erpgate?password=secret&sslmode=require", "postgres://erp@db/erpgate?password=xxxxx&sslmode=require"},
		{"postgres://db/erpgate", "postgres://db/erpgate"},
		{"postgres://erp:secret@[::1/erpgate", "postgres://(unparsable)"},
		{"sqlite:/var/lib/erpgate/erpgate.db", "sqlite:/var/lib/erpgate/erpgate.db"},
	}
	for _, tc := range tests {
		if got := records.Redact(tc.url); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestOpenDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "records")
	s, err := records.OpenDir(t.Context(), dir, records.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Engine(); got != "sqlite" {
		t.Errorf("Engine() = %q, want sqlite", got)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o700 | os.ModeDir}, {filepath.Join(dir, "erpgate.db"), 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.mode {
			t.Errorf("mode of %s: got %v, want %v", c.path, fi.Mode(), c.mode)
		}
	}
}

func TestOpenMigratesOnce(t *testing.T) {
	var logs bytes.Buffer
	opts := records.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	u := "sqlite:" + filepath.Join(t.TempDir(), records.DataFile)
	for i := range 2 {
		s, err := records.Open(t.Context(), u, opts)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got, want := strings.Count(logs.String(), "migration applied"), records.MigrationCount("sqlite"); got != want {
			t.Errorf("after open %d: got %d migrations logged, want %d:\n%s", i+1, got, want, logs.String())
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	s, u := recordstest.SQLite(t)
	if _, err := records.DB(s).ExecContext(t.Context(),
		"INSERT INTO schema_migrations (version, applied_at) VALUES (9999, '2030-01-01T00:00:00.000000Z')"); err != nil {
		t.Fatal(err)
	}
	s2, err := records.Open(t.Context(), u, records.Options{})
	if err == nil {
		s2.Close()
		t.Fatal("Open of a database with a newer schema: got no error")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a database with a newer schema: got %v, want it to say the schema is newer", err)
	}
}
