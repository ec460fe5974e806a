package api

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/errmap"
)

// opFunc is the body of one operation: it validates the request, calls the
// domain and returns the success body, or an error for errmap to name.
type opFunc func(r *http.Request, body []byte) (any, error)

// outcomer is a success body that carries a named outcome of its own, such
// as a match with TOLERANCE_EXCEEDED.
type outcomer interface{ outcome() string }

// pathIDs are the URL parameters copied into an error's details, so the
// agent has the ids of its next step without looking them up.
var pathIDs = map[string]*regexp.Regexp{
	"invoice_id": invoiceIDPattern, "po_id": poIDPattern, "item": itemPattern,
	"supplier_id": supplierIDPattern, "approval_id": approvalIDPattern,
}

// op wraps an operation in everything every tool shares: scope check, body
// limit, idempotent replay for writes, the run's loop limits, error naming,
// metrics and the outcome in the access log.
func (s *Server) op(o operation, fn opFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		t := traceFrom(r.Context())
		t.operation = o.name
		resp := s.serveOp(r, o, fn, t)
		resp.write(w)
		t.code = resp.code
		s.metrics.observe(o.name, resp.code, resp.status, time.Since(start))
	})
}

func (s *Server) serveOp(r *http.Request, o operation, fn opFunc, t *trace) *response {
	client, err := s.identify(r)
	if err != nil {
		return s.failure(r, err, t)
	}
	t.client = client.Name
	if err := authorize(client, o, s.scopeOf(o)); err != nil {
		return s.failure(r, err, t)
	}
	if err := s.rateLimit(r, client); err != nil {
		return s.failure(r, err, t)
	}
	body, err := readBody(r, s.maxBody)
	if err != nil {
		return s.failure(r, err, t)
	}
	args := parseArgs(r, body)
	// The digest is for the idempotency store and the run guard only; a
	// call that uses neither does not pay for hashing its arguments.
	var digest string

	var claim *idempotencyClaim
	if o.write {
		key, err := idempotencyKey(r, args)
		if err != nil {
			return s.failure(r, err, t)
		}
		// Every write's digest names its record when it has no key, so
		// that a retry of the same call never makes a second record.
		digest = args.digest(o.name, r)
		t.key, t.digest = key, digest
		if key != "" {
			c, replay, err := s.idem.claim(r.Context(), client.Name, key, o.name, digest)
			if err != nil {
				if errors.As(err, new(refusal.KeyReused)) {
					s.metrics.keyReuse.WithLabelValues(o.name).Inc()
				}
				return s.failure(r, err, t)
			}
			if replay != nil {
				s.metrics.replays.WithLabelValues(o.name).Inc()
				replay.header.Set("Idempotent-Replayed", "true")
				return replay
			}
			claim = c
		}
	}

	run, err := runIDOf(r, args)
	if err != nil {
		claim.release()
		return s.failure(r, err, t)
	}
	if run != "" && digest == "" {
		digest = args.digest(o.name, r)
	}
	t.run = run
	call := runs.Call{Operation: o.name, InvoiceID: args.invoiceID(r), Digest: digest, BudgetFree: o.budgetFree}
	if o.name == opGetGoodsReceipt.name {
		call.POItem = chi.URLParam(r, "po_id") + "/" + strings.TrimLeft(chi.URLParam(r, "item"), "0")
	}
	var seq int
	switch {
	case o.noRun:
	case run == "" && s.runs.Limits().Strict && !s.runs.Limits().Disabled:
		claim.release()
		s.metrics.LimitTriggered("no_run_id")
		return s.failure(r, errmap.Invalid("run_id", "is required: send the X-Run-Id header or a run_id argument"), t)
	case run != "":
		var refusal *errmap.Error
		seq, refusal, err = s.runs.Admit(r.Context(), run, call)
		if err == nil && refusal != nil {
			err = refusal
		}
		if err != nil {
			claim.release()
			return withRunID(s.failure(r, err, t), run)
		}
	}

	var resp *response
	v, err := fn(r, body)
	if err != nil {
		e := s.named(r, err, t)
		if ferr := s.runs.Finish(r.Context(), run, seq, call, "", e); ferr != nil {
			s.log.WarnContext(r.Context(), "run state not recorded", "run_id", run, "error", ferr)
		}
		resp = render(e)
	} else {
		resp = s.success(r, v, t)
		if ferr := s.runs.Finish(r.Context(), run, seq, call, resp.code, nil); ferr != nil {
			s.log.WarnContext(r.Context(), "run state not recorded", "run_id", run, "error", ferr)
		}
	}
	if o.write {
		s.audit(r, o, call.InvoiceID, digest, v, resp)
	}
	// A 5xx is not kept: the same key may try again. A record the call
	// created is found again by its dedupe key, and a posting is settled
	// by reading the invoice, so the second try does not write twice.
	if err := claim.complete(resp, resp.status < 500); err != nil {
		s.log.ErrorContext(r.Context(), "idempotency key answer not kept", "request_id", RequestIDFromContext(r.Context()),
			"operation", o.name, "error", err)
	}
	return withRunID(resp, run)
}

