package sap

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// retrying is a runner of three attempts that does not wait between
// them, so that a test sees whether a failure is retried.
func retrying() *retry.Runner {
	return retry.New(retry.Policy{AttemptTimeout: 2 * time.Second, MaxAttempts: 3,
		Breaker: retry.BreakerSettings{Disabled: true}, Budget: retry.BudgetSettings{Disabled: true},
		Sleep: func(context.Context, time.Duration) error { return nil }}, nil)
}

// wantBadRecord fails unless err is a record of the entity with the key
// that cannot be read, answered once and never retried, and named
// ERP_DATA_INVALID for the service.
func wantBadRecord(t *testing.T, f *fakeSAP, err error, svc erp.Service, entity erp.Entity, key string) {
	t.Helper()
	de, ok := errors.AsType[*erp.DataError](err)
	if !ok {
		t.Fatalf("got %v, want a record that cannot be read", err)
	}
	if de.Service != svc || de.Entity != entity || de.Key != key || de.Err == nil {
		t.Errorf("got %+v, want %s %s %s", de, svc, entity, key)
	}
	if up, ok := errors.AsType[*erp.UpstreamError](err); !ok || up.Status != 200 || up.Service != svc || up.Transient {
		t.Errorf("got %+v, want a 200 of %s, not transient", up, svc)
	}
	if n := len(f.odata()); n != 1 {
		t.Errorf("%d requests, want 1: the same answer would come again", n)
	}
	e := errmap.Map(err)
	if e.Code != errmap.ERPDataInvalid || e.Retryable || e.Details["service"] != string(svc) || e.Details["entity"] != string(entity) {
		t.Errorf("mapped to %s retryable %v %v, want ERP_DATA_INVALID of %s %s", e.Code, e.Retryable, e.Details, svc, entity)
	}
	if body := string(e.Marshal()); strings.Contains(body, "127.0.0.1") || strings.Contains(body, key) {
		t.Errorf("body names the host or the ERP's key: %s", body)
	}
}

// TestUndecodableEntity: an answer of 200 whose entity does not fit the
// types SAP's $metadata declares (a string for a boolean, a decimal with a
// thousands separator, a date that is none, an id as a number) is bad
// data: read once, never retried, never ERP_UNAVAILABLE.
func TestUndecodableEntity(t *testing.T) {
	ctx := context.Background()
	t.Run("purchase order", func(t *testing.T) {
		body := strings.Replace(poJSON, `"IsFinallyInvoiced":false`, `"IsFinallyInvoiced":"no"`, 1)
		f := newFake(t, respond(200, body))
		_, err := f.client(Options{Runner: retrying()}).PurchaseOrder(ctx, "4500018822")
		wantBadRecord(t, f, err, erp.ServicePurchaseOrder, erp.EntityPurchaseOrder, "PurchaseOrder='4500018822'")
	})
	t.Run("purchase order id as a number", func(t *testing.T) {
		body := strings.Replace(poJSON, `{"d":{"PurchaseOrder":"4500018822"`, `{"d":{"PurchaseOrder":4500018822`, 1)
		f := newFake(t, respond(200, body))
		_, err := f.client(Options{Runner: retrying()}).PurchaseOrder(ctx, "4500018822")
		wantBadRecord(t, f, err, erp.ServicePurchaseOrder, erp.EntityPurchaseOrder, "PurchaseOrder='4500018822'")
	})
	t.Run("invoice", func(t *testing.T) {
		body := list(strings.Replace(invoiceJSON("5105600101", "2026", "A", ""), `"InvoiceGrossAmount":"1000.00"`, `"InvoiceGrossAmount":"1,000.00"`, 1))
		f := newFake(t, respond(200, body))
		_, err := f.client(Options{Runner: retrying()}).Invoice(ctx, "5105600101")
		wantBadRecord(t, f, err, erp.ServiceSupplierInvoice, erp.EntityInvoice, "SupplierInvoice='5105600101',FiscalYear='2026'")
	})
	t.Run("supplier", func(t *testing.T) {
		body := list(partnerJSON("100042", "ACME", `{"Supplier":"100042","SupplierName":"Acme","PostingIsBlocked":"X"}`, addressesJSON()))
		f := newFake(t, respond(200, body))
		_, err := f.client(Options{Runner: retrying()}).Supplier(ctx, "100042")
		wantBadRecord(t, f, err, erp.ServiceBusinessPartner, erp.EntitySupplier, "BusinessPartner='100042'")
	})
	t.Run("supplier without its role", func(t *testing.T) {
		f := newFake(t, respond(200, list(partnerJSON("100042", "ACME", `null`, addressesJSON()))))
		_, err := f.client(Options{Runner: retrying()}).Supplier(ctx, "100042")
		wantBadRecord(t, f, err, erp.ServiceBusinessPartner, erp.EntitySupplier, "BusinessPartner='100042'")
	})
	t.Run("invoice line", func(t *testing.T) {
		body := list(strings.Replace(invoiceJSON("5105600101", "2026", "A", ""), `"QuantityInPurchaseOrderUnit":"10.000"`,
			`"QuantityInPurchaseOrderUnit":{"value":"10"}`, 1))
		f := newFake(t, respond(200, body))
		_, err := f.client(Options{Runner: retrying()}).Invoice(ctx, "5105600101")
		wantBadRecord(t, f, err, erp.ServiceSupplierInvoice, erp.EntityInvoice, "SupplierInvoice='5105600101',FiscalYear='2026'")
	})
}

