package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api/runs/redistest"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
	"github.com/erpgate/erpgate/retry/quotatest"
)

// TestERPQuotaAcrossReplicas starts two gateways as two replicas sharing
// one Redis, in front of one simulated ERP, with a ceiling of 20 calls per
// second toward each ERP service, and has 200 callers read a purchase
// order through them for 3 s: the ERP sees at most 20 purchase order
// requests in any second, and every caller refused gets RATE_LIMITED with
// reason erp_quota, the service and retry_after_s, counted in
// erpgate_erp_quota_refused_total.
func TestERPQuotaAcrossReplicas(t *testing.T) {
	const rate, callers, run = 20, 200, 3 * time.Second
	erpSim := sim.New(sim.Options{RecordCalls: true})
	erpSrv := httptest.NewServer(erpSim)
	defer erpSrv.Close()
	redisURL := "redis://" + redistest.Addr(t) + "/0"
	var urls []string
	var gws []*Gateway
	for range 2 {
		gw, err := New(context.Background(), Config{ERPURL: erpSrv.URL, RedisURL: redisURL, SkipMetadata: true,
			ERPQuota: retry.QuotaSettings{Rate: rate}})
		if err != nil {
			t.Fatal(err)
		}
		defer gw.Close()
		srv := httptest.NewServer(gw.Handler())
		defer srv.Close()
		urls, gws = append(urls, srv.URL), append(gws, gw)
	}
	erpSim.ResetCalls()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
	defer client.CloseIdleConnections()
	var (
		mu      sync.Mutex
		ok      int
		refused int
		wrong   []string
		wg      sync.WaitGroup
	)
	end := time.Now().Add(run)
	for i := range callers {
		wg.Go(func() {
			for time.Now().Before(end) {
				resp, err := client.Get(urls[i%2] + "/purchase-orders/4500018831")
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var e struct {
					Code      string         `json:"code"`
					Retryable bool           `json:"retryable"`
					Details   map[string]any `json:"details"`
				}
				_ = json.Unmarshal(body, &e)
				pause := 10 * time.Millisecond
				mu.Lock()
				switch {
				case resp.StatusCode == http.StatusOK:
					ok++
				case resp.StatusCode == http.StatusTooManyRequests && e.Code == "RATE_LIMITED" && e.Retryable &&
					e.Details["reason"] == "erp_quota" && e.Details["service"] == "purchase_order" &&
					retryAfter(e.Details) >= 1 && resp.Header.Get("Retry-After") == fmt.Sprint(retryAfter(e.Details)):
					refused++
					// An agent holds the invoice for retry_after_s; these
					// callers come back sooner, to keep the ERP's ceiling
					// under pressure.
					pause = 100 * time.Millisecond
				case len(wrong) < 5:
					wrong = append(wrong, resp.Status+" "+resp.Header.Get("Retry-After")+" "+string(body))
				}
				mu.Unlock()
				time.Sleep(pause)
			}
		})
	}
	wg.Wait()
	for _, w := range wrong {
		t.Errorf("neither answered nor refused for the ERP's quota: %s", w)
	}

	var at []time.Time
	for _, c := range erpSim.Calls() {
		if c.Service == erp.ServicePurchaseOrder {
			at = append(at, c.Start)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	// No window, wherever it starts, may hold more than the ceiling.
	busiest := quotatest.Busiest(at, time.Second)
	span := at[len(at)-1].Sub(at[0])
	t.Logf("two replicas, ceiling %d/s: %d answered, %d RATE_LIMITED; the ERP saw %d purchase order requests in %v, at most %d in any 1 s window",
		rate, ok, refused, len(at), span.Round(time.Millisecond), busiest)
	if busiest > rate {
		t.Errorf("the ERP saw %d requests in one second, ceiling %d", busiest, rate)
	}
	if ok < int(rate*run.Seconds()*0.7) {
		t.Errorf("%d calls answered in %v: the quota let through less than 70 %% of its ceiling", ok, run)
	}
	if refused == 0 {
		t.Error("no caller was refused")
	}
	var counted float64
	for _, gw := range gws {
		counted += refusedCount(t, gw, "purchase_order")
	}
	if int(counted) != refused {
		t.Errorf("erpgate_erp_quota_refused_total counts %v refusals over both replicas, the callers got %d", counted, refused)
	}
}

// refusedCount reads erpgate_erp_quota_refused_total{service} from the
// gateway's /metrics.
// retryAfter is a refusal's details.retry_after_s, 0 when it is not a
// whole number of seconds.
func retryAfter(details map[string]any) int {
	f, ok := details["retry_after_s"].(float64)
	if !ok || f != float64(int(f)) {
		return 0
	}
	return int(f)
}

func refusedCount(t *testing.T, gw *Gateway, service string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	gw.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var n float64
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, `erpgate_erp_quota_refused_total{limit="calls_per_second",service="`+service+`"}`) {
			var v float64
			if err := json.Unmarshal([]byte(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:])), &v); err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			n += v
		}
	}
	return n
}

// TestERPQuotaLogged: the gateway says at start which ceiling it keeps,
// and whether the replicas share it.
func TestERPQuotaLogged(t *testing.T) {
	var buf bytes.Buffer
	gw, err := New(context.Background(), Config{SkipMetadata: true, Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		ERPQuota: retry.QuotaSettings{Rate: 5, InFlight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	want := `msg="erp quota per service" calls_per_second=5 in_flight=2 shared_by_replicas=false`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log has no %s:\n%s", want, buf.String())
	}
}
