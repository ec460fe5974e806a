package records

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrationFiles holds the schema of each engine, one directory per
// dialect, one file per version: 0001_init.sql, 0002_….sql, …
//
//go:embed migrations
var migrationFiles embed.FS

// migration is one schema version.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the migrations of d in version order.
func migrations(d *dialect) ([]migration, error) {
	dir := path.Join("migrations", d.name)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name does not start with a version number", name)
		}
		b, err := fs.ReadFile(migrationFiles, path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s have the same version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// migrate brings the schema of db up to the newest migration of d, each
// migration in its own transaction. On an engine with a migration lock it
// holds the lock throughout, so that of several stores opening together
// one migrates and the others find the work done.
func migrate(ctx context.Context, db *sql.DB, d *dialect, log *slog.Logger) (err error) {
	ms, err := migrations(d)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if d.lockMigrations != "" {
		if _, err := conn.ExecContext(ctx, d.lockMigrations, migrationLockKey); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		defer func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, uerr := conn.ExecContext(uctx, d.unlockMigrations, migrationLockKey); uerr != nil {
				// A session lock outlives its holder only on its
				// connection: dropping the connection drops the lock.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
				err = errors.Join(err, fmt.Errorf("unlock: %w", uerr))
			}
		}()
	}
	if _, err := conn.ExecContext(ctx, d.migrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var newest sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&newest); err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	if known := ms[len(ms)-1].version; newest.Valid && int(newest.Int64) > known {
		return fmt.Errorf("the database has schema version %d, newer than this gateway's %d", newest.Int64, known)
	}
	for _, m := range ms {
		applied, err := applyMigration(ctx, conn, d, m)
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if applied {
			log.InfoContext(ctx, "records: migration applied", "engine", d.name, "version", m.version, "file", m.name)
		}
	}
	return nil
}

// applyMigration runs m unless it ran before, and says whether it ran. The
// check is inside the transaction: on SQLite the transaction holds the
// write lock from its start, so a concurrent opener waits and then sees the
// version recorded.
func applyMigration(ctx context.Context, conn *sql.Conn, d *dialect, m migration) (bool, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, d.rebind("SELECT COUNT(*) FROM schema_migrations WHERE version = ?"), m.version).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, d.rebind("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"),
		m.version, d.timeArg(time.Now())); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
