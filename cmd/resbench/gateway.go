package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/erpgate/erpgate/api"
	erpgate "github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// gatewayPolicy is the retry policy the gateway runs with: the defaults,
// except that one attempt may take a second at most.
func gatewayPolicy() retry.Policy {
	return retry.Policy{AttemptTimeout: time.Second}
}

// gateway is the whole erpgate stack on loopback, built as erpgate builds
// it, with an HTTP client for the agent.
type gateway struct {
	srv   *loopback
	http  *http.Client
	watch *breakerWatch
	gw    *erpgate.Gateway
}

// startGateway builds a fresh stack, so fresh breakers and retry budget,
// over the ERP at erpURL. It reads no $metadata at start, so that every ERP
// call counted is one an agent's request caused. quota is its ceiling of
// ERP calls toward each service, as -erp-rate and -erp-in-flight set it.
func startGateway(erpURL string, concurrency int, quota retry.QuotaSettings) (client, error) {
	watch := &breakerWatch{Metrics: api.NewMetrics()}
	gw, err := erpgate.New(context.Background(), erpgate.Config{ERPURL: erpURL, SkipMetadata: true,
		Retry: gatewayPolicy(), Metrics: watch.Metrics, RetryObserver: watch, ERPQuota: quota})
	if err != nil {
		return nil, err
	}
	srv, err := serveLoopback(gw.Handler())
	if err != nil {
		gw.Close()
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	return &gateway{srv: srv, http: &http.Client{Transport: tr}, watch: watch, gw: gw}, nil
}

// get reads the purchase order through the gateway.
func (g *gateway) get(ctx context.Context) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.srv.url+"/purchase-orders/"+poID, nil)
	if err != nil {
		return answer{outcome: failure, code: "BAD_REQUEST"}
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return unanswered(ctx)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return unanswered(ctx)
	case resp.StatusCode == http.StatusOK:
		return answer{outcome: success}
	}
	return gatewayFailure(resp.StatusCode, body)
}

// problem is the part of the gateway's five-field error body that tells
// a fast-fail.
type problem struct {
	Code    string `json:"code"`
	Details struct {
		Breaker  string `json:"breaker"`
		Attempts int    `json:"attempts"`
	} `json:"details"`
}

// gatewayFailure classifies an error answer of the gateway.
func gatewayFailure(status int, body []byte) answer {
	var p problem
	if err := json.Unmarshal(body, &p); err != nil || p.Code == "" {
		return answer{outcome: failure, code: fmt.Sprintf("HTTP_%d", status)}
	}
	if p.Details.Breaker == "open" {
		return answer{outcome: fastFail, code: p.Code, attempts: p.Details.Attempts}
	}
	return answer{outcome: failure, code: p.Code, attempts: p.Details.Attempts}
}

// openings returns when the purchase order breaker opened.
func (g *gateway) openings() ([]time.Time, bool) {
	return g.watch.openings(), true
}

// close stops the gateway and drops the agent's connections.
func (g *gateway) close() {
	g.http.CloseIdleConnections()
	g.srv.shutdown(time.Second)
	g.gw.Close()
}

// breakerWatch is the gateway's metrics as the retry observer, noting
// besides when the purchase order breaker opens.
type breakerWatch struct {
	*api.Metrics
	mu     sync.Mutex
	opened []time.Time
}

var _ retry.Observer = (*breakerWatch)(nil)

// BreakerState records the change in the metrics and, when the purchase
// order breaker opens, the time. It runs under the breaker's lock.
func (w *breakerWatch) BreakerState(service erp.Service, from, to string) {
	w.Metrics.BreakerState(service, from, to)
	if service != erp.ServicePurchaseOrder || to != "open" {
		return
	}
	w.mu.Lock()
	w.opened = append(w.opened, time.Now())
	w.mu.Unlock()
}

func (w *breakerWatch) openings() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.opened)
}
