package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/retry"
	"github.com/erpgate/erpgate/retry/quotatest"
)

// countingERP is an ERP that notes when each request arrives and how many
// run at once.
type countingERP struct {
	delay  time.Duration
	status int

	mu          sync.Mutex
	arrivals    []time.Time
	inFlight    int
	maxInFlight int
}

func (e *countingERP) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	e.arrivals = append(e.arrivals, time.Now())
	e.inFlight++
	e.maxInFlight = max(e.maxInFlight, e.inFlight)
	e.mu.Unlock()
	time.Sleep(e.delay)
	e.mu.Lock()
	e.inFlight--
	e.mu.Unlock()
	if e.status != 0 {
		w.WriteHeader(e.status)
		return
	}
	_, _ = w.Write([]byte(`{}`))
}

// busiest returns the most requests that arrived in one second: the most
// in any window [t, t+1s) starting at an arrival (the busiest window of
// all starts at one), the most in a whole second counted from the first
// arrival, the total, and the time from the first arrival to the last.
func (e *countingERP) busiest() (sliding, aligned, total int, span time.Duration) {
	e.mu.Lock()
	at := slices.Clone(e.arrivals)
	e.mu.Unlock()
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	sliding = quotatest.Busiest(at, time.Second)
	per := map[int64]int{}
	for _, t := range at {
		k := int64(t.Sub(at[0]) / time.Second)
		per[k]++
		aligned = max(aligned, per[k])
	}
	if len(at) > 0 {
		span = at[len(at)-1].Sub(at[0])
	}
	return sliding, aligned, len(at), span
}

