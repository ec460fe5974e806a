package retry

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisQuota is a Quota shared by every replica that uses the same Redis:
// the ceilings hold for all their calls together. Each replica also keeps
// its own ceiling of calls in flight in front of it, so that its callers
// queue for those in process and only as many as may run ask Redis for
// one; the starts are reserved in Redis alone, as one replica's own
// spacing would waste the starts the others take. Both scripts read Redis's clock, so the replicas' clocks need
// not agree. When Redis cannot be reached, no attempt is let through
// (QuotaUnavailable): a ceiling that cannot be checked is not kept by
// guessing.
type RedisQuota struct {
	local    *LocalQuota
	client   redis.UniversalClient
	prefix   string
	s        QuotaSettings
	interval time.Duration
}

// NewRedisQuota returns the quota of s shared through client, under keys
// starting with prefix.
func NewRedisQuota(client redis.UniversalClient, prefix string, s QuotaSettings) *RedisQuota {
	return &RedisQuota{local: NewLocalQuota(QuotaSettings{InFlight: s.InFlight}), client: client, prefix: prefix, s: s, interval: s.interval()}
}

// Settings returns the quota's settings.
func (q *RedisQuota) Settings() QuotaSettings { return q.s }

// rateScript reserves the next start of an attempt toward a service, at
// most ARGV[2] µs ahead of now, the starts spaced ARGV[1] µs apart:
// {1, µs to wait} or, refused, {0, µs until the first free start}.
var rateScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local start = tonumber(redis.call('GET', KEYS[1]) or '0')
if start < now then start = now end
local ahead = start - now
if ahead > tonumber(ARGV[2]) then return {0, ahead} end
local nxt = start + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', math.floor((nxt - now) / 1000) + 1000)
return {1, ahead}
`)

// inFlightScript takes one of ARGV[1] slots of a service, held by member
// ARGV[3] until released or for ARGV[2] µs at most (a replica that
// stopped frees its slots so): 1, or 0 when every slot is held.
var inFlightScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], math.floor(tonumber(ARGV[2]) / 1000) + 1000)
return 1
`)

// redisPoll is the longest pause between two tries for a shared in-flight
// slot, jittered.
const redisPoll = 10 * time.Millisecond

// Acquire implements Quota: the replica's own slot, then the shared
// in-flight slot, then the shared start of the attempt, all within wait.
func (q *RedisQuota) Acquire(ctx context.Context, svc Service, wait, hold time.Duration) (func(), error) {
	begin := time.Now()
	local, err := q.local.Acquire(ctx, svc, wait, hold)
	if err != nil {
		return nil, err
	}
	refuse := func(limit string, after time.Duration, err error) (func(), error) {
		local()
		return nil, &QuotaRefusal{Service: svc, Limit: limit, RetryAfter: after, Err: err}
	}
	release := local
	if q.s.InFlight > 0 {
		key := q.prefix + "quota:inflight:" + string(svc)
		member := slotID()
		for {
			got, err := inFlightScript.Run(ctx, q.client, []string{key}, q.s.InFlight, hold.Microseconds(), member).Int()
			if err != nil {
				if ctx.Err() != nil {
					local()
					return nil, ctx.Err()
				}
				return refuse(QuotaUnavailable, time.Second, err)
			}
			if got == 1 {
				break
			}
			pause := time.Duration(rand.Int64N(int64(redisPoll))) + time.Millisecond
			if time.Since(begin)+pause > wait {
				return refuse(QuotaInFlight, time.Second, nil)
			}
			if err := sleep(ctx, pause); err != nil {
				local()
				return nil, err
			}
		}
		release = func() {
			// Given back on a context of its own: the attempt's may have
			// ended, and a slot not given back is held until its lease ends.
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = q.client.ZRem(rctx, key, member).Err()
			local()
		}
	}
	if q.interval > 0 {
		left := max(wait-time.Since(begin), 0)
		res, err := rateScript.Run(ctx, q.client, []string{q.prefix + "quota:rate:" + string(svc)},
			ceilMicros(q.interval), left.Microseconds()).Int64Slice()
		if err != nil || len(res) != 2 {
			release()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &QuotaRefusal{Service: svc, Limit: QuotaUnavailable, RetryAfter: time.Second, Err: err}
		}
		ahead := time.Duration(res[1]) * time.Microsecond
		if res[0] != 1 {
			release()
			return nil, &QuotaRefusal{Service: svc, Limit: QuotaRate, RetryAfter: ahead}
		}
		if err := sleep(ctx, ahead); err != nil {
			release()
			return nil, err
		}
	}
	return release, nil
}

// slotID names one holder of a shared in-flight slot.
func slotID() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ceilMicros is d in whole microseconds, rounded up: an interval rounded
// down would let one attempt too many into a second.
func ceilMicros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}
