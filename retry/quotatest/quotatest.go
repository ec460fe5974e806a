// Package quotatest holds the measure the tests and benchmarks of the
// ERP's quota judge it by.
package quotatest

import (
	"slices"
	"time"
)

// Busiest is the most of the times at that fall in one window of length
// w, wherever it starts: the busiest window of all starts at one of them,
// so each is tried as a start. at need not be sorted, and is not changed.
func Busiest(at []time.Time, w time.Duration) int {
	at = slices.Clone(at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, j := 0, 0; i < len(at); i++ {
		for j < len(at) && at[j].Sub(at[i]) < w {
			j++
		}
		most = max(most, j-i)
	}
	return most
}
