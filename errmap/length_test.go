package errmap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// headLimit is how much of a body some OpenAPI-to-MCP bridges pass on:
// code, retryable and next_action must arrive within it.
const headLimit = HeadLimit

// Long but realistic values: 10-digit SAP document and partner ids, the
// longest service, operation, status and group names the gateway uses.
const (
	longInvoice  = "5105609999"
	longInvoice2 = "5105608888"
	longPO       = "4500099999"
	longItem     = "00010"
	longSupplier = "1000099999"
	longApproval = "A9999999"
	longApprover = "finance_director"
	longOp       = "run_three_way_match"
	longRun      = "run-2026-12-01-ap-batch-000123"
	longUpOp     = "read invoices by supplier reference"
	longWriteOp  = "release payment block"
)

// everyMessage builds every error errmap can produce, with long ids.
func everyMessage() map[string]*Error {
	out := map[string]*Error{}
	add := func(name string, e *Error) { out[name] = e }
	keys := func(ks ...string) map[string]string {
		all := map[string]string{"invoice_id": longInvoice, "po_id": longPO, "item": longItem, "supplier_id": longSupplier, "approval_id": longApproval}
		m := map[string]string{}
		for _, k := range ks {
			m[k] = all[k]
		}
		return m
	}
	keySets := [][]string{nil, {"invoice_id"}, {"po_id", "item"}, {"po_id"}, {"supplier_id"}, {"invoice_id", "po_id", "item", "supplier_id"}}

	// Domain errors.
	for _, ent := range []erp.Entity{erp.EntityInvoice, erp.EntityPurchaseOrder, erp.EntityPOItem, erp.EntitySupplier, erp.EntityApproval} {
		id := map[erp.Entity]string{erp.EntityInvoice: longInvoice, erp.EntitySupplier: longSupplier, erp.EntityApproval: longApproval}[ent]
		if id == "" {
			id = longPO
		}
		nf := &erp.NotFoundError{Entity: ent, ID: id, Item: longItem}
		add(fmt.Sprintf("not found %v", ent), Map(nf))
		add(fmt.Sprintf("not found again %v", ent), Map(refusal.NotFoundAgain{Named: nf}))
	}
	for _, reason := range []string{"posting_blocked", "deletion_flag"} {
		add("supplier blocked "+reason, Map(&erp.SupplierBlockedError{SupplierID: longSupplier, Reason: reason}))
	}
	add("po closed", Map(&erp.POClosedError{POID: longPO, Item: longItem, Reason: "delivered_and_finally_invoiced"}))
	add("gr missing", Map(&erp.GRMissingError{POID: longPO, Item: longItem}))
	add("duplicate", Map(&erp.DuplicateInvoiceError{InvoiceID: longInvoice, SupplierID: longSupplier, SupplierRef: "INV-2026-000123"}))
	add("duplicate of", Map(&erp.DuplicateInvoiceError{InvoiceID: longInvoice, DuplicateOf: longInvoice2, SupplierID: longSupplier, SupplierRef: "INV-2026-000123"}))
	for _, reason := range []string{erp.ApprovalAbsent, erp.ApprovalUnknown, erp.ApprovalNotYet, erp.ApprovalWasRejected, erp.ApprovalOtherInvoice} {
		add("approval missing "+reason, Map(&erp.ApprovalMissingError{InvoiceID: longInvoice, ApprovalID: longApproval, Reason: reason, ForInvoice: longInvoice2}))
	}
	add("approval missing amount differs", Map(&erp.ApprovalMissingError{InvoiceID: longInvoice, ApprovalID: longApproval,
		Reason: erp.ApprovalAmountDiffers, Approved: erp.Money{Amount: decimal.NewFromInt(999999999), Currency: "EUR"},
		Invoiced: erp.Money{Amount: decimal.NewFromInt(999999998), Currency: "EUR"}}))
	add("approval sent back", Map(&erp.ApprovalSentBackError{ApprovalID: longApproval, InvoiceID: longInvoice,
		Question: strings.Repeat("Which clause of the contract allows it? ", 12), AskedBy: longApprover, AskedAt: time.Now()}))
	add("no approver", Map(&erp.NoApproverError{InvoiceID: longInvoice, CompanyCode: "1010", Amount: decimal.NewFromInt(999999999)}))
	add("decision same requester", Map(&erp.DecisionRefusedError{ApprovalID: longApproval, Reason: erp.DecisionSameRequester, Status: erp.ApprovalPending, Approver: longApprover}))
	for _, st := range []erp.ApprovalStatus{erp.ApprovalApproved, erp.ApprovalRejected} {
		add("decision not pending "+string(st), Map(&erp.DecisionRefusedError{ApprovalID: longApproval, Reason: erp.DecisionNotPending, Status: st, Approver: longApprover}))
	}
	for _, st := range []erp.InvoiceStatus{erp.InvoicePosted, erp.InvoiceHeld, erp.InvoiceReversed, erp.InvoiceDeleted, erp.InvoiceOther} {
		add("not parked "+string(st), Map(&erp.InvoiceNotParkedError{InvoiceID: longInvoice, Status: st, SAPStatus: "5"}))
	}
	add("posted", Map(&erp.InvoicePostedError{InvoiceID: longInvoice}))

	// Upstream errors, by message id, status and classification.
	services := []erp.Service{"", erp.ServiceSupplierInvoice, erp.ServicePurchaseOrder, erp.ServiceMaterialDocument, erp.ServiceBusinessPartner}
	for id := range messageCodes {
		for i, ks := range keySets {
			add(fmt.Sprintf("message %s keys %d", id, i), Map(&erp.UpstreamError{Service: erp.ServiceMaterialDocument, Operation: longUpOp, Status: 400, MessageIDs: []string{id}, Keys: keys(ks...)}))
		}
	}
	for _, svc := range services {
		for _, status := range []int{0, 401, 403, 404, 409, 500, 503} {
			for i, ks := range keySets {
				for _, cfg := range []bool{false, true} {
					u := &erp.UpstreamError{Service: svc, Operation: longUpOp, Status: status, Keys: keys(ks...), Config: cfg, Transient: status >= 500, RetryAfter: 3600 * time.Second}
					add(fmt.Sprintf("upstream %s %d keys %d config %v", svc, status, i, cfg), Map(u))
				}
				// The ERP's writes (posting, releasing a payment block)
				// are all about an invoice.
				if ks == nil || ks[0] == "invoice_id" {
					w := &erp.UpstreamError{Service: svc, Operation: longWriteOp, Status: status, Keys: keys(ks...), Write: true, Unconfirmed: true}
					add(fmt.Sprintf("unconfirmed %s %d keys %d", svc, status, i), Map(w))
				}
			}
		}
		add(fmt.Sprintf("breaker open %s", svc), Map(&retry.Error{Service: retry.Service(svc), BreakerOpen: true, RetryAfter: 3600 * time.Second, Attempts: 10}))
		add(fmt.Sprintf("erp quota %s", svc), Map(&retry.Error{Service: retry.Service(svc), QuotaLimit: retry.QuotaRate, RetryAfter: 3600 * time.Second, Attempts: 10, Err: retry.ErrQuota}))
	}
	// Answers of the ERP, by kind of body and call, and records that
	// cannot be read.
	for _, body := range []erp.AnswerBody{erp.BodySAPError, erp.BodyOtherJSON, erp.BodyText, erp.BodyEmpty} {
		for _, call := range []erp.CallKind{erp.CallEntity, erp.CallList, erp.CallFunction} {
			for _, status := range []int{302, 404, 405, 422, 501} {
				for i, ks := range keySets {
					add(fmt.Sprintf("answer %d %s %s keys %d", status, body, call, i), Map(&erp.UpstreamError{Service: erp.ServiceMaterialDocument,
						Operation: longUpOp, Status: status, Body: body, Call: call, Keys: keys(ks...)}))
				}
			}
		}
	}
	for _, ent := range []erp.Entity{"", erp.EntityInvoice, erp.EntityPurchaseOrder, erp.EntitySupplier, erp.EntityGoodsReceipt} {
		de := &erp.DataError{Service: erp.ServiceMaterialDocument, Entity: ent, Key: "MaterialDocument='4900000101'", Err: errors.New("bad")}
		add(fmt.Sprintf("data invalid %s", ent), Map(de))
		for i, ks := range keySets {
			add(fmt.Sprintf("data invalid %s keys %d", ent, i), Map(&retry.Error{Attempts: 1, Err: &erp.UpstreamError{
				Service: erp.ServiceMaterialDocument, Operation: longUpOp, Status: 200, Keys: keys(ks...), Err: de}}))
		}
	}
	add("deadline", Map(context.DeadlineExceeded))
	add("unknown", Map(errors.New("boom")))

	// The gateway's own refusals.
	for _, tok := range []string{"", refusal.TokenInvalid, refusal.TokenExpired, refusal.TokenNotYetValid, refusal.TokenAudience, refusal.TokenUnverifiable} {
		for _, oauth := range []bool{false, true} {
			add(fmt.Sprintf("unauthenticated %q oauth %v", tok, oauth), Map(refusal.Unauthenticated{OAuth: oauth, Bearer: true, Token: tok}))
		}
	}
	add("scope", Map(refusal.ScopeMissing{Scope: "approve", Operation: longOp}))
	add("rate calls", Map(refusal.RateLimited{Reason: refusal.RateCalls, RetryAfter: 3600}))
	add("rate keys cap", Map(refusal.RateLimited{Reason: refusal.RateKeysCap, RetryAfter: 3600, Cap: 100000}))
	add("key reused", Map(refusal.KeyReused{}))
	add("in flight invoice", Map(refusal.InFlight{Reason: refusal.InFlightInvoice, InvoiceID: longInvoice, Operation: longOp, RetryAfter: 3600}))
	add("in flight key", Map(refusal.InFlight{Reason: refusal.InFlightKey, InvoiceID: longInvoice, RetryAfter: 3600}))
	add("store records", Map(refusal.StoreUnavailable{Which: refusal.StoreRecords, Engine: "postgres", Err: errors.New("down")}))
	add("store run state", Map(refusal.StoreUnavailable{Which: refusal.StoreRunState, Err: errors.New("down")}))
	for _, kind := range []string{refusal.LimitBudget, refusal.LimitGRMissing, refusal.LimitCorrectedRetry, refusal.LimitERPWait, refusal.LimitIdenticalRepeat} {
		for _, inv := range []string{"", longInvoice} {
			add(fmt.Sprintf("limit %s invoice %q", kind, inv), Map(refusal.Limit{Kind: kind, Operation: longOp, RunID: longRun, InvoiceID: inv,
				POItem: longPO + "/10", Budget: 1000, RetryAfter: 3600, PreviousCode: string(IdempotencyKeyReused)}))
		}
	}

	// Protocol and field errors of errmap's own wording.
	add("invalid", Invalid("supplier_invoice_number", "is not a string"))
	add("protocol", Protocol(http.StatusNotFound, "No such route.", nil))
	return out
}

