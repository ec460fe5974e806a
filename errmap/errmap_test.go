package errmap_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

func TestCatalogueRows(t *testing.T) {
	upper := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	seen := map[errmap.Code]bool{}
	for _, e := range errmap.Catalogue() {
		if seen[e.Code] {
			t.Errorf("code %s listed twice", e.Code)
		}
		seen[e.Code] = true
		if !upper.MatchString(string(e.Code)) {
			t.Errorf("code %q is not UPPER_SNAKE_CASE", e.Code)
		}
		if !contains(errmap.NextActions, e.NextAction) {
			t.Errorf("%s: next_action %q is not one of the five", e.Code, e.NextAction)
		}
		if e.Queue != "" && !contains(errmap.Queues, e.Queue) {
			t.Errorf("%s: queue %q is not a known queue", e.Code, e.Queue)
		}
		// Generic clients retry 429 and 503 by themselves and bridges redact
		// 401/403 bodies: business errors must use neither.
		if !e.Retryable && (e.Status == 429 || e.Status == 503) {
			t.Errorf("%s: non-retryable code on status %d", e.Code, e.Status)
		}
		if e.Status == 403 || (e.Status == 401 && e.Code != errmap.Unauthenticated) {
			t.Errorf("%s: status %d is redacted by bridges", e.Code, e.Status)
		}
		if e.Summary == "" {
			t.Errorf("%s: no summary", e.Code)
		}
	}
	if len(seen) != 28 {
		t.Errorf("catalogue has %d codes, want the 10 named outcomes, 14 gateway codes and 4 decision outcomes", len(seen))
	}
}

func TestPublishedTable(t *testing.T) {
	// The published contract: changing a row breaks every agent that reads it.
	want := map[errmap.Code]struct {
		status    int
		retryable bool
		next      errmap.NextAction
		queue     string
	}{
		errmap.InvoiceNotFound:      {404, false, errmap.FixInputAndRetry, "ap_queue"},
		errmap.PONotFound:           {404, false, errmap.FixInputAndRetry, "ap_queue"},
		errmap.SupplierNotFound:     {404, false, errmap.FixInputAndRetry, "master_data"},
		errmap.GRMissing:            {409, false, errmap.HoldAndRecheck, ""},
		errmap.POClosed:             {409, false, errmap.RouteToPerson, "procurement"},
		errmap.DuplicateInvoice:     {409, false, errmap.RouteToPerson, "ap_team"},
		errmap.ApproverNotFound:     {422, false, errmap.RouteToPerson, "ap_lead"},
		errmap.ApprovalMissing:      {409, false, errmap.RequestApproval, ""},
		errmap.PeriodClosed:         {409, false, errmap.StopAndEscalate, "finance"},
		errmap.ToleranceExceeded:    {200, false, errmap.RequestApproval, ""},
		errmap.InvalidRequest:       {400, false, errmap.FixInputAndRetry, ""},
		errmap.Unauthenticated:      {401, false, errmap.StopAndEscalate, ""},
		errmap.ScopeMissing:         {409, false, errmap.RouteToPerson, ""},
		errmap.ERPUnavailable:       {503, true, errmap.HoldAndRecheck, ""},
		errmap.ERPOutcomeUnknown:    {502, false, errmap.HoldAndRecheck, ""},
		errmap.ERPConfiguration:     {502, false, errmap.StopAndEscalate, ""},
		errmap.ERPDataInvalid:       {502, false, errmap.StopAndEscalate, ""},
		errmap.LoopDetected:         {409, false, errmap.RouteToPerson, ""},
		errmap.BudgetExhausted:      {409, false, errmap.RouteToPerson, ""},
		errmap.IdempotencyKeyReused: {409, false, errmap.FixInputAndRetry, ""},
		errmap.WriteInProgress:      {409, true, errmap.HoldAndRecheck, ""},
		errmap.RateLimited:          {429, true, errmap.HoldAndRecheck, ""},
		errmap.AuthUnavailable:      {503, true, errmap.HoldAndRecheck, ""},
		errmap.ApprovalDecided:      {409, false, errmap.StopAndEscalate, ""},
		errmap.ApprovalSentBack:     {409, false, errmap.RequestApproval, ""},
		errmap.SegregationOfDuties:  {409, false, errmap.RouteToPerson, ""},
		errmap.Internal:             {500, false, errmap.StopAndEscalate, ""},
	}
	for code, w := range want {
		e, ok := errmap.Lookup(code)
		if !ok {
			t.Errorf("%s missing from the catalogue", code)
			continue
		}
		if e.Status != w.status || e.Retryable != w.retryable || e.NextAction != w.next || e.Queue != w.queue {
			t.Errorf("%s = %d %v %s %q, want %d %v %s %q", code, e.Status, e.Retryable, e.NextAction, e.Queue,
				w.status, w.retryable, w.next, w.queue)
		}
	}
}

