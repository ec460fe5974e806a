package api

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api/runs/redistest"
)

// TestRedisCounterSharesOneLimit: two replicas' limiters on one Redis
// count a client's calls together, clients apart, and a Redis that does
// not answer refuses the call as over its limit; the keys hold no name.
func TestRedisCounterSharesOneLimit(t *testing.T) {
	rc := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rc.Close() })
	replica := func() *httprate.RateLimiter {
		return httprate.NewRateLimiter(5, time.Hour, httprate.WithLimitCounter(newRedisCounter(rc, "erpgate-test:rate:")))
	}
	a, b := replica(), replica()
	r := httptest.NewRequest("GET", "/", nil)
	for i := range 5 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if _, limited := onLimit(l, r, "client:ap-agent"); limited {
			t.Fatalf("call %d of 5 limited", i+1)
		}
	}
	for _, l := range []*httprate.RateLimiter{a, b} {
		if wait, limited := onLimit(l, r, "client:ap-agent"); !limited || wait < 1 {
			t.Errorf("the 6th call: limited %v, wait %d, want limited on either replica", limited, wait)
		}
	}
	if _, limited := onLimit(b, r, "client:other"); limited {
		t.Error("another client limited by ap-agent's calls")
	}
	keys, err := rc.Keys(t.Context(), "erpgate-test:rate:*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %v, %v: want one per client in this window", keys, err)
	}
	for _, k := range keys {
		if strings.Contains(k, "ap-agent") || strings.Contains(k, "other") {
			t.Errorf("key %q names the client", k)
		}
		if ttl := rc.PTTL(t.Context(), k).Val(); ttl <= 0 || ttl > 2*time.Hour+time.Second {
			t.Errorf("key %q expires in %v, want within two windows", k, ttl)
		}
	}

	away := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { away.Close() })
	l := httprate.NewRateLimiter(5, time.Hour, httprate.WithLimitCounter(newRedisCounter(away, "erpgate-test:rate:")))
	if _, limited := onLimit(l, r, "client:ap-agent"); !limited {
		t.Error("a call counted in an unreachable Redis was let through")
	}
}
