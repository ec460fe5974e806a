package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/erpgate/erpgate/errmap"
)

// idempotencyStore keeps the first answer to each write's idempotency key,
// so that the same key with the same arguments replays it and the same key
// with other arguments is refused. A second call that arrives while the
// first is still running waits for it.
type idempotencyStore struct {
	mu      sync.Mutex
	entries map[string]*idempotencyEntry
	ttl     time.Duration
	now     func() time.Time
	swept   time.Time
}

type idempotencyEntry struct {
	digest  string
	done    chan struct{} // closed when the first call has finished
	resp    *response     // nil until done, and when the answer was not kept
	expires time.Time
}

func newIdempotencyStore(ttl time.Duration, now func() time.Time) *idempotencyStore {
	return &idempotencyStore{entries: map[string]*idempotencyEntry{}, ttl: ttl, now: now}
}

// idempotencyClaim is the right to answer a key first. Its methods are safe
// on a nil claim, which stands for a write without a key.
type idempotencyClaim struct {
	store *idempotencyStore
	key   string
	entry *idempotencyEntry
}

// claim returns either a claim on a new key, or the stored answer to replay.
func (s *idempotencyStore) claim(ctx context.Context, key, digest string) (*idempotencyClaim, *response, error) {
	for {
		s.mu.Lock()
		s.sweep()
		e, ok := s.entries[key]
		if !ok {
			e = &idempotencyEntry{digest: digest, done: make(chan struct{})}
			s.entries[key] = e
			s.mu.Unlock()
			return &idempotencyClaim{store: s, key: key, entry: e}, nil, nil
		}
		s.mu.Unlock()
		if e.digest != digest {
			return nil, nil, errmap.New(errmap.IdempotencyKeyReused,
				"This idempotency key was used for a call with other arguments. Use a new key for a new call.",
				map[string]any{})
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		if e.resp != nil {
			return nil, e.resp.clone(), nil
		}
		// The first call's answer was not kept (a 5xx); this call may try.
	}
}

// complete ends the claim, keeping resp for replay when keep is set.
func (c *idempotencyClaim) complete(resp *response, keep bool) {
	if c == nil {
		return
	}
	s := c.store
	s.mu.Lock()
	if keep {
		c.entry.resp = resp.clone()
		c.entry.expires = s.now().Add(s.ttl)
	} else {
		delete(s.entries, c.key)
	}
	s.mu.Unlock()
	close(c.entry.done)
}

// release gives the key up without an answer, for a call refused before it
// ran.
func (c *idempotencyClaim) release() { c.complete(nil, false) }

// sweep drops expired answers, at most once a minute; s.mu is held.
func (s *idempotencyStore) sweep() {
	now := s.now()
	if now.Sub(s.swept) < time.Minute {
		return
	}
	s.swept = now
	for k, e := range s.entries {
		if e.resp != nil && now.After(e.expires) {
			delete(s.entries, k)
		}
	}
}

func (resp *response) clone() *response {
	if resp == nil {
		return nil
	}
	c := *resp
	c.header = resp.header.Clone()
	if c.header == nil {
		c.header = http.Header{}
	}
	c.body = append([]byte(nil), resp.body...)
	return &c
}
