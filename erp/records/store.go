package records

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// sqlStore is the Store over database/sql, for every engine; d holds what
// differs between them.
type sqlStore struct {
	// db serves reads; w serves writes. On PostgreSQL they are one pool.
	// On SQLite, which runs one write transaction at a time, w has one
	// connection: the writers of this process queue for it in order,
	// instead of each polling the file lock under busy_timeout, and only
	// writers of other processes meet the lock.
	db, w *sql.DB
	// lazy, on PostgreSQL, serves the transactions of inLazyTx: its
	// connections commit without waiting for the disk. nil on SQLite.
	lazy *sql.DB
	d    *dialect
	// holdEvents: see Options.HoldEvents.
	holdEvents bool
}

var _ Store = (*sqlStore)(nil)

// Engine names the database: "sqlite" or "postgres".
func (s *sqlStore) Engine() string { return s.d.name }

// Ping checks the database answers.
func (s *sqlStore) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("records: ping: %w", err)
	}
	return nil
}

// Close releases the database.
func (s *sqlStore) Close() error {
	err := s.db.Close()
	if s.w != s.db {
		err = errors.Join(err, s.w.Close())
	}
	if s.lazy != nil {
		err = errors.Join(err, s.lazy.Close())
	}
	if err != nil {
		return fmt.Errorf("records: close: %w", err)
	}
	return nil
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// exec runs query (with ? placeholders) on q and returns the rows it
// affected.
func (s *sqlStore) exec(ctx context.Context, q querier, query string, args ...any) (int64, error) {
	res, err := q.ExecContext(ctx, s.d.rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// inRecordTx runs fn in a transaction as inTx does, unless the
// transaction queues no webhook (durable false) and belongs to a call
// marked SettledLater: then its commit does not wait for the disk, as a
// claim's does (see inLazyTx), since the call's settlement puts it there
// before anything of it is told.
func (s *sqlStore) inRecordTx(ctx context.Context, durable bool, fn func(tx *sql.Tx) error) error {
	if durable || !settledLater(ctx) {
		return s.inTx(ctx, fn)
	}
	return s.inLazyTx(ctx, fn)
}

type runIDKey struct{}

// WithRunID marks ctx as a call of the agent run id: the case events its
// records make name the run.
func WithRunID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, runIDKey{}, id)
}

// RunIDFrom returns the run id WithRunID set, or "".
func RunIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}

type settledLaterKey struct{}

// SettledLater marks ctx as a write call's that ends with its Settle, a
// durable commit, before its answer or anything else of it leaves the
// gateway. Within it, a record the call creates that queues no webhook
// (CreateApproval or CreateHandover without notify) commits without
// waiting for the disk: were the machine to lose it before the
// settlement, the call was never answered, and its retry makes it again.
// A record that queues a webhook waits for the disk, since the outbox may
// send it at once.
func SettledLater(ctx context.Context) context.Context {
	return context.WithValue(ctx, settledLaterKey{}, true)
}

func settledLater(ctx context.Context) bool {
	v, _ := ctx.Value(settledLaterKey{}).(bool)
	return v
}

// stmt is one statement, with ? placeholders, and its arguments.
type stmt struct {
	query string
	args  []any
}

// exec runs st on q and returns the rows it affected.
func (st stmt) exec(ctx context.Context, s *sqlStore, q querier) (int64, error) {
	return s.exec(ctx, q, st.query, st.args...)
}

// inTx runs fn in a transaction, committed when fn returns nil. On SQLite
// the transaction takes the write lock at its start.
func (s *sqlStore) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return txOn(ctx, s.w, fn)
}

// txOn runs fn in a transaction begun on b, a pool or one of its
// connections, committed when fn returns nil.
func txOn(ctx context.Context, b interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}, fn func(tx *sql.Tx) error) error {
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// inLazyTx runs fn in a transaction as inTx does, but its commit returns
// before the log is on disk. It is for a write's claim, which needs no
// disk of its own: the next durable commit, the write's settlement at the
// latest, puts it on disk with its own (PostgreSQL flushes its log in
// order, and SQLite syncs its whole write-ahead log). A claim that the
// machine loses before then, with the database's own crash, is a key never
// claimed: a retry claims it again and finds what the first call did by
// its dedupe key or by reading the invoice, as after any 5xx. A crash of
// the gateway alone loses nothing.
func (s *sqlStore) inLazyTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.lazy != nil {
		return txOn(ctx, s.lazy, fn)
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, s.d.lazyCommitOn); err != nil {
		return err
	}
	// The connection goes back to durable commits whatever happens, or
	// is dropped from the pool.
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), s.d.lazyCommitOff); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return txOn(ctx, conn, fn)
}

// opErr names the operation that failed. The store's own errors pass as
// they are: they name what failed already.
func opErr(op string, err error) error {
	if err == nil || isRecordsErr(err) {
		return err
	}
	return fmt.Errorf("records: %s: %w", op, err)
}