func TestWriteFiveFields(t *testing.T) {
	rec := httptest.NewRecorder()
	errmap.Write(rec, errmap.New(errmap.ERPUnavailable, "The ERP is down.", map[string]any{"retry_after_s": 7}))
	if got := rec.Header().Get("Content-Type"); got != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", got)
	}
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "7" {
		t.Errorf("status %d Retry-After %q, want 503 and 7", rec.Code, rec.Header().Get("Retry-After"))
	}
	body := rec.Body.String()
	keys := regexp.MustCompile(`^\{"code":.*,"message":.*,"retryable":.*,"next_action":.*,"details":\{.*\}\}\n$`)
	if !keys.MatchString(body) {
		t.Errorf("body %s does not have the five fields in order", body)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || len(m) != 5 {
		t.Errorf("body has %d top-level fields (%v), want 5", len(m), err)
	}
}

func TestNewWithUnknownCodeIsInternal(t *testing.T) {
	e := errmap.New("NOT_A_CODE", "x", nil)
	if e.Code != errmap.Internal || e.Status != 500 {
		t.Errorf("got %s %d, want INTERNAL 500", e.Code, e.Status)
	}
	if e := errmap.New(errmap.ToleranceExceeded, "x", nil); e.Code != errmap.Internal {
		t.Errorf("TOLERANCE_EXCEEDED as an error = %s, want INTERNAL: it is information, never an error", e.Code)
	}
}

func TestMapDomainErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    errmap.Code
		details map[string]any
	}{
		{"invoice", &erp.NotFoundError{Entity: erp.EntityInvoice, ID: "5105600999"}, errmap.InvoiceNotFound,
			map[string]any{"invoice_id": "5105600999", "queue": "ap_queue"}},
		{"po", &erp.NotFoundError{Entity: erp.EntityPurchaseOrder, ID: "4500019822"}, errmap.PONotFound,
			map[string]any{"po_id": "4500019822", "queue": "ap_queue"}},
		{"po item", &erp.NotFoundError{Entity: erp.EntityPOItem, ID: "4500018822", Item: "30"}, errmap.PONotFound,
			map[string]any{"po_id": "4500018822", "item": "30", "queue": "ap_queue"}},
		{"supplier", &erp.NotFoundError{Entity: erp.EntitySupplier, ID: "100999"}, errmap.SupplierNotFound,
			map[string]any{"supplier_id": "100999", "reason": "not_in_master", "queue": "master_data"}},
		{"blocked supplier", &erp.SupplierBlockedError{SupplierID: "100050", Reason: "posting_blocked"}, errmap.SupplierNotFound,
			map[string]any{"supplier_id": "100050", "reason": "posting_blocked", "queue": "master_data"}},
		{"approval", &erp.NotFoundError{Entity: erp.EntityApproval, ID: "A9"}, errmap.ApprovalMissing,
			map[string]any{"approval_id": "A9", "reason": "unknown"}},
		{"po closed", &erp.POClosedError{POID: "4500018830", Item: "10", Reason: "delivered_and_finally_invoiced"}, errmap.POClosed,
			map[string]any{"po_id": "4500018830", "item": "10", "reason": "delivered_and_finally_invoiced", "queue": "procurement"}},
		{"gr missing", &erp.GRMissingError{POID: "4500018822", Item: "20"}, errmap.GRMissing,
			map[string]any{"po_id": "4500018822", "item": "20"}},
		{"duplicate", &erp.DuplicateInvoiceError{InvoiceID: "5105600107", DuplicateOf: "5105600100", SupplierID: "100043", SupplierRef: "INV-88120"},
			errmap.DuplicateInvoice, map[string]any{"invoice_id": "5105600107", "duplicate_of": "5105600100",
				"supplier_id": "100043", "supplier_ref": "INV-88120", "queue": "ap_team"}},
		{"approval absent", &erp.ApprovalMissingError{InvoiceID: "5105600101", Reason: erp.ApprovalAbsent}, errmap.ApprovalMissing,
			map[string]any{"invoice_id": "5105600101", "reason": "absent"}},
		{"approval pending", &erp.ApprovalMissingError{InvoiceID: "5105600102", ApprovalID: "A2", Reason: erp.ApprovalNotYet}, errmap.ApprovalMissing,
			map[string]any{"invoice_id": "5105600102", "approval_id": "A2", "reason": "pending"}},
		{"approval other invoice", &erp.ApprovalMissingError{InvoiceID: "5105600101", ApprovalID: "A1", Reason: erp.ApprovalOtherInvoice, ForInvoice: "5105600109"},
			errmap.ApprovalMissing, map[string]any{"invoice_id": "5105600101", "approval_id": "A1", "reason": "other_invoice", "approval_invoice_id": "5105600109"}},
		{"approval amount differs", &erp.ApprovalMissingError{InvoiceID: "5105600101", ApprovalID: "A1", Reason: erp.ApprovalAmountDiffers,
			Approved: erp.Money{Amount: decimal.RequireFromString("900"), Currency: "EUR"}, Invoiced: erp.Money{Amount: decimal.RequireFromString("1000"), Currency: "EUR"}},
			errmap.ApprovalMissing, map[string]any{"invoice_id": "5105600101", "approval_id": "A1", "reason": "amount_differs",
				"approved_amount": "900.00", "invoice_amount": "1000.00", "currency": "EUR"}},
		{"wrapped", fmt.Errorf("match: %w", &erp.GRMissingError{POID: "1", Item: "2"}), errmap.GRMissing,
			map[string]any{"po_id": "1", "item": "2"}},
		{"unknown error", errors.New("boom at db-host-17.internal"), errmap.Internal, map[string]any{}},
		{"deadline", context.DeadlineExceeded, errmap.ERPUnavailable, map[string]any{"retry_after_s": 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errmap.Map(tt.err)
			if e.Code != tt.code {
				t.Fatalf("code = %s, want %s", e.Code, tt.code)
			}
			if !reflect.DeepEqual(e.Details, tt.details) {
				t.Errorf("details = %v, want %v", e.Details, tt.details)
			}
			if e.Message == "" || len(e.Message) > 200 {
				t.Errorf("message %q: want 1 to 200 characters", e.Message)
			}
			if strings.Contains(e.Message, "db-host") {
				t.Errorf("message %q leaks the cause", e.Message)
			}
			if !errors.Is(e, tt.err) && e.Cause != tt.err {
				t.Errorf("cause not kept for the log")
			}
		})
	}
	if errmap.Map(nil) != nil {
		t.Error("Map(nil) != nil")
	}
}