// runIDOf returns the call's run id: the X-Run-Id header, or the run_id
// argument (query or body) for platforms that cannot set headers.
func runIDOf(r *http.Request, a args) (string, error) {
	if id := RunIDFromContext(r.Context()); id != "" {
		return id, nil
	}
	id := a.str("run_id")
	if id == "" && r.URL.RawQuery != "" {
		id = r.URL.Query().Get("run_id")
	}
	if id != "" && !headerIDPattern.MatchString(id) {
		return "", errmap.Invalid("run_id", "must be 1 to 128 letters, digits, '.', '_', ':' or '-'")
	}
	return id, nil
}

func withRunID(resp *response, run string) *response {
	if run != "" {
		resp.header.Set("X-Run-Id", run)
	}
	return resp
}

// failure names err and renders its five-field body.
func (s *Server) failure(r *http.Request, err error, t *trace) *response {
	return render(s.named(r, err, t))
}

// named turns err into a named error with the ids of the path added to its
// details. The cause goes to the access log, at error level for a 5xx.
func (s *Server) named(r *http.Request, err error, t *trace) *errmap.Error {
	if errors.Is(err, runs.ErrStore) {
		t.cause = err
		return errmap.Map(refusal.StoreUnavailable{Which: refusal.StoreRunState, Err: err})
	}
	e := errmap.Map(err)
	// Only ids of the right form are copied: a call refused before its ids
	// were checked (UNAUTHENTICATED, SCOPE_MISSING) must not reflect
	// arbitrary text back to the agent.
	for k, pattern := range pathIDs {
		if v := chi.URLParam(r, k); v != "" && pattern.MatchString(v) {
			e.WithDetail(k, v)
		}
	}
	// The cause goes to the access log only: for an ERP answer it holds
	// the message ids and the ERP's own words.
	t.cause = err
	return e
}

// render writes e into a response that can be replayed.
func render(e *errmap.Error) *response {
	buf := &bufferedWriter{header: http.Header{}}
	errmap.Write(buf, e)
	return &response{status: buf.status, code: string(e.Code), header: buf.header, body: buf.body.Bytes()}
}

// success renders a success body.
func (s *Server) success(r *http.Request, v any, t *trace) *response {
	body, err := marshal(v)
	if err != nil {
		return s.failure(r, err, t)
	}
	code := OutcomeOK
	if oc, ok := v.(outcomer); ok && oc.outcome() != "" {
		code = oc.outcome()
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	return &response{status: http.StatusOK, code: code, header: h, body: body}
}

// response is a rendered answer, kept whole so a write's first answer can be
// replayed byte for byte.
type response struct {
	status int
	code   string
	header http.Header
	body   []byte
}

func (resp *response) write(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range resp.header {
		h[k] = v
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// bufferedWriter is an http.ResponseWriter that keeps what is written.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// rateLimit counts the call against its client's rate limit and refuses it,
// retryable, once the window's calls are spent. Clients are told apart by
// their API key, or by address when the gateway has no keys.
func (s *Server) rateLimit(r *http.Request, c *Credential) error {
	if s.limiter == nil {
		return nil
	}
	key := "client:" + c.Name
	if c == &anonymous {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		key = "addr:" + host
	}
	hdr := &bufferedWriter{header: http.Header{}}
	if !s.limiter.OnLimit(hdr, r, key) {
		return nil
	}
	wait, err := strconv.Atoi(hdr.header.Get("Retry-After"))
	if err != nil || wait < 1 {
		wait = 1
	}
	return refusal.RateLimited{Reason: refusal.RateCalls, RetryAfter: wait}
}
