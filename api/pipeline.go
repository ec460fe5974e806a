package api

import (
	"net/http"
	"sync"

	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// operationCall is what the steps know of one call of an operation; each
// step fills in what the later ones need.
type operationCall struct {
	w      http.ResponseWriter
	r      *http.Request
	record *requestRecord
	// client is the caller, known by its API key.
	client *Credential
	body   []byte
	args   args
	// digest identifies the call's arguments for the idempotency store and
	// the run guard; "" while neither needs it, so that a call that uses
	// neither does not pay for hashing its arguments.
	digest string
	// run is the run the call belongs to, "" for none; runCall is the call
	// as the run guard counts it.
	run     string
	runCall runs.Call
	// ran says the operation's own function ran: value is what it
	// returned, failed its error as errmap named it.
	ran    bool
	value  any
	failed *errmap.Error
	// audit is the audit log's row of a write that ran, for the
	// idempotency step to write when it settles the call.
	audit *records.AuditEntry
}

// callHandler serves a call and returns its answer. The operation's own
// function (callOperation) is the exception: it leaves a failure
// unrendered, a nil answer with c.failed set, for the run guard to render.
type callHandler func(c *operationCall) *response

// step is one concern every operation shares. Built once per operation
// around next, the rest of the pipeline, it may answer the call itself
// (a refusal, a replay) or pass it on and act on next's answer on the way
// back. A step that an operation does not need returns next.
type step func(o operation, next callHandler) callHandler

// calls keeps operationCalls for reuse: the read path allocates none.
var calls = sync.Pool{New: func() any { return new(operationCall) }}

// pipeline returns a constructor of operation handlers: each runs steps in
// their order on the way in, and in the reverse order on the way back,
// around the operation's own function.
func (s *Server) pipeline(steps ...step) func(operation, operationFunc) http.Handler {
	return func(o operation, fn operationFunc) http.Handler {
		h := s.callOperation(fn)
		for i := len(steps) - 1; i >= 0; i-- {
			h = steps[i](o, h)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := calls.Get().(*operationCall)
			c.w, c.r, c.record = w, r, recordFrom(r.Context())
			h(c)
			*c = operationCall{}
			calls.Put(c)
		})
	}
}

// callOperation is the end of the pipeline: the operation's own function.
// Its success body is rendered here; its error is named and left for the
// run guard to render, which renames it first when it is the second
// not-found of a corrected retry.
func (s *Server) callOperation(fn operationFunc) callHandler {
	return func(c *operationCall) *response {
		c.ran = true
		v, err := fn(c.r, c.body)
		c.value = v
		if err != nil {
			c.failed = s.named(c.r, err, c.record)
			return nil
		}
		return s.success(c.r, v, c.record)
	}
}
