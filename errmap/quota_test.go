package errmap_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// TestERPQuota: a call the ERP's quota refused is RATE_LIMITED, retryable,
// with reason erp_quota, the service, the limit and a whole-second wait.
func TestERPQuota(t *testing.T) {
	for _, limit := range []string{retry.QuotaRate, retry.QuotaInFlight, retry.QuotaUnavailable} {
		e := errmap.Map(fmt.Errorf("read: %w", &retry.Error{Service: erp.ServiceSupplierInvoice, Operation: "read invoice",
			QuotaLimit: limit, RetryAfter: 1200 * time.Millisecond, Err: retry.ErrQuota}))
		if e.Code != errmap.RateLimited || e.Status != http.StatusTooManyRequests || !e.Retryable ||
			e.NextAction != errmap.HoldAndRecheck {
			t.Errorf("%s: %s %d retryable %v %s, want RATE_LIMITED 429 retryable hold_and_recheck",
				limit, e.Code, e.Status, e.Retryable, e.NextAction)
		}
		want := map[string]any{"reason": "erp_quota", "service": "supplier_invoice", "limit": limit, "retry_after_s": 2, "attempts": 0}
		for k, v := range want {
			if e.Details[k] != v {
				t.Errorf("%s: details[%s] = %v, want %v (details %v)", limit, k, e.Details[k], v, e.Details)
			}
		}
	}
	// A refusal of a slot that comes in less than a second still asks for
	// a whole second.
	e := errmap.Map(&retry.Error{Service: erp.ServicePurchaseOrder, QuotaLimit: retry.QuotaRate,
		RetryAfter: 30 * time.Millisecond, Err: retry.ErrQuota})
	if e.Details["retry_after_s"] != 1 {
		t.Errorf("retry_after_s = %v, want 1", e.Details["retry_after_s"])
	}
}
