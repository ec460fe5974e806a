package errmap_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// postAnswer is SAP's answer to the function import Post.
func postAnswer(success bool) string {
	return fmt.Sprintf(`{"d":{"Post":{"__metadata":{"type":"API_SUPPLIERINVOICE_PROCESS_SRV.PostInvoiceExportParameters"},"Success":%t}}}`, success)
}

// scriptedPost answers Post with the header and body (a nil header and an
// empty body drop the connection instead), and every read of the invoice
// with it in the SAP status and payment block.
func scriptedPost(t *testing.T, header http.Header, body, status, block string) *sap.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-CSRF-Token") == "Fetch" {
			w.Header().Set("X-CSRF-Token", "tok-1")
			http.SetCookie(w, &http.Cookie{Name: "SAP_SESSIONID_ERP_100", Value: "s1"})
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			if body == "" {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
				return
			}
			for k, v := range header {
				w.Header()[k] = v
			}
			fmt.Fprint(w, body)
			return
		}
		entity := fmt.Sprintf(`{"SupplierInvoice":"5105600102","FiscalYear":"2026","PostingDate":"/Date(1795478400000)/",`+
			`"SupplierInvoiceStatus":%q,"PaymentBlockingReason":%q}`, status, block)
		if strings.HasSuffix(r.URL.Path, "/A_SupplierInvoice") {
			fmt.Fprint(w, `{"d":{"results":[`+entity+`]}}`)
			return
		}
		fmt.Fprint(w, `{"d":`+entity+`}`)
	}))
	t.Cleanup(srv.Close)
	c, err := sap.New(srv.URL, sap.Options{Runner: retry.New(retry.Policy{AttemptTimeout: time.Second, WriteTimeout: time.Second, MaxAttempts: 1,
		Breaker: retry.BreakerSettings{Disabled: true}}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPostOutcomes: what the agent is told for each way a Post ends that
// the read back of the invoice decides.
func TestPostOutcomes(t *testing.T) {
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	ctx := context.Background()

	// Success, and the invoice reads back parked: the ERP contradicts
	// itself, so the agent must not repeat the post but re-check.
	_, err := scriptedPost(t, nil, postAnswer(true), "A", "").PostInvoice(ctx, inv, "")
	if e := errmap.Map(err); e.Code != errmap.ERPOutcomeUnknown || e.Details["invoice_id"] != "5105600102" || e.Retryable {
		t.Errorf("Success, read back parked: %s %v retryable %v, want ERP_OUTCOME_UNKNOWN for the invoice", e.Code, e.Details, e.Retryable)
	}

	// The answer is lost and the invoice reads back posted with block R:
	// a posting, and the block names the variance.
	p, err := scriptedPost(t, nil, "", "5", "R").PostInvoice(ctx, inv, "")
	if err != nil || p.Status != erp.InvoicePosted || p.AlreadyPosted {
		t.Fatalf("lost answer, read back posted: %+v, %v, want a posting by this call", p, err)
	}
	if got := errmap.Info(p.Messages, p.PaymentBlock); got != errmap.ToleranceExceeded {
		t.Errorf("lost answer, block R: info %q, want TOLERANCE_EXCEEDED", got)
	}

	// The answer is lost and the invoice reads back parked for as long as
	// the Post could still be running: it is never sent again, and the
	// agent holds the invoice and re-checks (the same post, which reads
	// the invoice first).
	_, err = scriptedPost(t, nil, "", "A", "").PostInvoice(ctx, inv, "")
	if e := errmap.Map(err); e.Code != errmap.ERPOutcomeUnknown || e.Retryable || e.NextAction != errmap.HoldAndRecheck {
		t.Errorf("lost answer, read back parked: %s retryable %v next %s, want ERP_OUTCOME_UNKNOWN, hold_and_recheck", e.Code, e.Retryable, e.NextAction)
	}

	// An invoice SAP keeps in a status the gateway does not know reads as
	// an invoice, not as a fault of the ERP.
	got, err := scriptedPost(t, nil, postAnswer(true), "Q", "").Invoice(ctx, "5105600102")
	if err != nil {
		t.Fatalf("Invoice in status Q: %v (%s)", err, errmap.Map(err).Code)
	}
	if got.Status != erp.InvoiceOther || got.SAPStatus != "Q" {
		t.Errorf("Invoice in status Q: status %q SAP status %q, want other and Q", got.Status, got.SAPStatus)
	}
}
