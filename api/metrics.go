package api

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

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
	retries  *prometheus.CounterVec
	budget   *prometheus.CounterVec
	fastFail *prometheus.CounterVec
	quota    *prometheus.CounterVec
	reconcil *prometheus.CounterVec
	brkState *prometheus.GaugeVec
	brkTrans *prometheus.CounterVec
	replays  *prometheus.CounterVec
	keyReuse *prometheus.CounterVec
	limits   *prometheus.CounterVec
	handover *prometheus.CounterVec
	holds    *prometheus.CounterVec
	authFail *prometheus.CounterVec
	runReads *prometheus.CounterVec
	runHit   prometheus.Counter
	runMiss  prometheus.Counter

	// served and tried keep the collectors of each label combination the
	// hot path has seen, so that a request finds them in one lookup
	// instead of a label lookup per collector.
	served sync.Map // servedKey -> *servedMetrics
	tried  sync.Map // triedKey -> *triedMetrics
}

type servedKey struct {
	operation, code string
	status          int
}

type servedMetrics struct {
	outcome, request prometheus.Counter
	latency          prometheus.Observer
	exemplars        exemplarGate
}

type triedKey struct {
	service erp.Service
	result  string
}

type triedMetrics struct {
	attempt   prometheus.Counter
	duration  prometheus.Observer
	exemplars exemplarGate
}

// exemplarEvery is the least time between two exemplars of one series:
// Prometheus keeps one per bucket, and a trace a few per second is all
// a dashboard links to, while each costs a call labels and a timestamp.
const exemplarEvery = 100 * time.Millisecond

// exemplarGate lets an exemplar through at most every exemplarEvery.
type exemplarGate struct{ next atomic.Int64 }

func (g *exemplarGate) open() bool {
	now := time.Now().UnixNano()
	next := g.next.Load()
	return now >= next && g.next.CompareAndSwap(next, now+int64(exemplarEvery))
}

// authFailReasons are the reasons of erpgate_auth_failures_total: no
// credential, an API key no client holds, an access token refused, and an
// access token that could not be checked (the issuer's keys unreachable).
var authFailReasons = []string{"missing", "unknown_key", "bad_token", "unverifiable"}

// limitKinds are the kinds of erpgate_limits_triggered_total.
var limitKinds = []string{"identical_repeat", "corrected_retry", "gr_missing", "budget", "erp_wait", "no_run_id"}

// breakerStates are the values of erpgate_erp_breaker_state.
var breakerStates = map[string]float64{"closed": 0, "half-open": 1, "open": 2}

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
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "erp_retries_total",
			Help: "Retries of ERP calls by service and reason (transient, unknown_outcome, retry_after).",
		}, []string{"service", "reason"}),
		budget: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "erp_retry_budget_exhausted_total",
			Help: "Retries not made because the service's retry budget was spent.",
		}, []string{"service"}),
		fastFail: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "erp_fast_fails_total",
			Help: "Calls refused at once because the service's circuit breaker was open.",
		}, []string{"service"}),
		quota: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "erp_quota_refused_total",
			Help: "ERP attempts refused, RATE_LIMITED, because the service's quota (calls per second or in flight, shared by every client) was reached, by limit: calls_per_second, in_flight, unavailable.",
		}, []string{"service", "limit"}),
		reconcil: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "erp_reconciliations_total",
			Help: "Writes whose answer was lost, settled by reading the ERP, by whether they had been applied.",
		}, []string{"service", "applied"}),
		brkState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "erpgate", Name: "erp_breaker_state",
			Help: "State of each ERP service's circuit breaker: 0 closed, 1 half-open, 2 open.",
		}, []string{"service"}),
		brkTrans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "erp_breaker_transitions_total",
			Help: "Circuit breaker state changes by service, from and to.",
		}, []string{"service", "from", "to"}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "idempotent_replays_total",
			Help: "Writes answered from the first response to their idempotency key.",
		}, []string{"operation"}),
		keyReuse: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "idempotency_key_conflicts_total",
			Help: "Writes refused because their idempotency key was used with other arguments.",
		}, []string{"operation"}),
		limits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "limits_triggered_total",
			Help: "Agent calls refused or routed by a run limit, by kind.",
		}, []string{"kind"}),
		handover: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "handovers_total",
			Help: "Invoices handed over to a person, by queue.",
		}, []string{"queue"}),
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "holds_total",
			Help: "Holds by event: placed by an agent, rechecked with the goods still missing, released.",
		}, []string{"event"}),
		authFail: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "auth_failures_total",
			Help: "Requests refused for their credentials, by reason (missing, unknown_key, bad_token, unverifiable).",
		}, []string{"reason"}),
		runReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "erpgate", Name: "run_invoice_reads_total",
			Help: "Invoice reads a match or an approval request may take from its run, by result: hit (the run's read within -run-read-ttl) or miss (read from the ERP).",
		}, []string{"result"}),
	}
	m.registry.MustRegister(m.outcomes, m.requests, m.latency, m.attempts, m.attemptD,
		m.retries, m.budget, m.fastFail, m.quota, m.reconcil, m.brkState, m.brkTrans, m.replays, m.keyReuse,
		m.limits, m.handover, m.holds, m.authFail, m.runReads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, k := range limitKinds {
		m.limits.WithLabelValues(k)
	}
	for _, q := range errmap.Queues {
		m.handover.WithLabelValues(q)
	}
	for _, r := range authFailReasons {
		m.authFail.WithLabelValues(r)
	}
	m.runHit, m.runMiss = m.runReads.WithLabelValues("hit"), m.runReads.WithLabelValues("miss")
	for _, e := range []string{"placed", "rechecked", "released"} {
		m.holds.WithLabelValues(e)
	}
	for _, svc := range erp.Services {
		m.brkState.WithLabelValues(string(svc))
		m.budget.WithLabelValues(string(svc))
		m.fastFail.WithLabelValues(string(svc))
		for _, limit := range []string{"calls_per_second", "in_flight"} {
			m.quota.WithLabelValues(string(svc), limit)
		}
	}
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

// Handler serves the registry in the Prometheus text format, or in
// OpenMetrics to a scraper that asks for it, which also gets the
// latencies' exemplars: the trace of a sampled call.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry, EnableOpenMetrics: true})
}

