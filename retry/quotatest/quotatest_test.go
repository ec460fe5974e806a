package quotatest_test

import (
	"testing"
	"time"

	"github.com/erpgate/erpgate/retry/quotatest"
)

func TestBusiest(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		at   []time.Time
		want int
	}{
		{"none", nil, 0},
		{"one", []time.Time{t0}, 1},
		// Unsorted; the window [900, 1900) holds 900, 1000, 1500, 1899.
		{"a window not aligned to the first", []time.Time{ms(1500), ms(0), ms(900), ms(1899), ms(1000), ms(1900)}, 4},
		{"the end is open", []time.Time{ms(0), ms(1000), ms(2000)}, 1},
	} {
		in := append([]time.Time(nil), tc.at...)
		if got := quotatest.Busiest(tc.at, time.Second); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
		for i := range in {
			if !in[i].Equal(tc.at[i]) {
				t.Errorf("%s: the times were changed", tc.name)
			}
		}
	}
}
