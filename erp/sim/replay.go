package sim

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Replay is an http.RoundTripper that asks a simulated ERP once and
// answers every request with its answer to the first: for a benchmark of
// what the gateway does around one read, which then spends nothing on
// sockets or on the simulator. Safe for concurrent use.
type Replay struct {
	sim    http.Handler
	once   sync.Once
	status int
	header http.Header
	body   []byte
}

// NewReplay returns a Replay of a simulated ERP made with o.
func NewReplay(o Options) *Replay { return &Replay{sim: New(o)} }

// RoundTrip answers req with the simulator's answer to the first request.
func (r *Replay) RoundTrip(req *http.Request) (*http.Response, error) {
	r.once.Do(func() {
		w := httptest.NewRecorder()
		if req.Body == nil {
			req.Body = http.NoBody
		}
		r.sim.ServeHTTP(w, req)
		r.status, r.header, r.body = w.Code, w.Header().Clone(), w.Body.Bytes()
	})
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: r.status, Header: r.header, Body: io.NopCloser(bytes.NewReader(r.body)),
		ContentLength: int64(len(r.body)), Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
}
