package records

import (
	"strconv"
	"strings"
	"time"
)

// dialect holds what differs between the SQL engines; the rest of the store
// is one implementation over database/sql. Column types, identity columns
// and the append-only triggers differ too, but live in each engine's
// migration files.
type dialect struct {
	// name is what Store.Engine returns.
	name string
	// numbered placeholders ($1, $2, …) instead of ?.
	numbered bool
	// textTime stores times as fixed-width UTC text that sorts in time
	// order; otherwise as the driver's native timestamp.
	textTime bool
	// skipLocked ends a SELECT of rows to claim, so that concurrent
	// claimers pass over each other's rows. SQLite needs none: its write
	// transactions run one at a time.
	skipLocked string
	// migrationsTable creates the table of applied migrations.
	migrationsTable string
	// lockMigrations and unlockMigrations take and give back a lock held
	// while migrating, so that stores opening together migrate one after
	// another. Empty: the engine's write lock suffices.
	lockMigrations, unlockMigrations string
	// lockClient takes a transaction-scoped lock on one client's
	// idempotency keys (argument: the client), so that two claims cannot
	// both pass the per-client cap. Empty: write transactions are serial.
	lockClient string
	// lazyCommitOn and lazyCommitOff, run on the connection before and
	// after a transaction, let its commit return before the log is on
	// disk, where the setting cannot change within a transaction (SQLite;
	// PostgreSQL has a pool of its own for it). See inLazyTx.
	lazyCommitOn, lazyCommitOff string
	// writableWith: data-modifying statements may be joined into one in a
	// WITH, each its own query.
	writableWith bool
	// claimNewKey: the schema has erpgate_claim_new_key, which claims a
	// new key (and a lease) in one round trip.
	claimNewKey bool
}

// migrationLockKey is the pg_advisory_lock key held while migrating: the
// bytes of "erpgate" followed by 1.
const migrationLockKey int64 = 0x6572706761746501

// clientLockSpace is the first half of the two-part advisory lock key that
// serializes the key claims of one client; the second half is a hash of
// the client.
const clientLockSpace = 0x65726b31 // "erk1"

var (
	sqliteDialect = &dialect{
		name:          "sqlite",
		textTime:      true,
		lazyCommitOn:  "PRAGMA synchronous = NORMAL",
		lazyCommitOff: "PRAGMA synchronous = FULL",
		migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at TEXT NOT NULL
)`,
	}
	postgresDialect = &dialect{
		name:       "postgres",
		numbered:   true,
		skipLocked: " FOR UPDATE SKIP LOCKED",
		migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at TIMESTAMPTZ NOT NULL
)`,
		lockMigrations:   "SELECT pg_advisory_lock($1)",
		unlockMigrations: "SELECT pg_advisory_unlock($1)",
		lockClient:       "SELECT pg_advisory_xact_lock(" + strconv.Itoa(clientLockSpace) + ", hashtext($1))",
		writableWith:     true,
		claimNewKey:      true,
	}
)

// rebind rewrites the ? placeholders of query for the dialect. The store's
// queries contain no ? in literals or identifiers.
func (d *dialect) rebind(query string) string {
	if !d.numbered {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// textTimeLayout is the SQLite form of a time: UTC, microseconds, fixed
// width, so that text order is time order.
const textTimeLayout = "2006-01-02T15:04:05.000000Z"

// timeArg is the argument that stores t: NULL for the zero time, else t in
// UTC to the microsecond (the precision of a PostgreSQL timestamp).
func (d *dialect) timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	t = normTime(t)
	if d.textTime {
		return t.Format(textTimeLayout)
	}
	return t
}

// normTime is t as the store keeps it: UTC, to the microsecond, without a
// monotonic reading. The zero time stays zero.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}
