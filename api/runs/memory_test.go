package runs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api/runs"
)

// TestMemoryKeepsAtMostItsLimit: beyond its limit the memory store forgets
// the run whose last call is the oldest, and only that one.
func TestMemoryKeepsAtMostItsLimit(t *testing.T) {
	ctx := context.Background()
	m := runs.NewMemory(nil, 3)
	touch := func(id string) {
		t.Helper()
		if err := m.Update(ctx, id, time.Hour, func(*runs.State) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		touch(fmt.Sprint("run-", i))
	}
	touch("run-0") // run-1 now has the oldest last call
	touch("run-3")
	for id, kept := range map[string]bool{"run-0": true, "run-1": false, "run-2": true, "run-3": true} {
		st, err := m.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if (st != nil) != kept {
			t.Errorf("%s kept: %v, want %v", id, st != nil, kept)
		}
	}
}
