package errmap_test

import (
	"context"
	"fmt"
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

// wantConfiguration fails unless e is ERP_CONFIGURATION for the service,
// with a message that names no host and carries no ERP wording.
func wantConfiguration(t *testing.T, e *errmap.Error, svc erp.Service) {
	t.Helper()
	if e.Code != errmap.ERPConfiguration || e.Status != http.StatusBadGateway || e.Retryable ||
		e.NextAction != errmap.StopAndEscalate {
		t.Fatalf("got %s %d retryable=%v %s, want ERP_CONFIGURATION 502 not retryable stop_and_escalate",
			e.Code, e.Status, e.Retryable, e.NextAction)
	}
	if e.Details["service"] != string(svc) {
		t.Errorf("details %v, want service %s", e.Details, svc)
	}
	body := string(e.Marshal())
	for _, leak := range []string{"127.0.0.1", "sapprd01", "localhost", "Text for", "0A1B2C"} {
		if strings.Contains(body, leak) {
			t.Errorf("body leaks %q: %s", leak, body)
		}
	}
}

func TestMapConfiguration(t *testing.T) {
	tests := []struct {
		name string
		err  *erp.UpstreamError
		want string // a part of the message
	}{
		{"401", &erp.UpstreamError{Service: erp.ServiceBusinessPartner, Status: 401}, "user or authorisations"},
		{"403 with a business message id", &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Status: 403,
			MessageIDs: []string{"06/019"}, Keys: map[string]string{"po_id": "4500018822"}}, "user or authorisations"},
		{"404 of the service", &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Status: 404, Config: true,
			Keys: map[string]string{"invoice_id": "5105600101"}}, "not at the configured URL"},
		{"token refused", &erp.UpstreamError{Service: erp.ServiceMaterialDocument, Config: true}, "cannot be used as configured"},
		{"write not confirmed but refused by configuration", &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Write: true,
			Config: true, Unconfirmed: true}, "cannot be used"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.err.Text = "Detail at sapprd01.corp.example:44300 txn 0A1B2C"
			e := errmap.Map(tt.err)
			wantConfiguration(t, e, tt.err.Service)
			if !strings.Contains(e.Message, tt.want) {
				t.Errorf("message %q, want it to say %q", e.Message, tt.want)
			}
		})
	}
	// An entity's 404 is still the entity's NOT_FOUND.
	if e := errmap.Map(&erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Status: 404, Body: erp.BodySAPError,
		Call: erp.CallEntity, Keys: map[string]string{"invoice_id": "5105600999"}}); e.Code != errmap.InvoiceNotFound {
		t.Errorf("entity 404 = %s, want INVOICE_NOT_FOUND", e.Code)
	}
}

// configServer is an SAP system that answers CSRF fetches with
// fetchStatus and every other request with status and body.
func configServer(t *testing.T, fetchStatus, status int, body string) *sap.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-CSRF-Token") == "Fetch" {
			if fetchStatus != http.StatusOK {
				w.WriteHeader(fetchStatus)
				fmt.Fprint(w, body)
				return
			}
			w.Header().Set("X-CSRF-Token", "tok-1")
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := sap.New(srv.URL, sap.Options{Runner: retry.New(retry.Policy{AttemptTimeout: time.Second, MaxAttempts: 1,
		Breaker: retry.BreakerSettings{Disabled: true}}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSAPConfigurationFaults runs each fault of configuration from the
// wire, through the real erp/sap client, into Map.
func TestSAPConfigurationFaults(t *testing.T) {
	ctx := context.Background()
	inv := erp.Invoice{ID: "5105600101", FiscalYear: "2026"}
	notPublished := envelope("v2", "/IWFND/MED/170")
	for _, form := range forms {
		t.Run(form, func(t *testing.T) {
			// A 404 on the service root when the token is fetched: the
			// service is missing, not the invoice.
			_, err := configServer(t, http.StatusNotFound, http.StatusOK, envelope(form, "/IWBEP/CM_MGW_RT/020")).PostInvoice(ctx, inv, "")
			wantConfiguration(t, errmap.Map(err), erp.ServiceSupplierInvoice)
			// 401 and 403 on the token fetch.
			for _, st := range []int{http.StatusUnauthorized, http.StatusForbidden} {
				_, err := configServer(t, st, http.StatusOK, envelope(form, "/IWFND/CM_CONSUMER/004")).PostInvoice(ctx, inv, "")
				wantConfiguration(t, errmap.Map(err), erp.ServiceSupplierInvoice)
			}
			// 401 and 403 on reads.
			for _, st := range []int{http.StatusUnauthorized, http.StatusForbidden} {
				c := configServer(t, http.StatusOK, st, envelope(form, "/IWFND/CM_CONSUMER/004"))
				_, err := c.PurchaseOrder(ctx, "4500018822")
				wantConfiguration(t, errmap.Map(err), erp.ServicePurchaseOrder)
				_, err = c.Supplier(ctx, "100042")
				wantConfiguration(t, errmap.Map(err), erp.ServiceBusinessPartner)
				_, err = c.Invoice(ctx, "5105600101")
				wantConfiguration(t, errmap.Map(err), erp.ServiceSupplierInvoice)
			}
		})
	}
	// A service that is not published answers an entity read with a 404
	// that names the service: configuration, not the entity.
	c := configServer(t, http.StatusOK, http.StatusNotFound, notPublished)
	_, err := c.PurchaseOrder(ctx, "4500018822")
	wantConfiguration(t, errmap.Map(err), erp.ServicePurchaseOrder)
	_, err = c.Supplier(ctx, "100042")
	wantConfiguration(t, errmap.Map(err), erp.ServiceBusinessPartner)
	// An entity's own 404 stays the entity's.
	c = configServer(t, http.StatusOK, http.StatusNotFound, envelope("v2", "/IWBEP/CM_MGW_RT/020"))
	if _, err := c.PurchaseOrder(ctx, "4500019822"); errmap.Map(err).Code != errmap.PONotFound {
		t.Errorf("PO 404 = %s, want PO_NOT_FOUND", errmap.Map(err).Code)
	}
	// The $metadata read reports the same faults by state.
	infos, err := configServer(t, http.StatusOK, http.StatusForbidden, envelope("v2", "/IWFND/CM_CONSUMER/004")).ReadMetadata(ctx)
	if err == nil || infos[erp.ServiceSupplierInvoice].Status != sap.ServiceForbidden {
		t.Errorf("metadata of a refusing system: %v %v", infos, err)
	}
	wantConfiguration(t, errmap.Map(infos[erp.ServicePurchaseOrder].Err), erp.ServicePurchaseOrder)
}
