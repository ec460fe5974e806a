package api

import (
	"bytes"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

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
var pathIDs = []string{"invoice_id", "po_id", "item", "supplier_id", "approval_id"}

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
	if err := authorize(client, o); err != nil {
		return s.failure(r, err, t)
	}
	body, err := readBody(r, s.maxBody)
	if err != nil {
		return s.failure(r, err, t)
	}
	args := parseArgs(r, body)
	digest := args.digest(o.name, r)

	var claim *idempotencyClaim
	if o.write {
		key, err := idempotencyKey(r, args)
		if err != nil {
			return s.failure(r, err, t)
		}
		if key != "" {
			c, replay, err := s.idem.claim(r.Context(), client.Name+"\x00"+key, digest)
			if err != nil {
				if e, ok := err.(*errmap.Error); ok && e.Code == errmap.IdempotencyKeyReused {
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

	run := RunIDFromContext(r.Context())
	if run != "" {
		if err := s.runs.admit(run, o, digest, args.invoiceID(r)); err != nil {
			claim.release()
			return s.failure(r, err, t)
		}
	}
	var resp *response
	if v, err := fn(r, body); err != nil {
		resp = s.failure(r, err, t)
	} else {
		resp = s.success(r, v, t)
	}
	if run != "" {
		s.runs.record(run, digest, resp.code)
	}
	// A 5xx is not kept: the same key may try again, and the ERP's own
	// repeatability keeps that second try from applying the write twice.
	claim.complete(resp, resp.status < 500)
	return resp
}

// failure names err and renders the five-field body, with the ids of the
// path added to its details. The cause of an INTERNAL or a 5xx goes to the
// access log.
func (s *Server) failure(r *http.Request, err error, t *trace) *response {
	e := errmap.Map(err)
	if e.Code != errmap.InvalidRequest {
		for _, k := range pathIDs {
			if v := chi.URLParam(r, k); v != "" {
				e.WithDetail(k, v)
			}
		}
	}
	if e.Code == errmap.Internal || e.Status >= 500 {
		t.cause = err
	}
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
