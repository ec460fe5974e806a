package api

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/errmap"
)

// operationFunc is the body of one operation: it validates the request,
// calls the domain and returns the success body, or an error for errmap to
// name. The steps of the pipeline run around it.
type operationFunc func(r *http.Request, body []byte) (any, error)

// outcomer is a success body that carries a named outcome of its own, such
// as a match with TOLERANCE_EXCEEDED.
type outcomer interface{ outcome() string }

// pathIDs are the URL parameters copied into an error's details, so the
// agent has the ids of its next step without looking them up.
var pathIDs = map[string]idForm{
	"invoice_id": invoiceIDPattern, "po_id": poIDPattern, "item": itemPattern,
	"supplier_id": supplierIDPattern, "approval_id": approvalIDPattern,
}

// failure names err and renders its five-field body.
func (s *Server) failure(r *http.Request, err error, rec *requestRecord) *response {
	return render(s.named(r, err, rec))
}

// named turns err into a named error with the ids of the path added to its
// details. The cause goes to the access log, at error level for a 5xx.
func (s *Server) named(r *http.Request, err error, rec *requestRecord) *errmap.Error {
	if errors.Is(err, runs.ErrStore) {
		rec.cause = err
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
	rec.cause = err
	return e
}

// render writes e into a response that can be replayed. A message
// composed around input that would push next_action past the first
// errmap.HeadLimit bytes is shortened (errmap.FitHead).
func render(e *errmap.Error) *response {
	buf := &bufferedWriter{header: http.Header{}}
	errmap.Write(buf, e.FitHead())
	return &response{status: buf.status, code: string(e.Code), header: buf.header, body: buf.body.Bytes()}
}

// success renders a success body.
func (s *Server) success(r *http.Request, v any, rec *requestRecord) *response {
	body, err := marshal(v)
	if err != nil {
		return s.failure(r, err, rec)
	}
	code := OutcomeOK
	if oc, ok := v.(outcomer); ok && oc.outcome() != "" {
		code = oc.outcome()
	}
	return &response{status: http.StatusOK, code: code, header: successHeader, shared: true, body: body}
}

// successHeader is the header of every success body, shared by their
// responses until one sets a header of its own (setHeader).
var successHeader = http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}

// response is a rendered answer, kept whole so a write's first answer can be
// replayed byte for byte.
type response struct {
	status int
	code   string
	// header is never changed in place but through setHeader: it may be
	// shared with other responses, as shared says.
	header http.Header
	shared bool
	body   []byte
}

// setHeader sets a header of the response, on a copy of its header first
// when that is shared.
func (resp *response) setHeader(key, value string) {
	if resp.shared {
		// Room for X-Run-Id and Idempotent-Replayed.
		h := make(http.Header, len(resp.header)+2)
		for k, v := range resp.header {
			h[k] = v
		}
		resp.header, resp.shared = h, false
	}
	resp.header.Set(key, value)
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