// TestMapProcessErrors: the refusals of the gateway's own approval
// routing and records, each with its whole outcome.
func TestMapProcessErrors(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		code      errmap.Code
		status    int
		next      errmap.NextAction
		retryable bool
		details   map[string]any
		mentions  []string // ids the message names
	}{
		{"no approver", &erp.NoApproverError{InvoiceID: "5105600108", CompanyCode: "1010", Amount: decimal.RequireFromString("250000.00")},
			errmap.ApproverNotFound, 422, errmap.RouteToPerson, false,
			map[string]any{"invoice_id": "5105600108", "queue": "ap_lead"}, []string{"5105600108"}},
		{"decided before", &erp.DecisionRefusedError{ApprovalID: "A0000007", Reason: erp.DecisionNotPending,
			Status: erp.ApprovalApproved, Approver: "ap_manager"},
			errmap.ApprovalDecided, 409, errmap.StopAndEscalate, false,
			map[string]any{"approval_id": "A0000007", "reason": "not_pending", "status": "approved"}, []string{"A0000007", "approved"}},
		{"rejected before", &erp.DecisionRefusedError{ApprovalID: "A0000008", Reason: erp.DecisionNotPending,
			Status: erp.ApprovalRejected, Approver: "finance_director"},
			errmap.ApprovalDecided, 409, errmap.StopAndEscalate, false,
			map[string]any{"approval_id": "A0000008", "reason": "not_pending", "status": "rejected"}, []string{"A0000008", "rejected"}},
		{"same requester", &erp.DecisionRefusedError{ApprovalID: "A0000009", Reason: erp.DecisionSameRequester,
			Status: erp.ApprovalPending, Approver: "ap_manager"},
			errmap.SegregationOfDuties, 409, errmap.RouteToPerson, false,
			map[string]any{"approval_id": "A0000009", "reason": "same_requester", "status": "pending", "approver": "ap_manager"},
			[]string{"A0000009", "ap_manager"}},
		{"wrapped same requester", fmt.Errorf("decide: %w", &erp.DecisionRefusedError{ApprovalID: "A0000010",
			Reason: erp.DecisionSameRequester, Status: erp.ApprovalPending, Approver: "finance_director"}),
			errmap.SegregationOfDuties, 409, errmap.RouteToPerson, false,
			map[string]any{"approval_id": "A0000010", "reason": "same_requester", "status": "pending", "approver": "finance_director"},
			[]string{"A0000010", "finance_director"}},
		{"sent back", fmt.Errorf("post: %w", &erp.ApprovalSentBackError{ApprovalID: "A0000011", InvoiceID: "5105600102",
			Question: "Which clause allows the 8 % surcharge?", AskedBy: "m.keller",
			AskedAt: time.Date(2026, 3, 2, 9, 15, 0, 0, time.FixedZone("CET", 3600))}),
			errmap.ApprovalSentBack, 409, errmap.RequestApproval, false,
			map[string]any{"approval_id": "A0000011", "invoice_id": "5105600102", "question": "Which clause allows the 8 % surcharge?",
				"asked_by": "m.keller", "asked_at": "2026-03-02T08:15:00Z"},
			[]string{"A0000011", "details.question", "request_approval"}},
		{"invoice posted", &erp.InvoicePostedError{InvoiceID: "5105600100"},
			errmap.InvalidRequest, 400, errmap.FixInputAndRetry, false,
			map[string]any{"invoice_id": "5105600100", "reason": "already_posted"}, []string{"5105600100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := errmap.Map(tt.err)
			if e.Code != tt.code {
				t.Fatalf("code = %s, want %s", e.Code, tt.code)
			}
			if e.Status != tt.status || e.NextAction != tt.next || e.Retryable != tt.retryable {
				t.Errorf("status %d next_action %s retryable %v, want %d %s %v", e.Status, e.NextAction, e.Retryable,
					tt.status, tt.next, tt.retryable)
			}
			if !reflect.DeepEqual(e.Details, tt.details) {
				t.Errorf("details = %v, want %v", e.Details, tt.details)
			}
			if e.Message == "" || len(e.Message) > 200 {
				t.Errorf("message %q: want 1 to 200 characters", e.Message)
			}
			for _, id := range tt.mentions {
				if !strings.Contains(e.Message, id) {
					t.Errorf("message %q does not name %s", e.Message, id)
				}
			}
			if !errors.Is(e, tt.err) {
				t.Errorf("cause not kept for the log")
			}
			b := e.Body()
			if b.Code != tt.code || b.NextAction != tt.next || b.Retryable != tt.retryable {
				t.Errorf("body = %+v, want code %s next_action %s retryable %v", b, tt.code, tt.next, tt.retryable)
			}
		})
	}
}

