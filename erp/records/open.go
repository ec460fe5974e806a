package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Options configures Open.
type Options struct {
	// Logger receives the migrations applied at Open. Nil: discard.
	Logger *slog.Logger
	// MaxConns caps the database connections the store keeps open (on
	// SQLite, those for reads, beside its one writer). Zero means
	// DefaultMaxConns.
	MaxConns int
	// HoldEvents queues a DeliveryHoldReleased for every hold released
	// (with an event of kind "released", not "closed") and a
	// DeliveryApprovalDecided for every approval a person decides, in the
	// transaction that makes them.
	HoldEvents bool
}

// DefaultMaxConns is the connection cap of a store whose Options.MaxConns
// is zero.
const DefaultMaxConns = 16

// DataFile is the name of the SQLite file OpenDir keeps in its directory.
const DataFile = "erpgate.db"

// sqlitePragmas configure every SQLite connection: wait up to 5s for
// another writer rather than fail, write-ahead logging so that readers do
// not block the writer, a commit that returns once the log is on disk,
// enforced foreign keys, and write transactions that take the write lock
// at BEGIN (a deferred transaction that reads and then writes fails at
// once with SQLITE_BUSY instead of waiting).
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate"

// Open opens the records at url, and migrates the schema to the newest
// version.
//
// The url names the engine: "sqlite:" followed by the path of the database
// file (or a bare path ending in ".db"), created when missing; or a
// PostgreSQL URL, "postgres://…" or "postgresql://…", of a database that
// exists. A SQLite file is meant for one gateway; PostgreSQL serves
// several replicas, which may Open together: one migrates, the others wait.
//
// Beyond what Store documents, the store it returns:
//   - fills in a zero creation, decision, event, audit, next check or next
//     attempt time with the time of the call, and a new hold's zero
//     NextCheckAt with its RecheckAt (or, when that is zero too, its
//     creation time);
//   - keeps times in UTC to the microsecond and returns them in UTC;
//   - stores an approval with an empty Status as pending, a hold as held,
//     a handover as queued;
//   - answers a malformed id, also Page.After, with ErrNotFound;
//   - claims nothing for a limit of zero or less, at most 1000 at once,
//     and takes a lease of zero or less as one minute;
//   - keeps an answer that CompleteKey is given with a zero expiry until
//     its row is dropped by hand;
//   - counts an expired answer claimed anew against KeyOptions.MaxPerClient,
//     and lets a new Digest claim it.
func Open(ctx context.Context, url string, opts Options) (Store, error) {
	s, err := open(ctx, url, opts)
	if err != nil {
		return nil, redactErr(fmt.Errorf("records: open %s: %w", Redact(url), err), url)
	}
	return s, nil
}

// OpenDir opens the SQLite records in dir/erpgate.db (DataFile), creating
// dir, readable by its owner only, when missing.
func OpenDir(ctx context.Context, dir string, opts Options) (Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("records: open %s: %w", dir, err)
	}
	return Open(ctx, "sqlite:"+filepath.Join(dir, DataFile), opts)
}

