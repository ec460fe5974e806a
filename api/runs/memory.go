package runs

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// Memory is a Store for a single replica.
type Memory struct {
	mu    sync.Mutex
	runs  map[string]*memoryRun
	now   func() time.Time
	swept time.Time
}

type memoryRun struct {
	state   *State
	expires time.Time
}

// NewMemory returns an empty in-memory store; now may be nil.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{runs: map[string]*memoryRun{}, now: now}
}

// Update implements Store. fn works on a copy, so an error leaves the run
// as it was.
func (m *Memory) Update(_ context.Context, runID string, ttl time.Duration, fn func(*State) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.sweep(now)
	st := newState(runID, now)
	if r, ok := m.runs[runID]; ok && now.Before(r.expires) {
		st = clone(r.state)
	}
	if err := fn(st); err != nil {
		return err
	}
	m.runs[runID] = &memoryRun{state: st, expires: now.Add(ttl)}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, runID string) (*State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[runID]
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
	for id, r := range m.runs {
		if !now.Before(r.expires) {
			delete(m.runs, id)
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
	out.WaitUntil = maps.Clone(st.WaitUntil)
	out.fill()
	return &out
}
