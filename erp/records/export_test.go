package records

import (
	"context"
	"database/sql"
	"fmt"
)

// DB returns the database under s, for tests that go around the Store.
func DB(s Store) *sql.DB { return s.(*sqlStore).db }

// Rebind rewrites the ? placeholders of query for the engine of s.
func Rebind(s Store, query string) string { return s.(*sqlStore).d.rebind(query) }

// MigrationCount is the number of migrations of the engine named.
func MigrationCount(engine string) int {
	for _, d := range []*dialect{sqliteDialect, postgresDialect} {
		if d.name == engine {
			ms, err := migrations(d)
			if err != nil {
				panic(err)
			}
			return len(ms)
		}
	}
	panic("unknown engine " + engine)
}

// PageLimit is the number of records a list with p returns at most.
func PageLimit(p Page) int { return pageLimit(p.Limit, defaultPage, maxPage) }

// AuditLimit is the number of rows Audit with f returns at most.
func AuditLimit(f AuditFilter) int { return pageLimit(f.Limit, defaultAudit, maxAudit) }

// WriterDB returns the pool s writes through.
func WriterDB(s Store) *sql.DB { return s.(*sqlStore).w }

// LazyDB returns the pool of the claims' lazy commits, nil where there is
// none (SQLite).
func LazyDB(s Store) *sql.DB { return s.(*sqlStore).lazy }

// ClientLockSpace is the first half of the advisory lock key of a client's
// idempotency keys.
const ClientLockSpace = clientLockSpace

// CaseState is the state of a case with the records of c.
func CaseState(c Case) string { return caseState(c) }

// OpenAtVersion opens the database at url with its schema migrated up to
// version only, for tests of the migrations after it; the caller closes
// the database it returns.
func OpenAtVersion(ctx context.Context, url string, version int) (*sql.DB, error) {
	s, err := openDB(url)
	if err != nil {
		return nil, err
	}
	if s.lazy != nil {
		s.lazy.Close()
	}
	if s.db != s.w {
		s.db.Close()
	}
	err = func() error {
		ms, err := migrations(s.d)
		if err != nil {
			return err
		}
		conn, err := s.w.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, s.d.migrationsTable); err != nil {
			return err
		}
		for _, m := range ms {
			if m.version > version {
				break
			}
			if _, err := applyMigration(ctx, conn, s.d, m); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		return nil
	}()
	if err != nil {
		s.w.Close()
		return nil, err
	}
	return s.w, nil
}
