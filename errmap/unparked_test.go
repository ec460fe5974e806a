package errmap_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
)

func TestMapInvoiceNotParked(t *testing.T) {
	for _, st := range []erp.InvoiceStatus{erp.InvoiceReversed, erp.InvoiceDeleted, erp.InvoiceOther} {
		err := fmt.Errorf("post: %w", &erp.InvoiceNotParkedError{InvoiceID: "5105600110", Status: st, SAPStatus: "2"})
		e := errmap.Map(err)
		if e.Code != errmap.InvalidRequest || e.Status != 400 || e.NextAction != errmap.RouteToPerson || e.Retryable {
			t.Errorf("%s: %s %d %s retryable=%v; want INVALID_REQUEST 400 route_to_person", st, e.Code, e.Status, e.NextAction, e.Retryable)
		}
		if e.Details["invoice_id"] != "5105600110" || e.Details["reason"] != string(st) || e.Details["queue"] != errmap.QueueAP ||
			e.Details["sap_status"] != "2" || !strings.Contains(e.Message, "5105600110") || !strings.Contains(e.Message, string(st)) {
			t.Errorf("%s: %+v %q", st, e.Details, e.Message)
		}
	}
}

func TestMapPostMessages(t *testing.T) {
	for _, c := range []struct {
		id   string
		want errmap.Code
		next errmap.NextAction
	}{
		{"M8/184", errmap.InvoiceNotFound, errmap.FixInputAndRetry},
		{"M8/383", errmap.ERPConfiguration, errmap.StopAndEscalate},
	} {
		u := &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Operation: "post invoice", Write: true, Status: 400,
			MessageIDs: []string{c.id}, Keys: map[string]string{"invoice_id": "5105600101"}}
		e := errmap.Map(u)
		if e.Code != c.want || e.NextAction != c.next || e.Details["invoice_id"] != "5105600101" {
			t.Errorf("%s: %s %s %v; want %s %s with the invoice id", c.id, e.Code, e.NextAction, e.Details, c.want, c.next)
		}
	}
}
