package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// target is one way of doing a business operation: a request to erpgate,
// or the ERP's reads sent directly or through nginx.
type target struct {
	name string // direct, nginx or erpgate
	// method, base and path of the one request, when seq is empty.
	method, base, path string
	header             http.Header
	// seq, when set, is the OData reads (paths under base) that make up the
	// operation, sent one after the other as one hit.
	seq  []string
	want int // the status every hit must answer with
}

// stats is what one run measured.
type stats struct {
	hits     int // after the warm-up
	all      int // warm-up included
	errors   int
	elapsed  time.Duration
	lat      []time.Duration // sorted
	firstErr string
}

// add merges the stats of another run of the same target.
func (s *stats) add(o stats) {
	s.hits += o.hits
	s.all += o.all
	s.errors += o.errors
	s.elapsed += o.elapsed
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
	s.lat = append(s.lat, o.lat...)
	slices.Sort(s.lat)
}

// rps is the throughput of correct answers.
func (s stats) rps() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.hits-s.errors) / s.elapsed.Seconds()
}

// quantile returns the exact q-quantile by nearest rank.
func (s stats) quantile(q float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	i := int(q*float64(len(s.lat))+0.5) - 1
	return s.lat[min(max(i, 0), len(s.lat)-1)]
}

// maxOpenWorkers bounds the requests in flight at a constant rate.
const maxOpenWorkers = 1024

// loader drives one target with vegeta over its own connections.
type loader struct {
	t      target
	tr     *http.Transport
	client *http.Client
}

func newLoader(t target, conns int) *loader {
	tr := &http.Transport{
		MaxIdleConnsPerHost: conns,
		MaxIdleConns:        conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true, // neither erpgate nor the ERP compresses
	}
	l := &loader{t: t, tr: tr}
	var rt http.RoundTripper = tr
	if len(t.seq) > 0 {
		rt = &sequence{base: tr, root: t.base, paths: t.seq, header: t.header}
	}
	l.client = &http.Client{Transport: rt, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return l
}

func (l *loader) close() { l.tr.CloseIdleConnections() }

// attack sends hits at rate (0: as fast as workers answer, a closed loop
// of workers requests) for d, and returns the stats of the hits sent after
// skip.
func (l *loader) attack(ctx context.Context, rate float64, workers int, d, skip time.Duration) stats {
	// At a constant rate vegeta adds workers while the target lags; the cap
	// only keeps a stalled target from taking every file descriptor.
	maxWorkers := uint64(maxOpenWorkers)
	if rate == 0 {
		maxWorkers = uint64(workers)
	}
	opts := []func(*vegeta.Attacker){vegeta.Client(l.client), vegeta.Workers(uint64(workers)), vegeta.MaxWorkers(maxWorkers)}
	atk := vegeta.NewAttacker(opts...)
	tgt := vegeta.Target{Method: l.t.method, URL: l.t.base + l.t.path, Header: l.t.header}
	if len(l.t.seq) > 0 {
		tgt = vegeta.Target{Method: http.MethodGet, URL: l.t.base + l.t.seq[0], Header: l.t.header}
	}
	var pacer vegeta.Pacer = vegeta.Rate{Freq: 0}
	if rate > 0 {
		pacer = vegeta.Rate{Freq: max(int(rate+0.5), 1), Per: time.Second}
	}
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()

	start := time.Now()
	from := start.Add(skip)
	var s stats
	var last time.Time
	for res := range atk.Attack(vegeta.NewStaticTargeter(tgt), pacer, d, l.t.name) {
		s.all++
		if res.Timestamp.Before(from) {
			continue
		}
		s.hits++
		s.lat = append(s.lat, res.Latency)
		if int(res.Code) != l.t.want {
			s.errors++
			if s.firstErr == "" {
				s.firstErr = fmt.Sprintf("status %d %s", res.Code, res.Error)
			}
		}
		if end := res.End(); end.After(last) {
			last = end
		}
	}
	if s.hits > 0 {
		s.elapsed = last.Sub(from)
	}
	slices.Sort(s.lat)
	return s
}

// sequence is a RoundTripper that answers a request by sending the
// operation's reads one after the other, as a client without the gateway
// would (the gateway makes a match's reads after the invoice at once), and
// returns the first failure or the last answer.
type sequence struct {
	base   http.RoundTripper
	root   string
	paths  []string
	header http.Header
}

func (s *sequence) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	status := http.StatusOK
	for _, p := range s.paths {
		r, err := http.NewRequestWithContext(req.Context(), http.MethodGet, s.root+p, nil)
		if err != nil {
			return nil, err
		}
		r.Header = s.header
		resp, err := s.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			status = resp.StatusCode
			break
		}
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}