// TestHeadCarriesTheContract: in every error body errmap can produce, code,
// retryable and next_action end within the first headLimit bytes, so a
// bridge that cuts bodies there still passes on what the agent must do.
func TestHeadCarriesTheContract(t *testing.T) {
	msgs := everyMessage()
	if len(msgs) < 100 {
		t.Fatalf("only %d messages built", len(msgs))
	}
	for name, e := range msgs {
		body := e.Marshal()
		na := []byte(`"next_action":"` + string(e.NextAction) + `"`)
		i := bytes.Index(body, na)
		if i < 0 {
			t.Errorf("%s: no next_action in %s", name, body)
			continue
		}
		if end := i + len(na); end > headLimit {
			t.Errorf("%s: next_action ends at byte %d, over %d by %d: %s", name, end, headLimit, end-headLimit, e.Message)
		}
		if !bytes.HasPrefix(body, []byte(`{"code":"`+string(e.Code)+`","message":`)) {
			t.Errorf("%s: body does not start with code and message: %s", name, body)
		}
	}
}

// TestFitHead: a message composed around input (a long field name, a
// long list) is cut at a word so that next_action ends within headLimit,
// whatever characters it holds; a message that fits is left alone.
func TestFitHead(t *testing.T) {
	for name, e := range map[string]*Error{
		"long field":    Invalid(strings.Repeat("x", 300), "is not a field of this operation"),
		"long list":     Invalid("proposed_action", "must be one of "+strings.Repeat("post_as_invoiced, ", 20)),
		"escapes":       Invalid(strings.Repeat(`"\`, 150), "is not a field"),
		"multi-byte":    Invalid(strings.Repeat("é", 150), "is not a field"),
		"one long word": New(InvalidRequest, strings.Repeat("a", 400), nil),
	} {
		e.FitHead()
		body := e.Marshal()
		na := []byte(`"next_action":"` + string(e.NextAction) + `"`)
		if end := bytes.Index(body, na) + len(na); end > headLimit || end < len(na) {
			t.Errorf("%s: next_action ends at byte %d: %s", name, end, body)
		}
		if e.HeadEnd() != bytes.Index(body, na)+len(na) {
			t.Errorf("%s: HeadEnd %d, next_action ends at %d", name, e.HeadEnd(), bytes.Index(body, na)+len(na))
		}
		if !strings.HasSuffix(e.Message, "…") || !utf8.ValidString(e.Message) || len(e.Message) < 40 {
			t.Errorf("%s: message %q, want a valid cut with an ellipsis", name, e.Message)
		}
	}
	short := Invalid("reason", "must be 3 to 200 characters")
	if msg := short.Message; short.FitHead().Message != msg {
		t.Errorf("a message that fits was changed to %q", short.Message)
	}
}

// TestOneOf lists short enums in the message and long ones in
// details.allowed, within the head either way.
func TestOneOf(t *testing.T) {
	short := OneOf("decision", "must be one of", []string{"approve", "reject"})
	if short.Message != `Field "decision" must be one of approve, reject.` || short.Details["allowed"] != nil {
		t.Errorf("short enum: %q %v", short.Message, short.Details)
	}
	long := OneOf("queue", "is empty or looks like an error value; use one of", Queues)
	if !strings.Contains(long.Message, "details.allowed") || len(long.Details["allowed"].([]string)) != len(Queues) || long.HeadEnd() > HeadLimit {
		t.Errorf("long enum: %q %v, head ends at %d", long.Message, long.Details, long.HeadEnd())
	}
}