// callers runs n callers against srv through the runners, in turn, each
// one call after the other until d has passed; a caller refused by the
// quota waits as long as the refusal says, as an agent waits
// retry_after_s, and at least 10 ms. It returns the calls answered and the refusals by
// limit, and fails the test on any other outcome or a refusal without a
// wait.
func callers(t *testing.T, runners []*retry.Runner, srv string, n int, d time.Duration) (ok int64, refused map[string]int64) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	defer client.CloseIdleConnections()
	var (
		okN  atomic.Int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	refused = map[string]int64{}
	end := time.Now().Add(d)
	for i := range n {
		r := runners[i%len(runners)]
		wg.Go(func() {
			for time.Now().Before(end) {
				err := r.Do(context.Background(), retry.Call{Service: "purchase_order", Operation: "read purchase order"},
					func(ctx context.Context) error {
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv, nil)
						resp, err := client.Do(req)
						if err != nil {
							return err
						}
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							return fmt.Errorf("status %d", resp.StatusCode)
						}
						return nil
					})
				if err == nil {
					okN.Add(1)
					continue
				}
				var re *retry.Error
				pause := 10 * time.Millisecond
				mu.Lock()
				if errors.As(err, &re) && errors.Is(err, retry.ErrQuota) && re.RetryAfter > 0 && re.Attempts == 0 {
					refused[re.QuotaLimit]++
					pause = max(pause, re.RetryAfter)
				} else if len(errs) < 5 {
					errs = append(errs, fmt.Errorf("%w (%+v)", err, re))
				}
				mu.Unlock()
				time.Sleep(pause)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Errorf("a call failed otherwise than refused by the quota with a wait: %v", err)
	}
	return okN.Load(), refused
}

// checkRate fails the test when the ERP saw more than rate requests in
// any second, wherever it starts, or when the quota let through less than
// 90 % of its ceiling over the run (the guard costs 5 %).
func checkRate(t *testing.T, erp *countingERP, rate int) {
	t.Helper()
	sliding, aligned, total, span := erp.busiest()
	t.Logf("ceiling %d/s: the ERP saw %d requests in %v (%.1f/s), at most %d in any 1 s window, at most %d in a whole second from the first",
		rate, total, span.Round(time.Millisecond), float64(total-1)/span.Seconds(), sliding, aligned)
	if sliding > rate {
		t.Errorf("the ERP saw %d requests in one second, ceiling %d", sliding, rate)
	}
	if aligned > rate {
		t.Errorf("the ERP saw %d requests in a whole second, ceiling %d", aligned, rate)
	}
	if least := int(float64(rate) * span.Seconds() * 0.9); total < least {
		t.Errorf("the ERP saw %d requests in %v: the quota let through fewer than %d, 90 %% of its ceiling", total, span, least)
	}
}

// TestQuotaHoldsTheRateUnderLoad: 200 callers against a ceiling of 20
// calls per second for 3 s: the ERP sees at most 20 in any second, and
// the callers refused get ErrQuota with a wait.
func TestQuotaHoldsTheRateUnderLoad(t *testing.T) {
	const rate, n, d = 20, 200, 3 * time.Second
	erp := &countingERP{}
	srv := httptest.NewServer(erp)
	defer srv.Close()
	r := retry.New(retry.Policy{Quota: retry.NewLocalQuota(retry.QuotaSettings{Rate: rate})}, nil)
	ok, refused := callers(t, []*retry.Runner{r}, srv.URL, n, d)
	t.Logf("answered %d, refused %v", ok, refused)
	checkRate(t, erp, rate)
	if refused[retry.QuotaRate] == 0 {
		t.Error("no caller was refused for the rate")
	}
}

// TestQuotaHoldsInFlight: 200 callers against a ceiling of 5 calls in
// flight, each taking 20 ms at the ERP: never more than 5 run there at
// once, and the callers refused get ErrQuota with a wait.
func TestQuotaHoldsInFlight(t *testing.T) {
	const limit, n = 5, 200
	erp := &countingERP{delay: 20 * time.Millisecond}
	srv := httptest.NewServer(erp)
	defer srv.Close()
	r := retry.New(retry.Policy{Quota: retry.NewLocalQuota(retry.QuotaSettings{InFlight: limit})}, nil)
	ok, refused := callers(t, []*retry.Runner{r}, srv.URL, n, 1500*time.Millisecond)
	t.Logf("answered %d, refused %v, most in flight at the ERP %d", ok, refused, erp.maxInFlight)
	if erp.maxInFlight > limit {
		t.Errorf("%d requests ran at once at the ERP, ceiling %d", erp.maxInFlight, limit)
	}
	if erp.maxInFlight < limit {
		t.Errorf("at most %d requests ran at once: the ceiling of %d was never used", erp.maxInFlight, limit)
	}
	if refused[retry.QuotaInFlight] == 0 {
		t.Error("no caller was refused for the calls in flight")
	}
}

// TestQuotaCountsRetries: each retry of a failing call takes a slot too,
// so a call's attempts are spaced by the ceiling.
func TestQuotaCountsRetries(t *testing.T) {
	erp := &countingERP{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(erp)
	defer srv.Close()
	r := retry.New(retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond,
		Quota: retry.NewLocalQuota(retry.QuotaSettings{Rate: 10}), QuotaWait: time.Second}, nil)
	transient := func(error, bool) retry.Class { return retry.Transient }
	err := r.Do(context.Background(), retry.Call{Service: "supplier_invoice", Classify: transient}, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return errors.New("503")
	})
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 3 {
		t.Fatalf("err %v, want the third attempt's failure", err)
	}
	at := erp.arrivals
	if len(at) != 3 {
		t.Fatalf("the ERP saw %d requests, want 3", len(at))
	}
	for i := 1; i < len(at); i++ {
		// 100 ms apart at the gateway; a little less may be seen at the ERP.
		if gap := at[i].Sub(at[i-1]); gap < 90*time.Millisecond {
			t.Errorf("attempt %d came %v after the one before, want about 100ms (10 a second)", i+1, gap)
		}
	}
}

