package sap

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// TestAnswerAboutAnotherDocument: an answer about another purchase order,
// invoice, supplier or goods receipt than the one asked for is the ERP's
// fault, never taken for the one asked for: the read is retried and, when
// every attempt brings it, the agent hears ERP_UNAVAILABLE, not a result
// nor a not-found.
func TestAnswerAboutAnotherDocument(t *testing.T) {
	otherPO := strings.ReplaceAll(poJSON, `"PurchaseOrder":"4500018822","Supplier"`, `"PurchaseOrder":"4500000002","Supplier"`)
	otherItemPO := strings.Replace(poJSON, `{"PurchaseOrder":"4500018822","PurchaseOrderItem":"20"`, `{"PurchaseOrder":"4500000002","PurchaseOrderItem":"20"`, 1)
	receipt := receiptItemJSON("5000000001", false, "10.000", receiptHeaderJSON("5000000001", ms(2026, 11, 2)))
	tests := []struct {
		name, body, what, key string
		read                  func(*Client) error
	}{
		{"purchase order", otherPO, "purchase order", "po_id", func(c *Client) error {
			_, err := c.PurchaseOrder(context.Background(), "4500018822")
			return err
		}},
		{"purchase order item", otherItemPO, "purchase order", "po_id", func(c *Client) error {
			_, err := c.PurchaseOrder(context.Background(), "4500018822")
			return err
		}},
		{"invoice", list(invoiceJSON("5105600102", "2026", "A", "")), "invoice", "invoice_id", func(c *Client) error {
			_, err := c.Invoice(context.Background(), "5105600101")
			return err
		}},
		{"invoice among others", list(invoiceJSON("5105600101", "2026", "A", ""), invoiceJSON("5105600102", "2026", "A", "")), "invoice", "invoice_id", func(c *Client) error {
			_, err := c.Invoice(context.Background(), "5105600101")
			return err
		}},
		{"supplier", list(partnerJSON("100043", "NORDWIND", supplierRoleJSON("100043", "Nordwind", false, false), addressesJSON())), "supplier", "supplier_id", func(c *Client) error {
			_, err := c.Supplier(context.Background(), "100999")
			return err
		}},
		{"goods receipt of another order", list(receipt), "purchase order", "po_id", func(c *Client) error {
			_, err := c.GoodsReceipts(context.Background(), "4500000002", "10")
			return err
		}},
		{"goods receipt of another item", list(receipt), "purchase order item", "po_id", func(c *Client) error {
			_, err := c.GoodsReceipts(context.Background(), "4500018822", "20")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, respond(200, tt.body))
			runner := retry.New(retry.Policy{MaxAttempts: 3, Breaker: retry.BreakerSettings{Disabled: true},
				Budget: retry.BudgetSettings{Disabled: true},
				Sleep:  func(context.Context, time.Duration) error { return nil }}, nil)
			err := tt.read(f.client(Options{Runner: runner}))
			var up *erp.UpstreamError
			if !errors.As(err, &up) || up.Status != 200 || up.Text != "answer about another "+tt.what || up.Keys[tt.key] == "" {
				t.Fatalf("got %v, want an ERP fault: answer about another %s", err, tt.what)
			}
			if n := len(f.odata()); n != 3 {
				t.Errorf("%d requests, want 3: the answer is retried", n)
			}
			e := errmap.Map(err)
			if e.Code != errmap.ERPUnavailable || e.Details["attempts"] != 3 {
				t.Errorf("mapped to %s %v, want ERP_UNAVAILABLE after 3 attempts", e.Code, e.Details)
			}
		})
	}
}

// TestAnswerAboutTheDocumentAsked: the same answers about the documents
// asked for are read as they are.
func TestAnswerAboutTheDocumentAsked(t *testing.T) {
	c := newFake(t, respond(200, list(invoiceJSON("5105600101", "2025", "A", ""), invoiceJSON("5105600101", "2026", "5", "")))).client(Options{})
	if got, err := c.Invoice(context.Background(), "5105600101"); err != nil || got.ID != "5105600101" || got.FiscalYear != "2026" {
		t.Errorf("invoice: got %+v, %v; want 5105600101 of 2026", got, err)
	}
	c = newFake(t, respond(200, poJSON)).client(Options{})
	if got, err := c.PurchaseOrder(context.Background(), "4500018822"); err != nil || got.ID != "4500018822" || len(got.Items) != 2 {
		t.Errorf("purchase order: got %+v, %v", got, err)
	}
	receipt := receiptItemJSON("5000000001", false, "10.000", receiptHeaderJSON("5000000001", ms(2026, 11, 2)))
	c = newFake(t, respond(200, list(receipt))).client(Options{})
	if got, err := c.GoodsReceipts(context.Background(), "4500018822", "10"); err != nil || len(got) != 1 {
		t.Errorf("goods receipts: got %+v, %v", got, err)
	}
}
