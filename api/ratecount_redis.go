package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"
)

// redisCountTimeout bounds one exchange with Redis for a count; beyond it
// the call is refused as over its limit, as when Redis is away: closed,
// like the ERP's quota.
const redisCountTimeout = time.Second

// redisCounter is an httprate.LimitCounter in Redis, so that every replica
// counts a client's calls (or a source's failed authentications) in the
// same windows: one key per client and window, which expires once no
// longer the current or the previous window. A key holds a SHA-256 of the
// client's name or address, never the name itself.
type redisCounter struct {
	rc     redis.UniversalClient
	prefix string
	window time.Duration
}

var _ httprate.LimitCounter = (*redisCounter)(nil)

func newRedisCounter(rc redis.UniversalClient, prefix string) *redisCounter {
	return &redisCounter{rc: rc, prefix: prefix}
}

// Config implements httprate.LimitCounter.
func (c *redisCounter) Config(_ int, window time.Duration) { c.window = window }

// Increment implements httprate.LimitCounter.
func (c *redisCounter) Increment(key string, currentWindow time.Time) error {
	return c.IncrementBy(key, currentWindow, 1)
}

// IncrementBy implements httprate.LimitCounter.
func (c *redisCounter) IncrementBy(key string, currentWindow time.Time, amount int) error {
	ctx, cancel := context.WithTimeout(context.Background(), redisCountTimeout)
	defer cancel()
	k := c.key(key, currentWindow)
	_, err := c.rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.IncrBy(ctx, k, int64(amount))
		p.PExpire(ctx, k, 2*c.window+time.Second)
		return nil
	})
	return err
}

// Get implements httprate.LimitCounter.
func (c *redisCounter) Get(key string, currentWindow, previousWindow time.Time) (int, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), redisCountTimeout)
	defer cancel()
	vals, err := c.rc.MGet(ctx, c.key(key, currentWindow), c.key(key, previousWindow)).Result()
	if err != nil {
		return 0, 0, err
	}
	var n [2]int
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
		case string:
			if n[i], err = strconv.Atoi(v); err != nil {
				return 0, 0, errors.New("rate count in Redis is not a number")
			}
		default:
			return 0, 0, errors.New("rate count in Redis is not a number")
		}
	}
	return n[0], n[1], nil
}

// key is the Redis key of key's count in the window starting at w.
func (c *redisCounter) key(key string, w time.Time) string {
	sum := sha256.Sum256([]byte(key))
	return c.prefix + hex.EncodeToString(sum[:16]) + ":" + strconv.FormatInt(w.UnixMilli(), 10)
}
