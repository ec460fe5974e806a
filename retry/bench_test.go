package retry

import (
	"context"
	"testing"
)

// BenchmarkDo is a call that succeeds at its first attempt, the usual
// case: the runner's own work around it, with its breaker and budget.
func BenchmarkDo(b *testing.B) {
	r := New(Policy{}, nil)
	ctx := context.Background()
	call := Call{Service: "API_SUPPLIERINVOICE_PROCESS_SRV", Operation: "get_invoice"}
	fn := func(ctx context.Context) error { return ctx.Err() }
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Do(ctx, call, fn); err != nil {
			b.Fatal(err)
		}
	}
}
