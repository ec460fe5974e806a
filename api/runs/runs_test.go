package runs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/errmap"
)

// TestUpdateIsAtomic has two stores (two replicas) admit calls of one run
// at once: every call is counted exactly once and the budget is never
// overdrawn.
func TestUpdateIsAtomic(t *testing.T) {
	addr := redistest.Addr(t)
	stores := map[string][2]runs.Store{}
	mem := runs.NewMemory(nil, 0)
	stores["memory"] = [2]runs.Store{mem, mem}
	var pair [2]runs.Store
	for i := range pair {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rc.Close() })
		pair[i] = runs.NewRedis(rc, "atomic:", nil)
	}
	stores["redis"] = pair
	for name, ss := range stores {
		t.Run(name, func(t *testing.T) {
			const perReplica, budget = 40, 50
			var wg sync.WaitGroup
			refused := make([]int, 2)
			for i, st := range ss {
				g := runs.NewGuard(st, runs.Limits{Budget: budget}, nil, nil)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; n < perReplica; n++ {
						c := runs.Call{Operation: "get_invoice", InvoiceID: "5105600101", Digest: name + string(rune('a'+i)) + time.Now().String()}
						_, refusal, err := g.Admit(context.Background(), "r1", c)
						if err != nil {
							t.Error(err)
							return
						}
						if refusal != nil {
							refused[i]++
						}
					}
				}()
			}
			wg.Wait()
			st, err := ss[0].Get(context.Background(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Calls) != 2*perReplica || st.Used["5105600101"] != budget || refused[0]+refused[1] != 2*perReplica-budget {
				t.Errorf("calls %d used %d refused %d, want %d, %d, %d", len(st.Calls), st.Used["5105600101"],
					refused[0]+refused[1], 2*perReplica, budget, 2*perReplica-budget)
			}
		})
	}
}

func TestFinishRoutesTheSecondNotFound(t *testing.T) {
	g := runs.NewGuard(runs.NewMemory(nil, 0), runs.Limits{}, nil, nil)
	ctx := context.Background()
	c := runs.Call{Operation: "get_purchase_order", Digest: "a"}
	seq, _, _ := g.Admit(ctx, "r", c)
	e1 := notFound()
	_ = g.Finish(ctx, "r", seq, c, "", e1)
	if e1.NextAction != "fix_input_and_retry" {
		t.Errorf("first not-found next_action %s", e1.NextAction)
	}
	c.Digest = "b"
	seq, _, _ = g.Admit(ctx, "r", c)
	e2 := notFound()
	_ = g.Finish(ctx, "r", seq, c, "", e2)
	if e2.NextAction != "route_to_person" || e2.Details["queue"] != "ap_queue" {
		t.Errorf("second not-found: %s %v", e2.NextAction, e2.Details)
	}
	st, _ := g.Get(ctx, "r")
	if st.Calls[1].Error == nil || st.Calls[1].Error.NextAction != "route_to_person" {
		t.Errorf("history keeps %+v, want the routed error", st.Calls[1].Error)
	}
}

func notFound() *errmap.Error {
	return errmap.New(errmap.PONotFound, "Purchase order 4500019822 was not found.", map[string]any{"po_id": "4500019822"})
}

// TestStoresHandOutCopies holds both stores to copy semantics: an update
// that fails leaves the run as it was, and changing a state read from the
// store changes nothing stored.
func TestStoresHandOutCopies(t *testing.T) {
	rc := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { rc.Close() })
	for name, store := range map[string]runs.Store{"memory": runs.NewMemory(nil, 0), "redis": runs.NewRedis(rc, "copies:", nil)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := errmap.New(errmap.InvoiceNotFound, "not found", map[string]any{"invoice_id": "5105600999"})
			if err := store.Update(ctx, "r1", time.Hour, func(st *runs.State) error {
				b := e.Body()
				st.Calls = append(st.Calls, runs.Record{Seq: 1, Operation: "get_invoice", Digest: "d1", Code: string(e.Code), Error: &b})
				st.Used["5105600999"] = 1
				st.NotFound["get_invoice"] = 1
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			failed := errors.New("refused")
			err := store.Update(ctx, "r1", time.Hour, func(st *runs.State) error {
				st.Calls[0].Code = "changed"
				st.Calls = append(st.Calls, runs.Record{Seq: 2})
				st.Used["5105600999"] = 99
				st.NotFound["get_invoice"] = 2
				st.GRMissing["4500018822/10"] = true
				st.WaitUntil["d1"] = time.Now()
				return failed
			})
			if !errors.Is(err, failed) {
				t.Fatalf("update: %v, want fn's error", err)
			}
			read, err := store.Get(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			read.Calls[0].Code = "edited by a reader"
			read.Used["5105600999"] = 42
			read.GRMissing["x/1"] = true
			got, err := store.Get(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Calls) != 1 || got.Calls[0].Code != string(errmap.InvoiceNotFound) || got.Used["5105600999"] != 1 ||
				got.NotFound["get_invoice"] != 1 || len(got.GRMissing) != 0 || len(got.WaitUntil) != 0 {
				t.Errorf("stored run changed: %+v", got)
			}
			if got.Calls[0].Error == nil || got.Calls[0].Error.Details["invoice_id"] != "5105600999" {
				t.Errorf("recorded error %+v, want the not-found body", got.Calls[0].Error)
			}
		})
	}
}

// blipProxy forwards TCP to a Redis and can refuse every connection for a
// while, as a Redis restart or failover does.
type blipProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newBlipProxy(t *testing.T, target string) *blipProxy {
	p := &blipProxy{t: t, target: target}
	p.listen("127.0.0.1:0")
	t.Cleanup(func() { p.down() })
	return p
}

func (p *blipProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// down closes the listener and every connection: dials are refused.
func (p *blipProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestRedisBlipIsAbsorbed takes Redis away for a second while calls of a
// run go on: they wait for it and succeed within their deadline, and each
// call is counted once.
func TestRedisBlipIsAbsorbed(t *testing.T) {
	proxy := newBlipProxy(t, redistest.Addr(t))
	rc := redis.NewClient(&redis.Options{Addr: proxy.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rc.Close() })
	g := runs.NewGuard(runs.NewRedis(rc, "blip:", nil), runs.Limits{Budget: 20, TTL: time.Hour}, time.Now, nil)
	ctx := context.Background()
	call := func(i int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c := runs.Call{Operation: "get_invoice", InvoiceID: "5105600101", Digest: fmt.Sprint(i)}
		seq, refusal, err := g.Admit(ctx, "run-blip", c)
		if err != nil || refusal != nil {
			return fmt.Errorf("admit %d: %v: %w", i, refusal, err)
		}
		return g.Finish(ctx, "run-blip", seq, c, "OK", nil)
	}
	if err := call(0); err != nil {
		t.Fatal(err)
	}
	addr := proxy.addr
	proxy.down()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- call(1) }()
	time.Sleep(time.Second)
	proxy.listen(addr)
	if err := <-done; err != nil {
		t.Fatalf("a call during a 1 s blip: %v", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the call returned after %v, before Redis was back", waited)
	}
	st, err := g.Get(ctx, "run-blip")
	if err != nil || st == nil || len(st.Calls) != 2 {
		t.Fatalf("run after the blip: %+v, %v; want two calls", st, err)
	}

	// A Redis gone for longer than the blip fails the call, not forever.
	proxy.down()
	start = time.Now()
	err = call(2)
	if !errors.Is(err, runs.ErrStore) || time.Since(start) > 5*time.Second {
		t.Errorf("Redis gone: %v after %v; want ErrStore within the blip", err, time.Since(start))
	}
}