func TestMapUpstream(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	keys := map[string]string{"invoice_id": "5105600109"}
	tests := []struct {
		name string
		err  *erp.UpstreamError
		code errmap.Code
	}{
		{"period closed F5/201", &erp.UpstreamError{Status: 400, MessageIDs: []string{"F5/201"}, Keys: keys}, errmap.PeriodClosed},
		{"period closed M7/053", &erp.UpstreamError{Status: 400, MessageIDs: []string{"M7/053"}, Keys: keys}, errmap.PeriodClosed},
		{"period closed M8/535", &erp.UpstreamError{Status: 400, MessageIDs: []string{"M8/535"}, Keys: keys}, errmap.PeriodClosed},
		{"duplicate M8/108", &erp.UpstreamError{Status: 400, MessageIDs: []string{"M8/108"}, Keys: keys}, errmap.DuplicateInvoice},
		{"duplicate F5/117", &erp.UpstreamError{Status: 400, MessageIDs: []string{"F5/117"}, Keys: keys}, errmap.DuplicateInvoice},
		{"po 06/019", &erp.UpstreamError{Status: 404, MessageIDs: []string{"06/019"}, Body: erp.BodySAPError, Call: erp.CallEntity,
			Keys: map[string]string{"po_id": "4500019822"}}, errmap.PONotFound},
		{"po 06/011", &erp.UpstreamError{Status: 400, MessageIDs: []string{"06/011"}}, errmap.PONotFound},
		{"po M8/311", &erp.UpstreamError{Status: 400, MessageIDs: []string{"M8/311"}}, errmap.PONotFound},
		{"po closed 06/020", &erp.UpstreamError{Status: 400, MessageIDs: []string{"06/020"}}, errmap.POClosed},
		{"supplier 06/025", &erp.UpstreamError{Status: 400, MessageIDs: []string{"06/025"}}, errmap.SupplierNotFound},
		{"supplier 06/027", &erp.UpstreamError{Status: 400, MessageIDs: []string{"06/027"}}, errmap.SupplierNotFound},
		{"gr M8/081", &erp.UpstreamError{Status: 400, MessageIDs: []string{"M8/081"}, Keys: map[string]string{"po_id": "4500018822", "item": "20"}}, errmap.GRMissing},
		{"supplier blocked F5/351", &erp.UpstreamError{Status: 400, MessageIDs: []string{"F5/351"}}, errmap.SupplierNotFound},
		{"second id decides", &erp.UpstreamError{Status: 400, MessageIDs: []string{"/IWBEP/CX_MGW_BUSI_EXCEPTION", "M8/108"}}, errmap.DuplicateInvoice},
		{"404 invoice", &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Status: 404, Body: erp.BodySAPError, Call: erp.CallEntity,
			Keys: keys}, errmap.InvoiceNotFound},
		{"404 po", &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Status: 404, Body: erp.BodySAPError, Call: erp.CallEntity,
			Keys: map[string]string{"po_id": "4500019822"}}, errmap.PONotFound},
		{"404 supplier", &erp.UpstreamError{Service: erp.ServiceBusinessPartner, Status: 404, Body: erp.BodySAPError, Call: erp.CallEntity,
			Keys: map[string]string{"supplier_id": "100999"}}, errmap.SupplierNotFound},
		{"404 of a list", &erp.UpstreamError{Service: erp.ServiceBusinessPartner, Status: 404, Body: erp.BodySAPError, Call: erp.CallList,
			Keys: map[string]string{"supplier_id": "100999"}}, errmap.ERPConfiguration},
		{"404 without a body kind", &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Status: 404, Call: erp.CallEntity, Keys: keys},
			errmap.ERPConfiguration},
		{"404 about no ERP entity", &erp.UpstreamError{Status: 404, Body: erp.BodySAPError, Call: erp.CallEntity,
			Keys: map[string]string{"approval_id": "A1"}}, errmap.Internal},
		{"429", &erp.UpstreamError{Status: 429, Transient: true, RetryAfter: 2 * time.Second}, errmap.ERPUnavailable},
		{"503", &erp.UpstreamError{Status: 503, Transient: true}, errmap.ERPUnavailable},
		{"html 500", &erp.UpstreamError{Status: 500, Transient: true}, errmap.ERPUnavailable},
		{"read timeout", &erp.UpstreamError{Timeout: true, Transient: true}, errmap.ERPUnavailable},
		{"read reset", &erp.UpstreamError{Transient: true, Err: reset}, errmap.ERPUnavailable},
		{"write timeout", &erp.UpstreamError{Write: true, Timeout: true, Unconfirmed: true, Keys: keys}, errmap.ERPOutcomeUnknown},
		{"write reset", &erp.UpstreamError{Write: true, Transient: true, Unconfirmed: true, Err: reset}, errmap.ERPOutcomeUnknown},
		{"write refused", &erp.UpstreamError{Write: true, Transient: true, Err: dial}, errmap.ERPUnavailable},
		{"write malformed 200", &erp.UpstreamError{Write: true, Status: 200, Unconfirmed: true}, errmap.ERPOutcomeUnknown},
		{"write timeout reconciled as not applied", &erp.UpstreamError{Write: true, Timeout: true}, errmap.ERPUnavailable},
		{"write 503", &erp.UpstreamError{Write: true, Status: 503, Transient: true}, errmap.ERPUnavailable},
		{"our bad request", &erp.UpstreamError{Status: 400, MessageIDs: []string{"/IWBEP/CM_MGW_RT/001"}}, errmap.Internal},
		{"erp auth", &erp.UpstreamError{Status: 401}, errmap.ERPConfiguration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.err.Text = "Detail at sapprd01.corp.example:44300 txn 0A1B2C"
			e := errmap.Map(tt.err)
			if e.Code != tt.code {
				t.Fatalf("code = %s, want %s", e.Code, tt.code)
			}
			body := string(e.Marshal())
			if strings.Contains(body, "sapprd01") || strings.Contains(body, "0A1B2C") {
				t.Errorf("body leaks upstream text: %s", body)
			}
		})
	}
	e := errmap.Map(&retry.Error{Attempts: 3, Err: &erp.UpstreamError{Status: 429, Transient: true, RetryAfter: 1500 * time.Millisecond}})
	if e.Details["retry_after_s"] != 2 || e.Details["attempts"] != 3 || !e.Retryable {
		t.Errorf("429 details = %v retryable %v, want retry_after_s 2, attempts 3, retryable", e.Details, e.Retryable)
	}
}

