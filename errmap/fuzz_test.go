package errmap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// mapInput is one fuzzed failure from the ERP layer.
type mapInput struct {
	kind       uint8 // which error type
	variant    uint8 // entity, reason, flags: what the kind needs
	wrap       uint8 // how the error reaches Map
	status     int
	ids        [2]string // message ids
	invoiceID  string
	poID       string
	item       string
	supplierID string
	approvalID string
	text       string // the ERP's own wording: never to be written
	retryAfter int64  // nanoseconds
	attempts   int
}

var (
	fuzzServices   = []erp.Service{"", erp.ServiceSupplierInvoice, erp.ServicePurchaseOrder, erp.ServiceMaterialDocument, erp.ServiceBusinessPartner}
	fuzzOperations = []string{"", "read invoice", "release invoice", "read purchase order", "read goods receipts", "read supplier"}
	fuzzEntities   = []erp.Entity{erp.EntityInvoice, erp.EntityPurchaseOrder, erp.EntityPOItem, erp.EntitySupplier, erp.EntityApproval, erp.EntityHold, erp.EntityHandover, "other"}
	fuzzReasons    = []string{erp.ApprovalAbsent, erp.ApprovalUnknown, erp.ApprovalNotYet, erp.ApprovalWasRejected, erp.ApprovalOtherInvoice, ""}
	fuzzDecisions  = []string{erp.DecisionNotPending, erp.DecisionSameRequester, ""}
	fuzzApprStatus = []erp.ApprovalStatus{erp.ApprovalPending, erp.ApprovalApproved, erp.ApprovalRejected, ""}
)

// build returns the error the input describes. With withText false the
// ERP's wording is left out, so that the two can be compared.
func (in mapInput) build(withText bool) error {
	text := ""
	if withText {
		text = in.text
	}
	v := int(in.variant)
	var err error
	switch in.kind % 11 {
	case 0, 1, 2, 3: // the common case: an answer or a failure on the way
		keys := map[string]string{}
		for k, val := range map[string]string{"invoice_id": in.invoiceID, "po_id": in.poID, "item": in.item,
			"supplier_id": in.supplierID, "approval_id": in.approvalID} {
			if val != "" {
				keys[k] = val
			}
		}
		up := &erp.UpstreamError{Service: fuzzServices[v%len(fuzzServices)], Operation: fuzzOperations[(v/8)%len(fuzzOperations)],
			Write: v&1 != 0, Status: in.status, Keys: keys, Transient: v&2 != 0, Timeout: v&4 != 0,
			RetryAfter: time.Duration(in.retryAfter), Attempts: in.attempts, Unconfirmed: v&32 != 0,
			Text: text}
		for _, id := range in.ids {
			if id != "" {
				up.MessageIDs = append(up.MessageIDs, id)
			}
		}
		if withText && in.text != "" {
			up.Err = errors.New(in.text)
		}
		err = up
		if v&16 != 0 {
			err = &retry.Error{Service: up.Service, Operation: up.Operation, Write: up.Write, Attempts: in.attempts,
				BreakerOpen: true, RetryAfter: time.Duration(in.retryAfter), Err: retry.ErrBreakerOpen}
		} else if v&64 != 0 {
			err = &retry.Error{Service: up.Service, Attempts: in.attempts, Unconfirmed: v&128 != 0, Err: up}
		}
	case 4:
		err = &erp.NotFoundError{Entity: fuzzEntities[v%len(fuzzEntities)], ID: in.invoiceID, Item: in.item}
	case 5:
		err = &erp.SupplierBlockedError{SupplierID: in.supplierID, Reason: in.poID}
	case 6:
		err = &erp.POClosedError{POID: in.poID, Item: in.item, Reason: in.supplierID}
	case 7:
		err = &erp.GRMissingError{POID: in.poID, Item: in.item}
	case 8:
		if v&1 == 0 {
			err = &erp.DuplicateInvoiceError{InvoiceID: in.invoiceID, DuplicateOf: in.poID, SupplierID: in.supplierID, SupplierRef: in.item}
		} else {
			err = &erp.ApprovalMissingError{InvoiceID: in.invoiceID, ApprovalID: in.approvalID,
				Reason: fuzzReasons[(v/2)%len(fuzzReasons)], ForInvoice: in.poID}
		}
	case 9: // failures that are no ERP answer at all
		switch v % 4 {
		case 0:
			err = context.DeadlineExceeded
		case 1:
			err = context.Canceled
		case 2:
			err = errors.New(text)
		default:
			cat := errmap.Catalogue()
			e := cat[v%len(cat)]
			err = errmap.New(e.Code, "A named error from a handler.", map[string]any{"n": v})
		}
	case 10: // the refusals of the gateway's own approval routing and records
		switch v % 3 {
		case 0:
			amount, derr := decimal.NewFromString(in.item)
			if derr != nil {
				amount = decimal.NewFromInt(int64(in.attempts))
			}
			err = &erp.NoApproverError{InvoiceID: in.invoiceID, CompanyCode: in.poID, Amount: amount}
		case 1:
			err = &erp.DecisionRefusedError{ApprovalID: in.approvalID, Reason: fuzzDecisions[(v/3)%len(fuzzDecisions)],
				Status: fuzzApprStatus[(v/9)%len(fuzzApprStatus)], Approver: in.supplierID}
		default:
			err = &erp.InvoicePostedError{InvoiceID: in.invoiceID}
		}
	}
	switch in.wrap % 4 {
	case 1:
		err = fmt.Errorf("sap: %w", err)
	case 2:
		err = errors.Join(errors.New("first"), err)
	case 3:
		err = fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, err)
	}
	return err
}

