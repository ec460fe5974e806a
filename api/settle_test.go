package api_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp/records"
)

// writeLog is a records store that names each write transaction a call
// makes, and whose Settle can be made to fail.
type writeLog struct {
	records.Store
	mu         sync.Mutex
	calls      []string
	failSettle bool
}

func (w *writeLog) note(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, name)
}

// take returns the calls noted since the last take.
func (w *writeLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.calls
	w.calls = nil
	return c
}

func (w *writeLog) ClaimWrite(ctx context.Context, c records.WriteClaim, now time.Time) (records.WriteClaimed, error) {
	w.note("ClaimWrite")
	return w.Store.ClaimWrite(ctx, c, now)
}

func (w *writeLog) Settle(ctx context.Context, st records.Settlement) error {
	w.note("Settle")
	if w.failSettle {
		return errors.New("records: settle write: database is locked")
	}
	return w.Store.Settle(ctx, st)
}

func (w *writeLog) ClaimKey(ctx context.Context, k records.Key, now time.Time, o records.KeyOptions) (records.KeyClaim, error) {
	w.note("ClaimKey")
	return w.Store.ClaimKey(ctx, k, now, o)
}

func (w *writeLog) CompleteKey(ctx context.Context, client, key string, resp records.Response, expires time.Time) error {
	w.note("CompleteKey")
	return w.Store.CompleteKey(ctx, client, key, resp, expires)
}

func (w *writeLog) ReleaseKey(ctx context.Context, client, key string) error {
	w.note("ReleaseKey")
	return w.Store.ReleaseKey(ctx, client, key)
}

func (w *writeLog) ClaimInvoice(ctx context.Context, l records.InvoiceLease, now time.Time, lease time.Duration) (records.LeaseClaim, error) {
	w.note("ClaimInvoice")
	return w.Store.ClaimInvoice(ctx, l, now, lease)
}

func (w *writeLog) ReleaseInvoice(ctx context.Context, invoiceID, holder string) error {
	w.note("ReleaseInvoice")
	return w.Store.ReleaseInvoice(ctx, invoiceID, holder)
}

func (w *writeLog) AppendAudit(ctx context.Context, e records.AuditEntry) error {
	w.note("AppendAudit")
	return w.Store.AppendAudit(ctx, e)
}

func (w *writeLog) CreateApproval(ctx context.Context, a records.Approval, notify bool) (records.Approval, bool, error) {
	w.note("CreateApproval")
	return w.Store.CreateApproval(ctx, a, notify)
}

func (w *writeLog) CreateHandover(ctx context.Context, h records.Handover, notify bool) (records.Handover, bool, error) {
	w.note("CreateHandover")
	return w.Store.CreateHandover(ctx, h, notify)
}

// TestWriteTransactions: a keyed write that meets no other call claims its
// key and its invoice's lease in one transaction, and settles its audit
// row, answer and lease in another; a write without a key takes its lease
// on its own.
func TestWriteTransactions(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			store, _ := e.open(t)
			wl := &writeLog{Store: store}
			s := newStack(t, withOptions(func(o *api.Options) { o.Records = wl }))
			steps := []struct {
				name, method, path string
				body               map[string]any
				key                string
				want               []string
			}{
				{"request_approval", "POST", "/invoices/5105600101/approvals",
					map[string]any{"proposed_action": "post_as_invoiced", "justification": "Three-way match MATCHED on all lines."},
					"k-appr", []string{"ClaimWrite", "CreateApproval", "Settle"}},
				{"post_invoice", "POST", "/invoices/5105600101/post", map[string]any{"approval_id": "A0000001"},
					"k-post", []string{"ClaimWrite", "Settle"}},
				{"post_invoice replayed", "POST", "/invoices/5105600101/post", map[string]any{"approval_id": "A0000001"},
					"k-post", []string{"ClaimWrite"}},
				{"post_invoice without a key", "POST", "/invoices/5105600101/post", map[string]any{"approval_id": "A0000001"},
					"", []string{"ClaimInvoice", "Settle"}},
				{"hand_over", "POST", "/handovers",
					map[string]any{"invoice_id": "5105600106", "code": "PO_CLOSED", "summary": "PO 4500018830 item 10 is finally invoiced."},
					"k-ho", []string{"ClaimWrite", "CreateHandover", "Settle"}},
				{"a refusal gives the key up with its audit row", "POST", "/invoices/5105600102/post", map[string]any{},
					"k-refused", []string{"ClaimWrite", "Settle"}},
			}
			for _, st := range steps {
				var headers []string
				if st.key != "" {
					headers = append(headers, "Idempotency-Key: "+st.key)
				}
				r := s.do(st.method, st.path, st.body, headers...)
				if r.status >= 500 {
					t.Fatalf("%s: %d %s", st.name, r.status, r.body)
				}
				if got := wl.take(); !slices.Equal(got, st.want) {
					t.Errorf("%s: store writes %v, want %v", st.name, got, st.want)
				}
			}
			// The refused post's key was given up: the same key is free
			// for other arguments.
			r := s.do("POST", "/invoices/5105600102/post", map[string]any{"approval_id": "A0000009"}, "Idempotency-Key: k-refused")
			if r.status == http.StatusUnprocessableEntity && r.json(t)["code"] == "IDEMPOTENCY_KEY_REUSED" {
				t.Errorf("a refused call's key was kept: %s", r.body)
			}
		})
	}
}

// TestSettleEachPartWhenTheTransactionFails: when the settling transaction
// fails, the audit row, the key's answer and the lease's release are each
// written on their own.
func TestSettleEachPartWhenTheTransactionFails(t *testing.T) {
	store, _ := engines[0].open(t)
	wl := &writeLog{Store: store, failSettle: true}
	s := newStack(t, withOptions(func(o *api.Options) { o.Records = wl }))
	appr := s.do("POST", "/invoices/5105600101/approvals", map[string]any{"proposed_action": "post_as_invoiced",
		"justification": "Three-way match MATCHED on all lines."}, "Idempotency-Key: k-appr")
	if appr.status != http.StatusOK {
		t.Fatalf("approval: %d %s", appr.status, appr.body)
	}
	first := s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": "A0000001"}, "Idempotency-Key: k-post")
	if first.status != http.StatusOK {
		t.Fatalf("post: %d %s", first.status, first.body)
	}
	if got, want := wl.take(), []string{"ClaimWrite", "CreateApproval", "Settle", "AppendAudit", "CompleteKey",
		"ClaimWrite", "Settle", "AppendAudit", "CompleteKey", "ReleaseInvoice"}; !slices.Equal(got, want) {
		t.Errorf("store writes %v, want %v", got, want)
	}
	// The answer was kept, the lease released, the audit rows written.
	again := s.do("POST", "/invoices/5105600101/post", map[string]any{"approval_id": "A0000001"}, "Idempotency-Key: k-post")
	if again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) {
		t.Errorf("the same key again: %d %s, want the first answer replayed", again.status, again.body)
	}
	lease, err := store.ClaimInvoice(t.Context(), records.InvoiceLease{InvoiceID: "5105600101", Holder: "test"}, time.Now(), time.Minute)
	if err != nil || !lease.Claimed {
		t.Errorf("the invoice's lease after the post: %+v, %v; want released", lease, err)
	}
	rows, err := store.Audit(t.Context(), records.AuditFilter{InvoiceID: "5105600101"})
	if err != nil || len(rows) != 2 || rows[0].Operation != "post_invoice" || rows[1].Operation != "request_approval" {
		t.Errorf("audit rows %+v, %v; want the post and the approval", rows, err)
	}
}
