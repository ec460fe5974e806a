package recheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisQueue is a Queue in Redis, shared by every gateway replica that uses
// the same Redis and prefix. It keeps two keys: the sorted set
// prefix+"recheck:due", whose members are hold ids scored by RecheckAt in
// Unix milliseconds, and the hash prefix+"recheck:entries", which maps each
// hold id to its entry as JSON.
//
// Claim runs one Lua script that reads the due members (ZRANGEBYSCORE) and
// removes each from both keys (ZREM, HGET, HDEL) before returning them.
// Redis runs a script without interleaving other commands, so two
// replicas claiming at once never both get an entry. The script touches
// both keys, so on Redis Cluster the prefix must carry a hash tag, such as
// "{erpgate}:", that puts them in one slot.
//
// An entry is gone from Redis once claimed: a replica that dies before it
// has re-added a claimed entry loses it, and the hold stays in force in the
// ERP until a person releases it.
type RedisQueue struct {
	client  redis.UniversalClient
	due     string
	entries string
}

var _ Queue = (*RedisQueue)(nil)

// NewRedisQueue returns a RedisQueue keeping its keys under prefix.
func NewRedisQueue(client redis.UniversalClient, prefix string) *RedisQueue {
	return &RedisQueue{client: client, due: prefix + "recheck:due", entries: prefix + "recheck:entries"}
}

// Add implements Queue. The hash and the sorted set are written in one
// MULTI/EXEC transaction, so a claimer never sees one without the other.
func (q *RedisQueue) Add(ctx context.Context, e Entry) error {
	if e.HoldID == "" {
		return ErrNoHoldID
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = q.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, q.entries, e.HoldID, data)
		p.ZAdd(ctx, q.due, redis.Z{Score: float64(e.RecheckAt.UnixMilli()), Member: e.HoldID})
		return nil
	})
	if err != nil {
		return fmt.Errorf("recheck: add hold %s: %w", e.HoldID, err)
	}
	return nil
}

// claimScript is KEYS[1] the sorted set, KEYS[2] the hash, ARGV[1] now in
// Unix milliseconds, ARGV[2] the limit. It returns the claimed entries'
// JSON; a member without an entry in the hash is dropped.
var claimScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, id in ipairs(ids) do
	redis.call('ZREM', KEYS[1], id)
	local v = redis.call('HGET', KEYS[2], id)
	redis.call('HDEL', KEYS[2], id)
	if v then
		table.insert(out, v)
	end
end
return out
`)

// Claim implements Queue. An entry whose JSON does not decode is removed
// all the same and named in the error.
func (q *RedisQueue) Claim(ctx context.Context, now time.Time, limit int) ([]Entry, error) {
	if limit <= 0 {
		return nil, nil
	}
	raw, err := claimScript.Run(ctx, q.client, []string{q.due, q.entries},
		strconv.FormatInt(now.UnixMilli(), 10), strconv.Itoa(limit)).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("recheck: claim: %w", err)
	}
	entries := make([]Entry, 0, len(raw))
	var errs []error
	for _, s := range raw {
		var e Entry
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			errs = append(errs, fmt.Errorf("recheck: claimed entry %q does not decode: %w", s, err))
			continue
		}
		entries = append(entries, e)
	}
	return entries, errors.Join(errs...)
}

// Len implements Queue.
func (q *RedisQueue) Len(ctx context.Context) (int, error) {
	n, err := q.client.ZCard(ctx, q.due).Result()
	if err != nil {
		return 0, fmt.Errorf("recheck: len: %w", err)
	}
	return int(n), nil
}
