// Package redistest gives tests a real Redis server: the one named by
// ERPGATE_TEST_REDIS_ADDR, or a redis-server started on a free loopback port
// for the test and stopped after it.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr returns the address of a Redis server the test may use, flushed
// empty. Without ERPGATE_TEST_REDIS_ADDR and without redis-server on the
// PATH the test fails, saying how to get one: a test that cannot run must
// not pass as if it had.
func Addr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("ERPGATE_TEST_REDIS_ADDR")
	if addr == "" {
		addr = start(t)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("redis at %s: %v", addr, err)
	}
	return addr
}

func start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not on the PATH: install it (Debian: apt-get install redis-server; make test installs it), " +
			"or name a running Redis in ERPGATE_TEST_REDIS_ADDR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for i := 0; i < 100; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not answer", addr)
	return ""
}
