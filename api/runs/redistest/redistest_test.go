package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api/runs/redistest"
)

func TestAddrServesRedis(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	defer c.Close()
	if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(context.Background(), "k").Result(); got != "v" {
		t.Errorf("GET k = %q, want v", got)
	}
}
