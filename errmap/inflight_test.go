package errmap_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/errmap"
)

func TestMapInFlight(t *testing.T) {
	tests := []struct {
		in      refusal.InFlight
		details map[string]any
		says    string
	}{
		{refusal.InFlight{Reason: refusal.InFlightInvoice, InvoiceID: "5105600101", Operation: "post_invoice", RetryAfter: 2},
			map[string]any{"reason": "invoice_in_flight", "invoice_id": "5105600101", "operation": "post_invoice", "retry_after_s": 2},
			"post_invoice of invoice 5105600101"},
		{refusal.InFlight{Reason: refusal.InFlightKey, InvoiceID: "5105600101", RetryAfter: 3},
			map[string]any{"reason": "key_in_flight", "invoice_id": "5105600101", "retry_after_s": 3},
			"idempotency key"},
	}
	for _, tt := range tests {
		e := errmap.Map(fmt.Errorf("wait: %w", tt.in))
		if e.Code != errmap.WriteInProgress || e.Status != 409 || !e.Retryable || e.NextAction != errmap.HoldAndRecheck {
			t.Errorf("%+v: got %s %d %v %s, want WRITE_IN_PROGRESS 409 retryable hold_and_recheck", tt.in, e.Code, e.Status, e.Retryable, e.NextAction)
		}
		if fmt.Sprint(e.Details) != fmt.Sprint(tt.details) {
			t.Errorf("%+v: details %v, want %v", tt.in, e.Details, tt.details)
		}
		if !strings.Contains(e.Message, tt.says) || !strings.Contains(e.Message, fmt.Sprintf("after %d s", tt.in.RetryAfter)) {
			t.Errorf("%+v: message %q does not say %q and the wait", tt.in, e.Message, tt.says)
		}
	}
}
