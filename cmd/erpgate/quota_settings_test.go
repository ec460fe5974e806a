package main

import (
	"io"
	"testing"
)

// TestERPRateAgainstClientLimit: a client's own limit at or under the
// ERP's ceiling starts; above it, or with no client limit at all, the
// gateway refuses to start, naming -rate-limit and the value that fits.
func TestERPRateAgainstClientLimit(t *testing.T) {
	dir := t.TempDir()
	parse := func(args ...string) error {
		_, err := parseConfig(append([]string{"-data-dir", dir}, args...), func(string) string { return "" }, io.Discard)
		return err
	}
	for _, args := range [][]string{
		{"-erp-rate", "0", "-rate-limit", "0"},                          // no ceiling
		{"-erp-rate", "10"},                                             // 600 per minute is 10 a second
		{"-erp-rate", "2", "-rate-limit", "10", "-rate-window", "5s"},   // 2 a second
		{"-erp-rate", "0.5", "-rate-limit", "30", "-rate-window", "1m"}, // half a call a second
		{"-erp-rate", "5", "-erp-in-flight", "3", "-rate-limit", "300"}, // 5 a second
	} {
		if err := parse(args...); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	for args, want := range map[*[]string]string{
		{"-erp-rate", "2", "-rate-limit", "11", "-rate-window", "5s"}: "-rate-limit (ERPGATE_RATE_LIMIT): 11 calls per 5s is 2.2 a second for one client, " +
			"above -erp-rate 2, the ERP's quota for all of them: lower it to at most 10 per 5s, or raise -erp-rate",
		{"-erp-rate", "2.5", "-rate-limit", "12", "-rate-window", "5s"}: "-rate-limit (ERPGATE_RATE_LIMIT): 12 calls per 5s is 2.4 a second for one client, " +
			"above -erp-rate 2.5 (at most 2 in any second), the ERP's quota for all of them: lower it to at most 10 per 5s, or raise -erp-rate",
		{"-erp-rate", "10", "-rate-limit", "0"}: "-rate-limit (ERPGATE_RATE_LIMIT): must be set (not 0) with -erp-rate 10: " +
			"a client without a limit could spend the whole of the ERP's quota",
	} {
		err := parse(*args...)
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v\nwant %s", *args, err, want)
		}
	}
}