// boundedIDs reports whether every id the message may name is of a length
// an ERP id can have.
func (in mapInput) boundedIDs() bool {
	for _, s := range []string{in.invoiceID, in.poID, in.item, in.supplierID, in.approvalID} {
		if len(s) > 40 {
			return false
		}
	}
	return true
}

func FuzzMap(f *testing.F) {
	add := func(kind, variant, wrap uint8, status int, id1, id2, inv, po, item, sup, appr, text string, ra int64, attempts int) {
		f.Add(kind, variant, wrap, status, id1, id2, inv, po, item, sup, appr, text, ra, attempts)
	}
	leak := "Detail at sapprd01.corp.example:44300 txn 0A1B2C"
	add(0, 1, 0, 400, "F5/201", "", "5105600109", "", "", "", "", leak, 0, 1)
	add(0, 1, 0, 400, "/IWBEP/CX_MGW_BUSI_EXCEPTION", "M8/108", "5105600107", "", "", "", "", leak, 0, 1)
	add(0, 2, 0, 404, "06/019", "", "", "4500019822", "10", "", "", "", 0, 1)
	add(0, 4, 0, 404, "", "", "", "", "", "100999", "", leak, 0, 1)
	add(0, 5, 0, 404, "", "", "", "", "", "", "A1", "", 0, 1)
	add(0, 2, 1, 429, "", "", "", "", "", "", "", "Rate limit", int64(1500*time.Millisecond), 3)
	add(0, 51, 0, 0, "", "", "5105600105", "", "", "", "", "dial tcp 127.0.0.1:44300: connect: connection refused", 0, 3)
	add(0, 18, 0, 503, "", "", "", "", "", "", "", "", int64(4*time.Second), 0)
	add(0, 1, 0, 200, "", "", "5105600101", "", "", "", "", "malformed response", 0, 1)
	add(0, 0, 0, 401, "", "", "", "", "", "", "", "Unauthorized user SAPUSER password s3cret", 0, 1)
	add(0, 1, 0, 400, "06/025", "", "5105600104", "", "", "100999", "", "", 0, 1)
	add(0, 1, 0, 400, "M8/255", "", "5105600100", "", "", "", "", leak, 0, 1)
	add(0, 1, 0, 400, "M8/081", "", "", "4500018822", "20", "", "", "", -1, -1)
	add(0, 3, 0, 503, "", "", "", "", "", "", "", "", 1<<62, 1<<40)
	add(4, 2, 0, 0, "", "", "4500019822", "", "10", "", "", "", 0, 0)
	add(5, 0, 0, 0, "", "", "", "posting_blocked", "", "100042", "", "", 0, 0)
	add(6, 0, 0, 0, "", "", "", "4500018830", "10", "finally_invoiced", "", "", 0, 0)
	add(7, 0, 2, 0, "", "", "", "4500018822", "20", "", "", "", 0, 0)
	add(8, 0, 0, 0, "", "", "5105600107", "5105600100", "INV-2026-0107", "100042", "", "", 0, 0)
	add(8, 9, 0, 0, "", "", "5105600101", "5105600102", "", "", "APR-1", "", 0, 0)
	add(9, 2, 0, 0, "", "", "", "", "", "", "", "nil map in handler\ngoroutine 7 [running]", 0, 0)
	add(9, 0, 3, 0, "", "", "", "", "", "", "", "", 0, 0)
	add(0, 1, 0, 400, "M8/108", "", "5105600101\"},\"code\":\"OK", "", "", "", "", "\xff\xfe\u2028", 0, 1)
	add(10, 0, 0, 0, "", "", "5105600108", "1010", "250000.00", "", "", "", 0, 0)
	add(10, 1, 1, 0, "", "", "", "", "", "ap_manager", "A0000007", "", 0, 0)
	add(10, 4, 2, 0, "", "", "", "", "", "finance_director", "A0000009", "", 0, 0)
	add(10, 2, 3, 0, "", "", "5105600100", "", "", "", "", "", 0, 0)

	f.Fuzz(func(t *testing.T, kind, variant, wrap uint8, status int, id1, id2, inv, po, item, sup, appr, text string, ra int64, attempts int) {
		in := mapInput{kind: kind, variant: variant, wrap: wrap, status: status, ids: [2]string{id1, id2}, invoiceID: inv,
			poID: po, item: item, supplierID: sup, approvalID: appr, text: text, retryAfter: ra, attempts: attempts}
		err := in.build(true)
		e := errmap.Map(err)
		if e == nil {
			t.Fatalf("Map(%v) = nil", err)
		}
		entry, ok := errmap.Lookup(e.Code)
		if !ok || !entry.Error {
			t.Fatalf("code %q is not an error of the catalogue", e.Code)
		}
		if e.Status != entry.Status && !(e.Code == errmap.InvalidRequest && e.Status >= 400 && e.Status < 500) {
			t.Errorf("%s has status %d, the catalogue says %d", e.Code, e.Status, entry.Status)
		}
		if !unwrapEnds(e) {
			t.Fatalf("unwrapping Map's result of %T (wrap %d) does not end", err, wrap%4)
		}
		body := e.Marshal()
		b := fiveFields(t, body)
		if b.Code != e.Code {
			t.Errorf("Marshal wrote %s for %s: its details do not encode", b.Code, e.Code)
		}
		if n := utf8.RuneCountInString(b.Message); n == 0 || (n > 300 && in.boundedIDs()) {
			t.Errorf("message of %d characters: %q", n, b.Message)
		}
		// The ERP's wording decides nothing and is never written: the body
		// is the same without it.
		if without := errmap.Map(in.build(false)).Marshal(); !bytes.Equal(body, without) {
			t.Errorf("the ERP's text changed the body:\nwith:    %s\nwithout: %s", body, without)
		}
	})
}