// TestBrokenAnswerIsNotBadData: an answer that is cut short, or holds no
// entity where one belongs, is not a record that cannot be read but an
// answer that did not arrive whole: it is retried, as before. (An HTML page
// in its place is a fault of configuration: TestMalformedResponses.)
func TestBrokenAnswerIsNotBadData(t *testing.T) {
	for name, body := range map[string]string{
		"cut short":            poJSON[:len(poJSON)/2],
		"not json":             `{"d":{"PurchaseOrder":`,
		"no entity":            `{"d":[]}`,
		"a list for an entity": `{"d":{"results":[1]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, respond(200, body))
			_, err := f.client(Options{Runner: retrying()}).PurchaseOrder(context.Background(), "4500018822")
			if _, ok := errors.AsType[*erp.DataError](err); ok {
				t.Fatalf("got %v, want no record error", err)
			}
			if n := len(f.odata()); n != 3 {
				t.Errorf("%d requests, want 3", n)
			}
		})
	}
}

// logBuffer is a logger that writes to a buffer, and the buffer.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})), &buf
}

// TestListSkipsOddEntries: a list whose other entries are well-formed
// skips the entry that cannot be read, and logs it with its key; a list
// of nothing but such entries is bad data, never an empty answer.
func TestListSkipsOddEntries(t *testing.T) {
	ctx := context.Background()
	noRole := partnerJSON("100043", "ACME", `null`, addressesJSON())
	nullSupplier := partnerJSON("100045", "ACME", `{"Supplier":null,"SupplierName":"Acme Ghost"}`, addressesJSON())
	wrongType := partnerJSON("100046", "ACME", `{"Supplier":"100046","SupplierName":"Acme","DeletionIndicator":"X"}`, addressesJSON())
	t.Run("supplier search", func(t *testing.T) {
		log, buf := logBuffer()
		f := newFake(t, respond(200, list(noRole, supplierJSON, nullSupplier, wrongType)))
		got, err := f.client(Options{Runner: retrying(), Logger: log}).SearchSuppliers(ctx, "acme", 10)
		if err != nil || len(got) != 1 || got[0].ID != "100042" {
			t.Fatalf("got %+v, %v, want supplier 100042 alone", got, err)
		}
		for _, key := range []string{"BusinessPartner='100043'", "BusinessPartner='100045'", "BusinessPartner='100046'"} {
			if !strings.Contains(buf.String(), key) {
				t.Errorf("log does not name %s:\n%s", key, buf.String())
			}
		}
		if n := strings.Count(buf.String(), "list entry skipped"); n != 3 {
			t.Errorf("%d entries logged, want 3:\n%s", n, buf.String())
		}
	})
	t.Run("supplier search of odd entries only", func(t *testing.T) {
		f := newFake(t, respond(200, list(noRole, wrongType)))
		got, err := f.client(Options{Runner: retrying()}).SearchSuppliers(ctx, "acme", 10)
		if got != nil {
			t.Errorf("got %+v, want none", got)
		}
		wantBadRecord(t, f, err, erp.ServiceBusinessPartner, erp.EntitySupplier, "BusinessPartner='100043'")
	})
	t.Run("supplier search without a match", func(t *testing.T) {
		got, err := newFake(t, respond(200, list())).client(Options{}).SearchSuppliers(ctx, "acme", 10)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("got %#v, %v, want an empty list", got, err)
		}
	})

	receipt := func(doc, qty string) string {
		return receiptItemJSON(doc, false, qty, receiptHeaderJSON(doc, ms(2026, 11, 18)))
	}
	t.Run("goods receipts", func(t *testing.T) {
		log, buf := logBuffer()
		odd := strings.Replace(receipt("5000000002", "5.000"), `"QuantityInEntryUnit":"5.000"`, `"QuantityInEntryUnit":"five"`, 1)
		f := newFake(t, respond(200, list(receipt("5000000001", "10.000"), odd)))
		got, err := f.client(Options{Runner: retrying(), Logger: log}).GoodsReceipts(ctx, "4500018822", "10")
		if err != nil || len(got) != 1 || got[0].MaterialDocument != "5000000001" {
			t.Fatalf("got %+v, %v, want receipt 5000000001 alone", got, err)
		}
		if !strings.Contains(buf.String(), "MaterialDocumentYear='2026',MaterialDocument='5000000002',MaterialDocumentItem='0001'") {
			t.Errorf("log does not name the odd receipt:\n%s", buf.String())
		}
	})
	t.Run("goods receipts of odd entries only", func(t *testing.T) {
		odd := strings.Replace(receipt("5000000002", "5.000"), `"GoodsMovementIsCancelled":false`, `"GoodsMovementIsCancelled":"no"`, 1)
		f := newFake(t, respond(200, list(odd)))
		_, err := f.client(Options{Runner: retrying()}).GoodsReceipts(ctx, "4500018822", "10")
		wantBadRecord(t, f, err, erp.ServiceMaterialDocument, erp.EntityGoodsReceipt,
			"MaterialDocumentYear='2026',MaterialDocument='5000000002',MaterialDocumentItem='0001'")
	})
}

// TestRecordKey writes keys as OData writes them, quotes doubled, and
// leaves out what the answer did not give.
func TestRecordKey(t *testing.T) {
	for _, tt := range []struct {
		pairs []string
		want  string
	}{
		{[]string{"PurchaseOrder", "4500018822"}, "PurchaseOrder='4500018822'"},
		{[]string{"SupplierInvoice", "51'05", "FiscalYear", "2026"}, "SupplierInvoice='51''05',FiscalYear='2026'"},
		{[]string{"SupplierInvoice", "", "FiscalYear", "2026"}, "FiscalYear='2026'"},
		{[]string{"BusinessPartner", ""}, ""},
	} {
		if got := recordKey(tt.pairs...); got != tt.want {
			t.Errorf("recordKey(%q) = %q, want %q", tt.pairs, got, tt.want)
		}
	}
}