func open(ctx context.Context, rawURL string, opts Options) (*sqlStore, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := openDB(rawURL)
	if err != nil {
		return nil, err
	}
	s.holdEvents = opts.HoldEvents
	maxConns := opts.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	s.db.SetMaxOpenConns(maxConns)
	s.db.SetMaxIdleConns(maxConns)
	s.db.SetConnMaxIdleTime(5 * time.Minute)
	if s.w != s.db {
		s.w.SetMaxOpenConns(1)
	}
	if s.lazy != nil {
		// Claims are short: a quarter of the pool serves them.
		n := max(1, maxConns/4)
		s.lazy.SetMaxOpenConns(n)
		s.lazy.SetMaxIdleConns(n)
		s.lazy.SetConnMaxIdleTime(5 * time.Minute)
	}
	if err := s.connect(ctx, log); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// sqliteBusyWait bounds how long connect tries again while SQLite answers
// SQLITE_BUSY.
const sqliteBusyWait = 5 * time.Second

// connect checks the database answers and migrates it. A SQLite
// connection that sets up a new file's write-ahead log while another
// connection does the same can be answered SQLITE_BUSY at once, without
// waiting out busy_timeout, as when stores open a new file together: it
// is tried again, for up to sqliteBusyWait.
func (s *sqlStore) connect(ctx context.Context, log *slog.Logger) error {
	deadline := time.Now().Add(sqliteBusyWait)
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		err := s.db.PingContext(ctx)
		if err == nil {
			err = migrate(ctx, s.w, s.d, log)
		}
		if err == nil || s.d.name != "sqlite" || !sqliteBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// sqliteBusy says err is SQLite's SQLITE_BUSY, of any extended code.
func sqliteBusy(err error) bool {
	var e interface{ Code() int }
	return errors.As(err, &e) && e.Code()&0xff == 5
}

// openDB opens, without connecting, the database url names.
func openDB(rawURL string) (*sqlStore, error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		cfg, err := pgx.ParseConfig(rawURL)
		if err != nil {
			return nil, err
		}
		db := stdlib.OpenDB(*cfg)
		lazyCfg := cfg.Copy()
		if lazyCfg.RuntimeParams == nil {
			lazyCfg.RuntimeParams = map[string]string{}
		}
		lazyCfg.RuntimeParams["synchronous_commit"] = "off"
		return &sqlStore{db: db, w: db, lazy: stdlib.OpenDB(*lazyCfg), d: postgresDialect}, nil
	case strings.HasPrefix(rawURL, "sqlite:"), !strings.Contains(rawURL, "://") && strings.HasSuffix(rawURL, ".db"):
		file := strings.TrimPrefix(rawURL, "sqlite:")
		if strings.HasPrefix(file, "//") {
			file = file[2:]
		}
		if err := checkSQLiteFile(file); err != nil {
			return nil, err
		}
		dsn := file + "?" + sqlitePragmas
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, err
		}
		w, err := sql.Open("sqlite", dsn)
		if err != nil {
			db.Close()
			return nil, err
		}
		return &sqlStore{db: db, w: w, d: sqliteDialect}, nil
	}
	return nil, errors.New(`unknown database: want "sqlite:<file>", a path ending in .db, or "postgres://…"`)
}

// checkSQLiteFile rejects what SQLite would not take as a plain file name,
// and creates the file, when missing, readable by its owner only; SQLite
// gives its journal files the same permissions.
func checkSQLiteFile(file string) error {
	switch {
	case file == "":
		return errors.New("sqlite: no file named")
	case file == ":memory:" || strings.HasPrefix(file, "file:"):
		return errors.New("sqlite: name a file path (an in-memory database is one per connection)")
	case strings.ContainsAny(file, "?#"):
		return errors.New("sqlite: the file path contains ? or #")
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// Redact returns url with its password, if any, replaced by "xxxxx", for
// logs and error messages.
func Redact(rawURL string) string {
	if !strings.Contains(rawURL, "://") {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		scheme, _, _ := strings.Cut(rawURL, "://")
		return scheme + "://(unparsable)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// redactErr returns err with every password of url in its message replaced
// by "xxxxx". Drivers do not put passwords into errors, but a message that
// quotes the URL must not leak one.
func redactErr(err error, rawURL string) error {
	msg := err.Error()
	redacted := msg
	for _, p := range passwords(rawURL) {
		redacted = strings.ReplaceAll(redacted, p, "xxxxx")
		if esc := url.QueryEscape(p); esc != p {
			redacted = strings.ReplaceAll(redacted, esc, "xxxxx")
		}
		if esc := url.PathEscape(p); esc != p {
			redacted = strings.ReplaceAll(redacted, esc, "xxxxx")
		}
	}
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

// passwords returns the passwords in url: in its user information and in
// a password query parameter.
func passwords(rawURL string) []string {
	var ps []string
	u, err := url.Parse(rawURL)
	if err != nil {
		// An unparsable URL still may carry user:password@.
		if _, rest, ok := strings.Cut(rawURL, "://"); ok {
			if userinfo, _, ok := strings.Cut(rest, "@"); ok {
				if _, p, ok := strings.Cut(userinfo, ":"); ok && p != "" {
					ps = append(ps, p)
				}
			}
		}
		return ps
	}
	if p, ok := u.User.Password(); ok && p != "" {
		ps = append(ps, p)
	}
	if p := u.Query().Get("password"); p != "" {
		ps = append(ps, p)
	}
	return ps
}

// redactedError is an error whose message had a password taken out; it
// still matches what it wraps with errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
