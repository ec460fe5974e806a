package retry

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisQuota is a Quota shared by every replica that uses the same Redis:
// the ceilings hold for all their calls together. Each replica also keeps
// its own ceiling of calls in flight in front of it, so that its callers
// queue for those in process and only as many as may run ask Redis for
// one; the starts, and the log of the sends, are kept in Redis alone, as
// one replica's own would waste the starts the others take. The scripts
// read Redis's clock, so the replicas' clocks need not agree. When Redis
// cannot be reached, no attempt is let through (QuotaUnavailable): a
// ceiling that cannot be checked is not kept by guessing.
type RedisQuota struct {
	local    *LocalQuota
	client   redis.UniversalClient
	prefix   string
	s        QuotaSettings
	n        int
	span     time.Duration
	interval time.Duration
}

// NewRedisQuota returns the quota of s shared through client, under keys
// starting with prefix.
func NewRedisQuota(client redis.UniversalClient, prefix string, s QuotaSettings) *RedisQuota {
	q := &RedisQuota{local: NewLocalQuota(QuotaSettings{InFlight: s.InFlight}), client: client, prefix: prefix, s: s}
	q.n, q.span, q.interval = s.window()
	return q
}

// Settings returns the quota's settings.
func (q *RedisQuota) Settings() QuotaSettings { return q.s }

// The answers of rateScript.
const (
	paceRefused = 0 // the first free start is too far ahead: {0, µs until it}
	paceLet     = 1 // the attempt may go now, and is on its way
	paceStart   = 2 // a start was reserved: {2, µs until it}, then ask again
	paceLog     = 3 // the log is full: {3, µs until one leaves the span}
)

// rateScript is LocalQuota.pace in Redis, for a service whose next start
// is at KEYS[1], whose log of requests written is the sorted set KEYS[2]
// and whose requests on their way are the sorted set KEYS[3] (scores in
// µs of Redis's clock: when written, when the way's lease ends). With
// ARGV[2] >= 0 it first reserves the next start, spaced ARGV[1] µs apart,
// at most ARGV[2] µs ahead; a start ahead is waited for by the replica,
// which then asks again with ARGV[2] = -1. The request ARGV[5] is let go,
// on its way for ARGV[6] µs at most, when fewer than ARGV[3] were written
// in the ARGV[4] µs before now or are on their way. Scores and times go
// through string.format, as Lua would write them with too few digits.
var rateScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local most = tonumber(ARGV[2])
if most >= 0 then
  local start = tonumber(redis.call('GET', KEYS[1]) or '0')
  if start < now then start = now end
  local ahead = start - now
  if ahead > most then return {0, ahead} end
  local nxt = start + tonumber(ARGV[1])
  redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', math.floor((nxt - now) / 1000) + 1000)
  if ahead > 0 then return {2, ahead} end
end
local span = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%d', now - span))
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', string.format('%d', now))
if redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3]) < tonumber(ARGV[3]) then
  local lease = tonumber(ARGV[6])
  redis.call('ZADD', KEYS[3], string.format('%d', now + lease), ARGV[5])
  redis.call('PEXPIRE', KEYS[3], math.floor(lease / 1000) + 1000)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #oldest == 0 then return {3, span} end
return {3, tonumber(oldest[2]) + span - now}
`)

// wroteScript notes the request ARGV[1], on its way in KEYS[2], as
// written now in the log KEYS[1] of the last ARGV[2] µs.
var wroteScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], string.format('%d', now), ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.floor(tonumber(ARGV[2]) / 1000) + 1000)
return 1
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
func (q *RedisQuota) Acquire(ctx context.Context, svc Service, wait, hold time.Duration) (sent, release func(), err error) {
	begin := time.Now()
	_, local, err := q.local.Acquire(ctx, svc, wait, hold)
	if err != nil {
		return nil, nil, err
	}
	refuse := func(limit string, after time.Duration, err error) (func(), func(), error) {
		local()
		return nil, nil, &QuotaRefusal{Service: svc, Limit: limit, RetryAfter: after, Err: err}
	}
	release = local
	if q.s.InFlight > 0 {
		key := q.prefix + "quota:inflight:" + string(svc)
		member := slotID()
		for {
			got, err := inFlightScript.Run(ctx, q.client, []string{key}, q.s.InFlight, hold.Microseconds(), member).Int()
			if err != nil {
				if ctx.Err() != nil {
					local()
					return nil, nil, ctx.Err()
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
				return nil, nil, err
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
	if q.n > 0 {
		// One hash slot for the keys, as a script's keys must be in Redis
		// Cluster.
		tag := q.prefix + "quota:{" + string(svc) + "}:"
		keys := []string{tag + "next", tag + "sent", tag + "pending"}
		member := strconv.FormatUint(rand.Uint64(), 36)
		if err := q.pace(ctx, svc, keys, member, begin, wait, hold); err != nil {
			release()
			return nil, nil, err
		}
		var once sync.Once
		sent = func() {
			once.Do(func() {
				// Noted on a context of its own, after the attempt's
				// request; until it is, the request counts as on its way,
				// which holds a place in the log just the same.
				go func() {
					rctx, cancel := context.WithTimeout(context.Background(), time.Second)
					defer cancel()
					_ = wroteScript.Run(rctx, q.client, keys[1:], member, ceilMicros(q.span)).Err()
				}()
			})
		}
		inFlight := release
		release = func() {
			sent()
			inFlight()
		}
	}
	return sent, release, nil
}

// pace lets the attempt member toward svc go when the shared rate allows
// it, within wait of begin (rateScript); it is on its way for hold and
// the span at most, should its replica never say it was written.
func (q *RedisQuota) pace(ctx context.Context, svc Service, keys []string, member string, begin time.Time, wait, hold time.Duration) error {
	most := max(wait-time.Since(begin), 0).Microseconds()
	lease := ceilMicros(hold + q.span)
	for {
		res, err := rateScript.Run(ctx, q.client, keys, ceilMicros(q.interval), most, q.n, ceilMicros(q.span), member, lease).Int64Slice()
		if err != nil || len(res) != 2 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &QuotaRefusal{Service: svc, Limit: QuotaUnavailable, RetryAfter: time.Second, Err: err}
		}
		d := time.Duration(res[1]) * time.Microsecond
		switch res[0] {
		case paceLet:
			return nil
		case paceRefused:
			return &QuotaRefusal{Service: svc, Limit: QuotaRate, RetryAfter: d}
		case paceStart:
			// Reserved within wait: waited for, then the log is asked.
		case paceLog:
			if time.Since(begin)+d > wait {
				return &QuotaRefusal{Service: svc, Limit: QuotaRate, RetryAfter: d}
			}
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
		most = -1
	}
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
