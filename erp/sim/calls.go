package sim

import (
	"net/http"
	"strings"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// Call is one OData request the simulator answered (or faulted), as Calls
// returns it: a benchmark counts ERP calls and round trips by it, and a
// test what one operation cost. Admin requests are not calls.
type Call struct {
	Service erp.Service `json:"service"`
	Method  string      `json:"method"`
	// Path is the request path after the service root, "" for the root
	// itself; Query is the raw query.
	Path  string `json:"path"`
	Query string `json:"query,omitempty"`
	// URI is the request's whole path and query, as sent: what a client
	// sends to make the same call again.
	URI string `json:"uri"`
	// Fetch marks a request that asked for a CSRF token (X-CSRF-Token:
	// Fetch).
	Fetch bool `json:"fetch,omitempty"`
	// Status is the HTTP status answered; 0 when the connection was
	// dropped.
	Status int `json:"status"`
	// Start is when the request arrived, End when its answer was written,
	// on the server's clock (Options.Now); an injected delay lies between.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Read reports whether the call reads data: a GET or HEAD of neither the
// service root nor its $metadata. A read may fetch a CSRF token too.
func (c Call) Read() bool {
	return (c.Method == http.MethodGet || c.Method == http.MethodHead) &&
		!isServiceRoot(c.Path) && c.Path != "$metadata"
}

// Key is the call's method, path and query: two reads with the same Key
// read the same thing.
func (c Call) Key() string {
	k := c.Method + " " + string(c.Service) + "/" + c.Path
	if c.Query != "" {
		k += "?" + c.Query
	}
	return k
}

// Calls returns the OData calls answered since New or the last ResetCalls,
// in the order their answers were written, each with when it arrived; none
// unless Options.RecordCalls is set.
func (s *Server) Calls() []Call {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ResetCalls forgets the calls answered so far.
func (s *Server) ResetCalls() {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	s.calls = nil
}

// maxCalls bounds the call log, so that a simulator under a long load run
// does not grow without end; the calls beyond it are not kept.
const maxCalls = 100_000

// record starts the log entry of a call and returns the function that
// completes it with the status answered.
func (s *Server) record(r *http.Request, svc erp.Service, sub string) func(status int) {
	c := Call{Service: svc, Method: r.Method, Path: sub, Query: r.URL.RawQuery,
		URI:   r.URL.RequestURI(),
		Fetch: strings.EqualFold(r.Header.Get("X-CSRF-Token"), "Fetch"), Start: s.opts.Now()}
	return func(status int) {
		c.Status, c.End = status, s.opts.Now()
		s.callsMu.Lock()
		defer s.callsMu.Unlock()
		if len(s.calls) < maxCalls {
			s.calls = append(s.calls, c)
		}
	}
}

// statusWriter notes the status a handler answers with and completes the
// call's log entry with it, once.
type statusWriter struct {
	http.ResponseWriter
	status int
	done   func(status int)
}

// finish completes the log entry with the status answered, unless drop
// already did.
func (w *statusWriter) finish() {
	if w.done != nil {
		w.done(w.status)
		w.done = nil
	}
}

// drop completes the log entry of a call whose connection is about to be
// dropped: before the drop, since the client may read the log as soon as
// it sees the connection go.
func (w *statusWriter) drop() {
	w.status = 0
	w.finish()
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (dropConnection
// hijacks it).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