func isRecordsErr(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotPending) ||
		errors.Is(err, ErrSameRequester) || errors.Is(err, ErrHandoverState)
}

// notFound is ErrNotFound naming the record.
func notFound(kind, id string) error {
	return fmt.Errorf("%w: %s %q", ErrNotFound, kind, id)
}

// idKind formats and parses the ids of one kind of record: a prefix and
// the number from the table's sequence, at least seven digits.
type idKind struct {
	prefix string
	name   string // for messages
	table  string
}

var (
	approvalIDs = idKind{prefix: "A", name: "approval", table: "approvals"}
	holdIDs     = idKind{prefix: "H", name: "hold", table: "holds"}
	handoverIDs = idKind{prefix: "HO", name: "handover", table: "handovers"}
	deliveryIDs = idKind{prefix: "D", name: "delivery", table: "deliveries"}
)

func (k idKind) format(n int64) string { return fmt.Sprintf("%s%07d", k.prefix, n) }

// parse returns the number of id, or ErrNotFound when id is not of this
// kind's form: the form is exact (no extra leading zeros), so that one
// record has one id.
func (k idKind) parse(id string) (int64, error) {
	digits, ok := strings.CutPrefix(id, k.prefix)
	if ok && len(digits) >= 7 && strings.Trim(digits, "0123456789") == "" {
		if n, err := strconv.ParseInt(digits, 10, 64); err == nil && n > 0 && k.format(n) == id {
			return n, nil
		}
	}
	return 0, notFound(k.name, id)
}

// invoiceOf returns the invoice of the record of kind k with id, or
// ErrNotFound. A record's invoice never changes, so that it may be read
// before the transaction that locks the invoice's case.
func (s *sqlStore) invoiceOf(ctx context.Context, k idKind, id string) (string, error) {
	n, err := k.parse(id)
	if err != nil {
		return "", err
	}
	var invoice string
	err = s.db.QueryRowContext(ctx, s.d.rebind("SELECT invoice_id FROM "+k.table+" WHERE id = ?"), n).Scan(&invoice)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound(k.name, id)
	}
	return invoice, err
}

// Page sizes.
const (
	defaultPage       = 50
	maxPage           = 500
	defaultAudit      = 100
	maxAudit          = 1000
	defaultCaseEvents = 100
	maxCaseEvents     = 1000
	maxClaimBatch     = 1000
)

// pageLimit is the number of rows a list with the given Limit returns at
// most.
func pageLimit(limit, def, max int) int {
	switch {
	case limit <= 0:
		return def
	case limit > max:
		return max
	}
	return limit
}

// defaultLease is the lease of a claim asked for with none.
const defaultLease = time.Minute

func leaseOrDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return defaultLease
	}
	return d
}

// nowIfZero returns t, or the current time for the zero time.
func nowIfZero(t time.Time) time.Time {
	if t.IsZero() {
		return normTime(time.Now())
	}
	return normTime(t)
}

// where collects the conditions and arguments of a list query.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, arg any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, arg)
}

// String is the WHERE clause, empty without conditions.
func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// pageWhere adds a page's cursor to w.
func pageWhere(w *where, k idKind, p Page) error {
	if p.After == "" {
		return nil
	}
	n, err := k.parse(p.After)
	if err != nil {
		return err
	}
	w.add("id < ?", n)
	return nil
}

// placeholders returns n comma-separated ? placeholders.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

// timeCol scans a time column into *t: NULL is the zero time; the engine
// gives a time (PostgreSQL) or text (SQLite).
type timeCol struct{ t *time.Time }

// Scan implements sql.Scanner.
func (c timeCol) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*c.t = time.Time{}
	case time.Time:
		*c.t = v.UTC()
	case string:
		return c.parse(v)
	case []byte:
		return c.parse(string(v))
	default:
		return fmt.Errorf("time column holds a %T", v)
	}
	return nil
}

func (c timeCol) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("time column: %w", err)
	}
	*c.t = t.UTC()
	return nil
}

// jsonCol scans a JSON text column into the value v points to.
type jsonCol struct{ v any }

// Scan implements sql.Scanner.
func (c jsonCol) Scan(src any) error {
	var b []byte
	switch src := src.(type) {
	case nil:
		return nil
	case string:
		b = []byte(src)
	case []byte:
		b = src
	default:
		return fmt.Errorf("JSON column holds a %T", src)
	}
	return json.Unmarshal(b, c.v)
}

// jsonArg is the JSON text that stores v.
func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// collect scans every row of rows with scan.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// insertDeduped runs an INSERT … ON CONFLICT DO NOTHING RETURNING id and
// returns the new id, or ok false when a row with the same dedupe was
// there: then the caller reads that one. Two racing inserts of one dedupe
// cannot both succeed, on either engine: the unique index decides.
func (s *sqlStore) insertDeduped(ctx context.Context, q querier, query string, args ...any) (id int64, ok bool, err error) {
	err = q.QueryRowContext(ctx, s.d.rebind(query), args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}
