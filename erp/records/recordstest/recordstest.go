// Package recordstest gives tests the gateway's records on a real
// database: a SQLite file in a temporary directory, or a fresh PostgreSQL
// database on the server that ERPGATE_TEST_DATABASE_URL names, dropped
// after the test.
package recordstest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/erpgate/erpgate/erp/records"
)

// EnvDatabaseURL names the environment variable with the URL of a running
// PostgreSQL, as a user that may create and drop databases.
const EnvDatabaseURL = "ERPGATE_TEST_DATABASE_URL"

// SQLite opens records in a new SQLite file in a temporary directory of
// the test, closed at the test's end. It returns the store and the URL it
// was opened with, for opening the same file again.
func SQLite(t testing.TB) (records.Store, string) {
	t.Helper()
	u := "sqlite:" + filepath.Join(t.TempDir(), records.DataFile)
	return open(t, u), u
}

// Postgres opens records in a new, empty PostgreSQL database (see
// PostgresURL), closed at the test's end. It returns the store and the
// database's URL, for opening the same database again.
func Postgres(t testing.TB) (records.Store, string) {
	t.Helper()
	u := PostgresURL(t)
	return open(t, u), u
}

// PostgresURL creates a PostgreSQL database with a random name on the
// server that ERPGATE_TEST_DATABASE_URL names, and returns its URL; the
// database is dropped at the test's end. Without the variable the test
// fails, saying how to get a server: a test that cannot run must not pass
// as if it had.
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvDatabaseURL)
	if admin == "" {
		t.Fatal(EnvDatabaseURL + " is not set: run the tests with `bash .ci/test.sh`, which starts a throwaway " +
			"PostgreSQL and sets it, or set it to the URL of a running PostgreSQL as a user that may create " +
			"databases, e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: not a URL", EnvDatabaseURL)
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("%s: %v", EnvDatabaseURL, err)
	}
	name := "erpgate_test_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		t.Fatalf("create database on %s: %v", records.Redact(admin), err)
	}
	t.Cleanup(func() {
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

func open(t testing.TB, u string) records.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := records.Open(ctx, u, records.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close records: %v", err)
		}
	})
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
