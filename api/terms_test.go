package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sap/sapspec"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// TestInvoiceDueDate: get_invoice gives the invoice's net due date and its
// terms of payment as the ERP holds them, each answer held to the
// contract by the stack's transport.
func TestInvoiceDueDate(t *testing.T) {
	s := newStack(t)
	for _, tc := range []struct{ id, due, terms string }{
		{"5105600101", "2026-12-20", "ZB01"}, // 2026-11-20 + 30 net days
		{"5105600102", "2026-12-21", "ZB01"},
		{"5105600106", "2026-12-23", "NT30"},
		{"5105600109", "2026-01-27", "ZB01"}, // across the year's end
	} {
		r := s.do("GET", "/invoices/"+tc.id, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET /invoices/%s: %d %s", tc.id, r.status, r.body)
		}
		m := r.json(t)
		if m["due_date"] != tc.due || m["payment_terms"] != tc.terms {
			t.Errorf("%s: due_date %v, payment_terms %v; want %s, %s", tc.id, m["due_date"], m["payment_terms"], tc.due, tc.terms)
		}
	}
}

// termsDropped is the ERP as a system that sends less of the terms of
// payment: without a baseline date, and without any terms when noKey.
type termsDropped struct {
	erp.Client
	noKey bool
}

func (c termsDropped) Invoice(ctx context.Context, id string) (erp.Invoice, error) {
	inv, err := c.Client.Invoice(ctx, id)
	inv.BaselineDate = time.Time{}
	if c.noKey {
		inv.PaymentTerms, inv.CashDiscount1Days, inv.CashDiscount2Days, inv.NetPaymentDays = "", 0, 0, 0
	}
	return inv, err
}

// TestInvoiceWithoutDueDate: an invoice without a baseline date has no
// due_date, and one without terms of payment no payment_terms either; the
// answer is otherwise whole, and on the contract.
func TestInvoiceWithoutDueDate(t *testing.T) {
	simSrv := httptest.NewServer(sim.New(sim.Options{}))
	t.Cleanup(simSrv.Close)
	client, err := sap.New(simSrv.URL, sap.Options{Runner: retry.New(retry.Policy{AttemptTimeout: 5 * time.Second}, nil),
		HTTPClient: sapspec.CheckedHTTPClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		noKey bool
		terms any
	}{
		{"terms without a baseline date", false, "ZB01"},
		{"no terms at all", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := api.NewServer(api.Options{ERP: termsDropped{Client: client, noKey: tc.noKey}, Records: testRecords(t)})
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(srv)
			t.Cleanup(gw.Close)
			s := &stack{t: t, gw: gw, client: &http.Client{Transport: newContractTransport(t, gw.URL, simSrv.URL)}}
			r := s.do("GET", "/invoices/5105600102", nil)
			if r.status != http.StatusOK {
				t.Fatalf("GET /invoices/5105600102: %d %s", r.status, r.body)
			}
			m := r.json(t)
			if _, ok := m["due_date"]; ok {
				t.Errorf("due_date %v, want none without a baseline date: %s", m["due_date"], r.body)
			}
			if m["payment_terms"] != tc.terms {
				t.Errorf("payment_terms %v, want %v", m["payment_terms"], tc.terms)
			}
			if m["document_date"] != "2026-11-21" || m["gross_amount"] != "13500.00" {
				t.Errorf("got %s, want the invoice's header as before", r.body)
			}
		})
	}
}
