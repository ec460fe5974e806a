package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/go-redis/v9"
)

// Redis is a Store shared by every replica that uses the same Redis. Each
// run is one JSON value; Update is an optimistic transaction (WATCH, read,
// MULTI/SET/EXEC), repeated when another replica changed the run meanwhile.
type Redis struct {
	client redis.UniversalClient
	prefix string
	now    func() time.Time
	// blip is how long a Redis that cannot be reached is waited for
	// before a call fails: a restart or a failover of a second or two is
	// absorbed within the call.
	blip time.Duration
}

// DefaultBlip is how long Redis may be unreachable before a call that
// needs its run state fails.
const DefaultBlip = 2500 * time.Millisecond

// NewRedis returns a store keeping runs under prefix+"run:"+id; now may be
// nil.
func NewRedis(client redis.UniversalClient, prefix string, now func() time.Time) *Redis {
	if now == nil {
		now = time.Now
	}
	return &Redis{client: client, prefix: prefix, now: now, blip: DefaultBlip}
}

// whileUnreachable runs op again, with backoff, while it fails because
// Redis could not be reached at all (a refused or failed dial: nothing was
// sent, so nothing can have been applied), for up to r.blip and never past
// ctx. Any other error is op's answer.
func (r *Redis) whileUnreachable(ctx context.Context, op func() error) error {
	b := backoff.WithContext(backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond),
		backoff.WithMaxInterval(500*time.Millisecond), backoff.WithMaxElapsedTime(r.blip)), ctx)
	return backoff.Retry(func() error {
		err := op()
		if err != nil && !unreachable(err) {
			return backoff.Permanent(err)
		}
		return err
	}, b)
}

// unreachable says err is a failure to reach Redis at all.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// maxTxRetries bounds the optimistic retries of one Update. Calls of one
// run rarely overlap; when they do, a short random pause lets the other
// replica's transaction through.
const maxTxRetries = 50

func (r *Redis) key(runID string) string { return r.prefix + "run:" + runID }

// Update implements Store.
func (r *Redis) Update(ctx context.Context, runID string, ttl time.Duration, fn func(*State) error) error {
	key := r.key(runID)
	var fnErr error
	tx := func(tx *redis.Tx) error {
		st := newState(runID, r.now())
		raw, err := tx.Get(ctx, key).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(raw, st); err != nil {
				return fmt.Errorf("run %s: stored state does not decode: %w", runID, err)
			}
			st.fill()
		}
		if fnErr = fn(st); fnErr != nil {
			return fnErr
		}
		out, err := json.Marshal(st)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, out, ttl)
			return nil
		})
		return err
	}
	for i := 0; i < maxTxRetries; i++ {
		err := r.whileUnreachable(ctx, func() error { return r.client.Watch(ctx, tx, key) })
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		select {
		case <-time.After(time.Duration(rand.Int64N(int64(time.Millisecond) * int64(i+1)))):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("run %s: too much contention", runID)
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, runID string) (*State, error) {
	var raw []byte
	err := r.whileUnreachable(ctx, func() error {
		var err error
		raw, err = r.client.Get(ctx, r.key(runID)).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("run %s: stored state does not decode: %w", runID, err)
	}
	st.fill()
	return &st, nil
}
