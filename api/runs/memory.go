package runs

import (
	"context"
	"encoding/json"
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

// clone deep-copies a state the way the Redis store stores it, so both
// stores behave alike.
func clone(st *State) *State {
	b, err := json.Marshal(st)
	if err != nil {
		panic("runs: state does not encode: " + err.Error())
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		panic("runs: state does not decode: " + err.Error())
	}
	out.fill()
	return &out
}
