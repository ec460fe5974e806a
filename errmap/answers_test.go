package errmap

import (
	"net/http"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// answerCalls are the calls of the answer tests: a read of one purchase
// order, a search over the supplier master, and the function import Post.
var answerCalls = []struct {
	kind     erp.CallKind
	service  erp.Service
	keys     map[string]string
	write    bool
	notFound Code // the NOT_FOUND of the entity the call names
}{
	{erp.CallEntity, erp.ServicePurchaseOrder, map[string]string{"po_id": "4500018822"}, false, PONotFound},
	{erp.CallList, erp.ServiceBusinessPartner, nil, false, ""},
	{erp.CallFunction, erp.ServiceSupplierInvoice, map[string]string{"invoice_id": "5105600101"}, true, InvoiceNotFound},
}

// TestAnswerTable holds every cell of the table of answers to what the
// agent is told: for each status, each kind of body and each kind of call,
// with no message id, and with a business message id (M8/108, a
// duplicate) that only SAP Gateway's own error may carry. In want, each
// body's cell is three letters, for an entity read, a list read and a
// function import: N the entity's NOT_FOUND, C ERP_CONFIGURATION, U
// ERP_UNAVAILABLE after the client's retries, S ERP_UNAVAILABLE from SAP's
// own failure, I INTERNAL (SAP refused what the gateway should not have
// sent).
func TestAnswerTable(t *testing.T) {
	want := []struct {
		statuses               []int
		sap, json, text, empty string
	}{
		{[]int{301, 302, 307}, "CCC", "CCC", "CCC", "CCC"},
		{[]int{401, 403, 407}, "CCC", "CCC", "CCC", "CCC"},
		{[]int{404}, "NCN", "CCC", "CCC", "CCC"},
		{[]int{405}, "CCC", "CCC", "CCC", "CCC"},
		{[]int{400, 409, 410, 412, 415, 422}, "III", "CCC", "CCC", "CCC"},
		{[]int{429}, "UUU", "UUU", "UUU", "UUU"},
		{[]int{500, 505, 507}, "SSS", "UUU", "UUU", "UUU"},
		{[]int{501}, "CCC", "CCC", "CCC", "CCC"},
		{[]int{502, 503, 504}, "UUU", "UUU", "UUU", "UUU"},
	}
	classes := map[statusClass]bool{}
	for _, row := range want {
		for _, status := range row.statuses {
			class, ok := classOf(status)
			if !ok {
				t.Fatalf("status %d is in no class", status)
			}
			classes[class] = true
			for b, body := range bodies {
				letters := []string{row.sap, row.json, row.text, row.empty}[b]
				for c, call := range answerCalls {
					letter := letters[c]
					u := &erp.UpstreamError{Service: call.service, Operation: "call", Write: call.write, Status: status,
						Body: body, Call: call.kind, Keys: call.keys, Transient: letter == 'U'}
					e := Map(&retry.Error{Attempts: 3, Err: u})
					checkAnswer(t, status, body, call.kind, letter, call.notFound, call.service, e)

					// A business message id names the outcome of SAP
					// Gateway's own business answers, and of nothing else.
					u.MessageIDs = []string{"M8/108"}
					e = Map(&retry.Error{Attempts: 3, Err: u})
					if letter == 'N' || letter == 'S' || letter == 'I' {
						if e.Code != DuplicateInvoice {
							t.Errorf("%d %s %s with M8/108: %s, want DUPLICATE_INVOICE", status, body, call.kind, e.Code)
						}
						continue
					}
					checkAnswer(t, status, body, call.kind, letter, call.notFound, call.service, e)
				}
			}
		}
	}
	// Every cell of the table is held to a want.
	for class := range statusClasses {
		if !classes[class] {
			t.Errorf("status class %d has no status in want", class)
		}
		for _, body := range bodies {
			if _, ok := answers[class][body]; !ok {
				t.Errorf("table has no row for status class %d and body %s", class, body)
			}
		}
	}
}

func checkAnswer(t *testing.T, status int, body erp.AnswerBody, call erp.CallKind, letter byte, notFound Code, svc erp.Service, e *Error) {
	t.Helper()
	at := func() string { return http.StatusText(status) + " " + string(body) + " " + string(call) }
	switch letter {
	case 'N':
		if e.Code != notFound {
			t.Errorf("%d %s: %s, want %s", status, at(), e.Code, notFound)
		}
	case 'C':
		if e.Code != ERPConfiguration || e.Retryable || e.Status != http.StatusBadGateway || e.Details["service"] != string(svc) {
			t.Errorf("%d %s: %s %d retryable %v %v, want ERP_CONFIGURATION naming %s", status, at(), e.Code, e.Status, e.Retryable, e.Details, svc)
		}
	case 'U', 'S':
		if e.Code != ERPUnavailable || !e.Retryable || e.Details["service"] != string(svc) || e.Details["attempts"] != 3 {
			t.Errorf("%d %s: %s retryable %v %v, want ERP_UNAVAILABLE after 3 attempts", status, at(), e.Code, e.Retryable, e.Details)
		}
	case 'I':
		if e.Code != Internal {
			t.Errorf("%d %s: %s, want INTERNAL", status, at(), e.Code)
		}
	default:
		t.Fatalf("unknown letter %c", letter)
	}
}

// TestAnswerUnconfirmedWrite: a write whose earlier attempt may have been
// applied is ERP_OUTCOME_UNKNOWN when its last answer is one that may pass
// or SAP's own failure without a business message, and what the table
// says otherwise: a business answer, or a fault of configuration.
func TestAnswerUnconfirmedWrite(t *testing.T) {
	keys := map[string]string{"invoice_id": "5105600101"}
	tests := []struct {
		status int
		body   erp.AnswerBody
		ids    []string
		want   Code
	}{
		{503, erp.BodySAPError, nil, ERPOutcomeUnknown},
		{504, erp.BodyText, nil, ERPOutcomeUnknown},
		{500, erp.BodySAPError, nil, ERPOutcomeUnknown},
		{500, erp.BodyText, nil, ERPOutcomeUnknown},
		{400, erp.BodySAPError, []string{"M8/108"}, DuplicateInvoice},
		{400, erp.BodySAPError, []string{"/IWBEP/CM_MGW_RT/001"}, ERPOutcomeUnknown},
		{404, erp.BodySAPError, nil, InvoiceNotFound},
		{404, erp.BodyText, nil, ERPConfiguration},
		{403, erp.BodySAPError, nil, ERPConfiguration},
		{0, erp.BodyUnknown, nil, ERPOutcomeUnknown},
		{200, erp.BodyUnknown, nil, ERPOutcomeUnknown},
	}
	for _, tt := range tests {
		u := &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Operation: "post invoice", Write: true, Status: tt.status,
			Body: tt.body, Call: erp.CallFunction, MessageIDs: tt.ids, Keys: keys}
		if e := Map(&retry.Error{Write: true, Attempts: 2, Unconfirmed: true, Err: u}); e.Code != tt.want {
			t.Errorf("%d %s %v: %s, want %s", tt.status, tt.body, tt.ids, e.Code, tt.want)
		}
	}
}

