package erp_test

import (
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// TestNetDueDate holds the net due date to SAP's rule: the baseline date
// plus the net days, else the second cash discount days, else the first;
// none without a baseline date.
func TestNetDueDate(t *testing.T) {
	base := time.Date(2026, time.November, 21, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name             string
		baseline         time.Time
		cd1, cd2, netDay int
		want             time.Time
	}{
		{"net days win over both discounts", base, 14, 20, 30, time.Date(2026, time.December, 21, 0, 0, 0, 0, time.UTC)},
		{"net days alone", base, 0, 0, 45, time.Date(2027, time.January, 5, 0, 0, 0, 0, time.UTC)},
		{"second discount days without net days", base, 10, 20, 0, time.Date(2026, time.December, 11, 0, 0, 0, 0, time.UTC)},
		{"first discount days alone", base, 14, 0, 0, time.Date(2026, time.December, 5, 0, 0, 0, 0, time.UTC)},
		{"no days: due on the baseline date", base, 0, 0, 0, base},
		{"across February of a leap year", time.Date(2028, time.February, 15, 0, 0, 0, 0, time.UTC), 0, 0, 14,
			time.Date(2028, time.February, 29, 0, 0, 0, 0, time.UTC)},
		{"no baseline date: no due date", time.Time{}, 14, 20, 30, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := erp.Invoice{BaselineDate: tc.baseline, CashDiscount1Days: tc.cd1, CashDiscount2Days: tc.cd2, NetPaymentDays: tc.netDay}
			if got := inv.NetDueDate(); !got.Equal(tc.want) {
				t.Errorf("NetDueDate of %s + (%d, %d, %d): got %v, want %v", tc.baseline.Format(time.DateOnly),
					tc.cd1, tc.cd2, tc.netDay, got, tc.want)
			}
		})
	}
}