// Attempt counts one ERP attempt; it implements retry.Observer.
func (m *Metrics) Attempt(service erp.Service, result string, d time.Duration) {
	m.tryMetrics(service, result).observe(d, trace.TraceID{})
}

// AttemptTraced counts one ERP attempt of a sampled trace, which its
// duration names as its exemplar; it implements retry.TraceObserver.
func (m *Metrics) AttemptTraced(service erp.Service, result string, d time.Duration, id trace.TraceID) {
	m.tryMetrics(service, result).observe(d, id)
}

func (t *triedMetrics) observe(d time.Duration, id trace.TraceID) {
	t.attempt.Inc()
	observe(t.duration, &t.exemplars, d, id)
}

// observe observes d in o, with the trace id as its exemplar when it is
// not zero and g lets one through.
func observe(o prometheus.Observer, g *exemplarGate, d time.Duration, id trace.TraceID) {
	if id.IsValid() && g.open() {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(d.Seconds(), prometheus.Labels{"trace_id": id.String()})
			return
		}
	}
	o.Observe(d.Seconds())
}

func (m *Metrics) tryMetrics(service erp.Service, result string) *triedMetrics {
	key := triedKey{service, result}
	v, ok := m.tried.Load(key)
	if !ok {
		v, _ = m.tried.LoadOrStore(key, &triedMetrics{
			attempt:  m.attempts.WithLabelValues(string(service), result),
			duration: m.attemptD.WithLabelValues(string(service)),
		})
	}
	return v.(*triedMetrics)
}

// Retry counts a retry of an ERP call; it implements retry.Observer.
func (m *Metrics) Retry(service erp.Service, reason string) {
	m.retries.WithLabelValues(string(service), reason).Inc()
}

// BudgetExhausted counts a retry the budget refused; it implements
// retry.Observer.
func (m *Metrics) BudgetExhausted(service erp.Service) {
	m.budget.WithLabelValues(string(service)).Inc()
}

// FastFail counts a call an open breaker refused; it implements
// retry.Observer.
func (m *Metrics) FastFail(service erp.Service) {
	m.fastFail.WithLabelValues(string(service)).Inc()
}

// QuotaRefused counts an ERP attempt the service's quota refused; it
// implements retry.QuotaObserver.
func (m *Metrics) QuotaRefused(service erp.Service, limit string) {
	m.quota.WithLabelValues(string(service), limit).Inc()
}

// Reconciled counts a lost write answer settled by reading; it implements
// retry.Observer.
func (m *Metrics) Reconciled(service erp.Service, applied bool) {
	m.reconcil.WithLabelValues(string(service), strconv.FormatBool(applied)).Inc()
}

// BreakerState records a breaker's new state; it implements
// retry.Observer and runs under the breaker's lock, so it only sets
// collectors.
func (m *Metrics) BreakerState(service erp.Service, from, to string) {
	m.brkState.WithLabelValues(string(service)).Set(breakerStates[to])
	m.brkTrans.WithLabelValues(string(service), from, to).Inc()
}

// LimitTriggered counts a run limit that refused or routed a call; it
// implements runs.Observer.
func (m *Metrics) LimitTriggered(kind string) { m.limits.WithLabelValues(kind).Inc() }

// Rechecked counts a scheduled re-check of a held invoice, and whether it
// released the hold.
func (m *Metrics) Rechecked(released bool) {
	if released {
		m.holds.WithLabelValues("released").Inc()
		return
	}
	m.holds.WithLabelValues("rechecked").Inc()
}

// RunRead counts an invoice read that a match or an approval request may
// take from its run (erp.RunReads), and whether the run's read answered it.
func (m *Metrics) RunRead(hit bool) {
	if hit {
		m.runHit.Inc()
		return
	}
	m.runMiss.Inc()
}

// authFailed counts a request refused for its credentials; reason is one
// of authFailReasons.
func (m *Metrics) authFailed(reason string) { m.authFail.WithLabelValues(reason).Inc() }

// observe counts an answer of operation and its latency, whose exemplar is
// the call's trace when id is not zero.
func (m *Metrics) observe(operation, code string, status int, d time.Duration, id trace.TraceID) {
	key := servedKey{operation, code, status}
	v, ok := m.served.Load(key)
	if !ok {
		v, _ = m.served.LoadOrStore(key, &servedMetrics{
			outcome: m.outcomes.WithLabelValues(operation, code),
			request: m.requests.WithLabelValues(operation, strconv.Itoa(status)),
			latency: m.latency.WithLabelValues(operation),
		})
	}
	sm := v.(*servedMetrics)
	sm.outcome.Inc()
	sm.request.Inc()
	observe(sm.latency, &sm.exemplars, d, id)
}