// unwrapEnds reports whether every chain of Unwrap from err ends within a
// bound, as errors.Is and errors.As need it to.
func unwrapEnds(err error) bool {
	steps := 0
	var walk func(error) bool
	walk = func(err error) bool {
		for err != nil {
			if steps++; steps > 1000 {
				return false
			}
			switch x := err.(type) {
			case interface{ Unwrap() []error }:
				for _, e := range x.Unwrap() {
					if !walk(e) {
						return false
					}
				}
				return true
			case interface{ Unwrap() error }:
				err = x.Unwrap()
			default:
				return true
			}
		}
		return true
	}
	return walk(err)
}

// fiveFields decodes body, failing unless it is exactly the five fields in
// their published order.
func fiveFields(t *testing.T, body []byte) errmap.Body {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	var b errmap.Body
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("body is not a JSON object: %s", body)
	}
	targets := []any{&b.Code, &b.Message, &b.Retryable, &b.NextAction, &b.Details}
	for i, name := range []string{"code", "message", "retryable", "next_action", "details"} {
		if tok, err := dec.Token(); err != nil || tok != name {
			t.Fatalf("field %d is %v, want %s: %s", i, tok, name, body)
		}
		if err := dec.Decode(targets[i]); err != nil {
			t.Fatalf("field %s: %v: %s", name, err, body)
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		t.Fatalf("more than five fields: %s", body)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("data after the body: %s", body)
	}
	if b.Details == nil {
		t.Fatalf("details is not an object: %s", body)
	}
	return b
}

// TestMapCauseChainEnds: Map keeps the cause of a named error for the log;
// the cause must never lead back to the error itself, or errors.Is and
// errors.As on it (as the access log does) never return.
func TestMapCauseChainEnds(t *testing.T) {
	for name, err := range map[string]error{
		"named":         errmap.Invalid("reason", "must be 3 to 200 characters"),
		"wrapped named": fmt.Errorf("decode: %w", errmap.Invalid("reason", "must be 3 to 200 characters")),
		"joined named":  errors.Join(errors.New("first"), errmap.New(errmap.LoopDetected, "Loop.", nil)),
	} {
		e := errmap.Map(err)
		if !unwrapEnds(e) {
			t.Errorf("%s: Map's result is its own cause, by way of what wraps it", name)
		}
	}
}