func TestRetryLayer(t *testing.T) {
	e := errmap.Map(&retry.Error{Service: erp.ServicePurchaseOrder, Operation: "read purchase order", BreakerOpen: true,
		RetryAfter: 3500 * time.Millisecond, Err: retry.ErrBreakerOpen})
	if e.Code != errmap.ERPUnavailable || e.Details["breaker"] != "open" || e.Details["retry_after_s"] != 4 ||
		e.Details["attempts"] != 0 || e.Details["service"] != "purchase_order" {
		t.Errorf("breaker open = %s %v, want ERP_UNAVAILABLE with breaker open, retry_after_s 4, attempts 0", e.Code, e.Details)
	}
	e = errmap.Map(&retry.Error{Write: true, Attempts: 2, Unconfirmed: true,
		Err: &erp.UpstreamError{Write: true, Timeout: true, Operation: "release invoice"}})
	if e.Code != errmap.ERPOutcomeUnknown || e.Details["attempts"] != 2 {
		t.Errorf("unconfirmed write = %s %v, want ERP_OUTCOME_UNKNOWN after 2 attempts", e.Code, e.Details)
	}
}

func TestInfo(t *testing.T) {
	for _, id := range []string{"M8/081", "M8/082", "M8/083", "M8/194"} {
		if got := errmap.Info([]erp.Message{{ID: id, Severity: "warning"}}, ""); got != errmap.ToleranceExceeded {
			t.Errorf("warning %s = %q, want TOLERANCE_EXCEEDED", id, got)
		}
	}
	if got := errmap.Info(nil, "R"); got != errmap.ToleranceExceeded {
		t.Errorf("payment block R = %q, want TOLERANCE_EXCEEDED", got)
	}
	if got := errmap.Info([]erp.Message{{ID: "F5/263", Severity: "info"}}, ""); got != "" {
		t.Errorf("unrelated message = %q, want none", got)
	}
}

func TestProtocolStatuses(t *testing.T) {
	for _, s := range []int{404, 405, 413, 415} {
		if got := errmap.Protocol(s, "m", nil).Status; got != s {
			t.Errorf("Protocol(%d) status = %d", s, got)
		}
	}
	if got := errmap.Protocol(http.StatusTeapot, "m", nil).Status; got != 400 {
		t.Errorf("Protocol(418) status = %d, want 400", got)
	}
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestMapOfANamedErrorEnds(t *testing.T) {
	e := errmap.Invalid("reason", "is empty")
	got := errmap.Map(e)
	var up *erp.UpstreamError
	if got != e || errors.As(got, &up) {
		t.Fatalf("Map(named) = %v, want the same error", got)
	}
	if got.Cause != nil {
		t.Errorf("a named error became its own cause")
	}
}

// TestInvalidPage checks the statuses a console page's INVALID_REQUEST may
// have, and that any other is 400.
func TestInvalidPage(t *testing.T) {
	for status, want := range map[int]int{403: 403, 404: 404, 409: 409, 418: 400, 500: 400} {
		e := errmap.InvalidPage(status, "note", "must say what was done")
		if e.Status != want || e.Code != errmap.InvalidRequest || e.NextAction != errmap.FixInputAndRetry ||
			e.Details["field"] != "note" {
			t.Errorf("InvalidPage(%d): %d %s %s %v, want %d INVALID_REQUEST naming note", status, e.Status, e.Code, e.NextAction, e.Details, want)
		}
	}
}