// TestAnswerWithoutKinds: an error that does not say its body or its call
// is read the way that never makes a fault a business answer: its body is
// SAP Gateway's only when it carries message ids, a read is a list read.
func TestAnswerWithoutKinds(t *testing.T) {
	po := map[string]string{"po_id": "4500018822"}
	tests := []struct {
		name string
		u    *erp.UpstreamError
		want Code
	}{
		{"404 read, no ids", &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Status: 404, Keys: po}, ERPConfiguration},
		{"404 read of an entity, no ids", &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Status: 404, Call: erp.CallEntity, Keys: po}, ERPConfiguration},
		{"404 read of an entity, SAP's id", &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Status: 404, Call: erp.CallEntity,
			MessageIDs: []string{"/IWBEP/CM_MGW_RT/020"}, Keys: po}, PONotFound},
		{"404 read with a business id", &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Status: 404, MessageIDs: []string{"06/019"}, Keys: po}, ERPConfiguration},
		{"404 write with SAP's id", &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Status: 404, Write: true,
			MessageIDs: []string{"/IWBEP/CM_MGW_RT/020"}, Keys: map[string]string{"invoice_id": "5105600101"}}, InvoiceNotFound},
		{"400 with a business id", &erp.UpstreamError{Status: 400, MessageIDs: []string{"06/011"}}, PONotFound},
		{"400 without", &erp.UpstreamError{Status: 400}, ERPConfiguration},
		{"500 without", &erp.UpstreamError{Status: 500, Transient: true}, ERPUnavailable},
	}
	for _, tt := range tests {
		if e := Map(tt.u); e.Code != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, e.Code, tt.want)
		}
	}
}

