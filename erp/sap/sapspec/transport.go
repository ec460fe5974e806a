package sapspec

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// Transport is an http.RoundTripper that checks every request with
// Spec.Check before Base sends it, and records the mismatches. It never
// refuses a request: what it finds is read with Mismatches.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Spec is what requests are checked against; nil means Default.
	Spec *Spec

	mu    sync.Mutex
	seen  map[string]int
	order []string
}

// RoundTrip checks req and sends it with Base.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, send, err := readBody(req)
	if err != nil {
		return nil, err
	}
	spec, err := t.spec()
	if err != nil {
		t.record([]string{err.Error()})
	} else {
		t.record(Mismatches(spec.Check(req, body)))
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(send)
}

// readBody returns the request's body and the request to send: req itself
// when the body can be read again through GetBody, else a shallow copy
// with the body put back.
func readBody(req *http.Request) ([]byte, *http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, req, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, nil, fmt.Errorf("sapspec: reading the request body: %w", err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, nil, fmt.Errorf("sapspec: reading the request body: %w", err)
		}
		return b, req, nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("sapspec: reading the request body: %w", err)
	}
	send := req.Clone(req.Context())
	send.Body = io.NopCloser(bytes.NewReader(b))
	return b, send, nil
}

func (t *Transport) spec() (*Spec, error) {
	if t.Spec != nil {
		return t.Spec, nil
	}
	return Default()
}

func (t *Transport) record(list []string) {
	if len(list) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]int{}
	}
	for _, m := range list {
		if t.seen[m] == 0 {
			t.order = append(t.order, m)
		}
		t.seen[m]++
	}
}

// Mismatches returns every distinct mismatch seen so far, in the order
// first seen.
func (t *Transport) Mismatches() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.order...)
}

// Count returns how many requests had the mismatch m.
func (t *Transport) Count(m string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[m]
}

// CloseIdleConnections closes Base's idle connections, as
// http.Client.CloseIdleConnections expects of a transport.
func (t *Transport) CloseIdleConnections() {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
