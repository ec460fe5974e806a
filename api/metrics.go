package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
)

// OutcomeOK is the outcome label of a success that carries no named code.
const OutcomeOK = "OK"

// Metrics holds the gateway's Prometheus collectors in its own registry.
// It also observes ERP attempts for the retry layer.
type Metrics struct {
	registry *prometheus.Registry
	outcomes *prometheus.CounterVec
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	attempts *prometheus.CounterVec
	attemptD *prometheus.HistogramVec
}

// NewMetrics builds the registry with every collector, and registers every
// operation's named outcomes at zero so dashboards see them before they
// first happen.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "outcomes_total",
			Help: "Outcomes of operations by operation and code (OK for a success without a named code).",
		}, []string{"operation", "code"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "http_requests_total",
			Help: "HTTP requests by operation and status code.",
		}, []string{"operation", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "erpgate", Name: "request_duration_seconds",
			Help:    "Time to answer a request, by operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "erp_attempts_total",
			Help: "Attempts to call the ERP, by service and result (ok, business, transient, timeout, error).",
		}, []string{"service", "result"}),
		attemptD: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "erpgate", Name: "erp_attempt_duration_seconds",
			Help:    "Duration of one attempt to call the ERP, by service.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"service"}),
	}
	m.registry.MustRegister(m.outcomes, m.requests, m.latency, m.attempts, m.attemptD,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, op := range operations {
		m.outcomes.WithLabelValues(op.name, OutcomeOK)
		for _, e := range errmap.Catalogue() {
			m.outcomes.WithLabelValues(op.name, string(e.Code))
		}
	}
	return m
}

// Registry returns the registry the metrics live in.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Attempt counts one ERP attempt; it implements retry.Observer.
func (m *Metrics) Attempt(service erp.Service, result string, d time.Duration) {
	m.attempts.WithLabelValues(string(service), result).Inc()
	m.attemptD.WithLabelValues(string(service)).Observe(d.Seconds())
}

func (m *Metrics) observe(operation, code string, status int, d time.Duration) {
	m.outcomes.WithLabelValues(operation, code).Inc()
	m.requests.WithLabelValues(operation, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(operation).Observe(d.Seconds())
}