// TestQuotaSharedThroughRedis: two gateways' runners, each with 100
// callers, share one Redis and together stay under the ceiling of 20
// calls per second in any second, and, against an ERP that takes 50 ms a request, under
// the ceiling of 4 calls in flight.
func TestQuotaSharedThroughRedis(t *testing.T) {
	addr := redistest.Addr(t)
	twoGateways := func(t *testing.T, s retry.QuotaSettings) []*retry.Runner {
		var runners []*retry.Runner
		for range 2 {
			c := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { c.Close() })
			runners = append(runners, retry.New(retry.Policy{Quota: retry.NewRedisQuota(c, "erpgate:", s)}, nil))
		}
		return runners
	}
	t.Run("rate", func(t *testing.T) {
		const rate = 20
		erp := &countingERP{}
		srv := httptest.NewServer(erp)
		defer srv.Close()
		ok, refused := callers(t, twoGateways(t, retry.QuotaSettings{Rate: rate}), srv.URL, 200, 3*time.Second)
		t.Logf("answered %d, refused %v", ok, refused)
		checkRate(t, erp, rate)
		if refused[retry.QuotaRate] == 0 {
			t.Error("no caller was refused for the rate")
		}
	})
	t.Run("in flight", func(t *testing.T) {
		const limit = 4
		erp := &countingERP{delay: 50 * time.Millisecond}
		srv := httptest.NewServer(erp)
		defer srv.Close()
		ok, refused := callers(t, twoGateways(t, retry.QuotaSettings{InFlight: limit}), srv.URL, 200, 1500*time.Millisecond)
		t.Logf("answered %d, refused %v, most in flight at the ERP %d", ok, refused, erp.maxInFlight)
		if erp.maxInFlight > limit {
			t.Errorf("%d requests ran at once at the ERP, ceiling %d", erp.maxInFlight, limit)
		}
		if erp.maxInFlight < limit {
			t.Errorf("at most %d requests ran at once: the ceiling of %d was never used", erp.maxInFlight, limit)
		}
		if refused[retry.QuotaInFlight] == 0 {
			t.Error("no caller was refused for the calls in flight")
		}
	})
}

// TestQuotaRefusesWithoutRedis: a shared quota whose Redis cannot be
// reached lets no attempt through.
func TestQuotaRefusesWithoutRedis(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	r := retry.New(retry.Policy{Quota: retry.NewRedisQuota(c, "erpgate:", retry.QuotaSettings{Rate: 10})}, nil)
	called := false
	err := r.Do(context.Background(), retry.Call{Service: "business_partner"}, func(context.Context) error {
		called = true
		return nil
	})
	var re *retry.Error
	if !errors.As(err, &re) || re.QuotaLimit != retry.QuotaUnavailable || re.RetryAfter <= 0 {
		t.Fatalf("err %v, want a refusal of the quota, unavailable, with a wait", err)
	}
	if called {
		t.Error("the attempt was made without the quota")
	}
}

// TestQuotaCountsALateWrite: a request written late (a new connection,
// a busy process) counts from when it was written, so the requests after
// it wait rather than crowd into its second. At 5 a second the starts are
// 210 ms apart; the first request reaches the ERP 300 ms after its start,
// and with spacing alone the sixth would arrive within a second of it.
func TestQuotaCountsALateWrite(t *testing.T) {
	const rate = 5
	for _, tc := range []struct {
		name  string
		quota func(t *testing.T) retry.Quota
	}{
		{"in process", func(*testing.T) retry.Quota { return retry.NewLocalQuota(retry.QuotaSettings{Rate: rate}) }},
		{"redis", func(t *testing.T) retry.Quota {
			c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
			t.Cleanup(func() { c.Close() })
			return retry.NewRedisQuota(c, "erpgate:", retry.QuotaSettings{Rate: rate})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			erp := &countingERP{}
			srv := httptest.NewServer(erp)
			defer srv.Close()
			r := retry.New(retry.Policy{Quota: tc.quota(t), QuotaWait: 2 * time.Second}, nil)
			var first atomic.Bool
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					err := r.Do(context.Background(), retry.Call{Service: "purchase_order"}, func(ctx context.Context) error {
						if first.CompareAndSwap(false, true) {
							time.Sleep(300 * time.Millisecond)
						}
						req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							return err
						}
						return resp.Body.Close()
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			sliding, _, total, span := erp.busiest()
			t.Logf("the ERP saw %d requests in %v, at most %d in any 1 s window", total, span.Round(time.Millisecond), sliding)
			if total != 8 {
				t.Errorf("the ERP saw %d requests, want 8", total)
			}
			if sliding > rate {
				t.Errorf("the ERP saw %d requests in one second, ceiling %d", sliding, rate)
			}
		})
	}
}

// TestQuotaPerSecond: the ceiling lets whole requests through.
func TestQuotaPerSecond(t *testing.T) {
	for rate, want := range map[float64]float64{0: 0, 0.5: 0.5, 1: 1, 2.5: 2, 20: 20} {
		if got := (retry.QuotaSettings{Rate: rate}).PerSecond(); got != want {
			t.Errorf("Rate %g: PerSecond %g, want %g", rate, got, want)
		}
	}
}
