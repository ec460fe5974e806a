package runs

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Memory is a Store for a single replica. It keeps at most its limit of
// runs: beyond it the run whose last call is the oldest goes first, limits
// and history with it, so that run ids without end cannot grow the
// process without end (with Redis the runs are bounded by Redis).
type Memory struct {
	mu    sync.Mutex
	runs  *lru.Cache[string, *memoryRun]
	now   func() time.Time
	swept time.Time
}

// DefaultMaxRuns is how many runs a Memory keeps at most by default: about
// 1 KiB each, some 50 MiB at most.
const DefaultMaxRuns = 50_000

type memoryRun struct {
	state   *State
	expires time.Time
}

// NewMemory returns an empty in-memory store keeping at most max runs
// (DefaultMaxRuns when max is 0 or less); now may be nil.
func NewMemory(now func() time.Time, max int) *Memory {
	if now == nil {
		now = time.Now
	}
	if max <= 0 {
		max = DefaultMaxRuns
	}
	runs, err := lru.New[string, *memoryRun](max)
	if err != nil {
		panic(err) // only for a size below one, ruled out above
	}
	return &Memory{runs: runs, now: now}
}

// Update implements Store. fn works on a copy, so an error leaves the run
// as it was.
func (m *Memory) Update(_ context.Context, runID string, ttl time.Duration, fn func(*State) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.sweep(now)
	st := newState(runID, now)
	if r, ok := m.runs.Get(runID); ok && now.Before(r.expires) {
		st = clone(r.state)
	}
	if err := fn(st); err != nil {
		return err
	}
	m.runs.Add(runID, &memoryRun{state: st, expires: now.Add(ttl)})
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, runID string) (*State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs.Peek(runID)
	if !ok || !m.now().Before(r.expires) {
		return nil, nil
	}
	return clone(r.state), nil
}

// sweep drops expired runs, at most once a minute; m.mu is held.
func (m *Memory) sweep(now time.Time) {
	if now.Sub(m.swept) < time.Minute {
		return
	}
	m.swept = now
	for _, id := range m.runs.Keys() {
		if r, ok := m.runs.Peek(id); ok && !now.Before(r.expires) {
			m.runs.Remove(id)
		}
	}
}

// clone deep-copies a state, so that an update works on a copy and a
// reader never sees a run change under it. Recorded error bodies are
// shared: nothing changes a body once it is recorded (an update replaces
// a record's body, it does not edit it).
func clone(st *State) *State {
	out := *st
	out.Calls = slices.Clone(st.Calls)
	out.Used = maps.Clone(st.Used)
	out.NotFound = maps.Clone(st.NotFound)
	out.GRMissing = maps.Clone(st.GRMissing)
	out.GRMissingAt = maps.Clone(st.GRMissingAt)
	out.WaitUntil = maps.Clone(st.WaitUntil)
	out.fill()
	return &out
}