// TestDataInvalid: a record the ERP's answer holds that cannot be read is
// ERP_DATA_INVALID, not retryable, naming the service, the kind of record
// and the ids of the call, never the record's data; inside the retry
// layer's error or on its own.
func TestDataInvalid(t *testing.T) {
	de := &erp.DataError{Service: erp.ServicePurchaseOrder, Entity: erp.EntityPurchaseOrder,
		Key: "PurchaseOrder='4500018822'", Err: errString("cannot unmarshal JSON string \"yes\" into Go bool")}
	tests := []struct {
		name    string
		err     error
		details map[string]any
		message string
	}{
		{"read", &retry.Error{Attempts: 1, Err: &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Operation: "read purchase order",
			Status: 200, Keys: map[string]string{"po_id": "4500018822"}, Err: de}},
			map[string]any{"service": "purchase_order", "entity": "purchase_order", "po_id": "4500018822"},
			"The ERP's answer for PO 4500018822 cannot be read; a person must look at the record. Do not retry."},
		{"supplier", &erp.UpstreamError{Service: erp.ServiceBusinessPartner, Status: 200, Keys: map[string]string{"supplier_id": "100042"},
			Err: &erp.DataError{Service: erp.ServiceBusinessPartner, Entity: erp.EntitySupplier, Err: errString("x")}},
			map[string]any{"service": "business_partner", "entity": "supplier", "supplier_id": "100042"},
			"The ERP's answer for supplier 100042 cannot be read; a person must look at the record. Do not retry."},
		{"alone", de, map[string]any{"service": "purchase_order", "entity": "purchase_order"},
			"The ERP's answer for a purchase order record cannot be read; a person must look at the record. Do not retry."},
	}
	for _, tt := range tests {
		e := Map(tt.err)
		if e.Code != ERPDataInvalid || e.Retryable || e.Status != http.StatusBadGateway || e.NextAction != StopAndEscalate {
			t.Errorf("%s: %s %d retryable %v %s, want ERP_DATA_INVALID 502 not retryable stop_and_escalate",
				tt.name, e.Code, e.Status, e.Retryable, e.NextAction)
		}
		if len(e.Details) != len(tt.details) {
			t.Errorf("%s: details %v, want %v", tt.name, e.Details, tt.details)
		}
		for k, v := range tt.details {
			if e.Details[k] != v {
				t.Errorf("%s: details %v, want %v", tt.name, e.Details, tt.details)
			}
		}
		if e.Message != tt.message {
			t.Errorf("%s: message %q, want %q", tt.name, e.Message, tt.message)
		}
	}
	// A write whose answer could not be read may have been applied: that
	// is not bad data but an outcome to settle.
	w := &retry.Error{Write: true, Attempts: 1, Unconfirmed: true, Err: &erp.UpstreamError{Service: erp.ServiceSupplierInvoice,
		Write: true, Status: 200, Keys: map[string]string{"invoice_id": "5105600101"}, Err: de}}
	if e := Map(w); e.Code != ERPOutcomeUnknown {
		t.Errorf("unconfirmed write: %s, want ERP_OUTCOME_UNKNOWN", e.Code)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
