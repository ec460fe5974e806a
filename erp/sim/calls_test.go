package sim_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
)

func TestCallsRecorded(t *testing.T) {
	e := newEnv(t, sim.Options{RecordCalls: true,
		Faults: []sim.FaultRule{{Service: erp.ServicePurchaseOrder, Kind: sim.FaultReset}}})
	e.get(bpSrv + "/A_Supplier('100042')")
	e.do(http.MethodGet, bpSrv+"/A_Supplier('100042')", nil, map[string]string{"X-CSRF-Token": "Fetch"})
	e.postInvoice("5105600101", "2026")
	if _, err := e.try(http.MethodGet, poSrv+"/A_PurchaseOrder('4500018822')", nil, nil); err == nil {
		t.Error("the reset fault answered")
	}
	e.admin(http.MethodGet, "/sim/admin/ledger", nil)

	got := e.sim.Calls()
	want := []sim.Call{
		{Service: erp.ServiceBusinessPartner, Method: "GET", Path: "A_Supplier('100042')", Status: 200},
		{Service: erp.ServiceBusinessPartner, Method: "GET", Path: "A_Supplier('100042')", Fetch: true, Status: 200},
		{Service: erp.ServiceSupplierInvoice, Method: "GET", Path: "", Fetch: true, Status: 200},
		{Service: erp.ServiceSupplierInvoice, Method: "POST", Path: "Post", Query: "SupplierInvoice='5105600101'&FiscalYear='2026'", Status: 200},
		{Service: erp.ServicePurchaseOrder, Method: "GET", Path: "A_PurchaseOrder('4500018822')", Status: 0},
	}
	uris := []string{bpSrv + "/A_Supplier('100042')", bpSrv + "/A_Supplier('100042')", invSrv + "/",
		invSrv + postPath("5105600101", "2026"), poSrv + "/A_PurchaseOrder('4500018822')"}
	if len(got) != len(want) {
		t.Fatalf("calls: got %d %+v, want %d (admin requests are no calls)", len(got), got, len(want))
	}
	for i, c := range got {
		if !c.Start.Equal(clock) || !c.End.Equal(clock) {
			t.Errorf("call %d: start %v end %v, want the server's clock", i, c.Start, c.End)
		}
		if c.URI != uris[i] {
			t.Errorf("call %d: URI %q, want %q", i, c.URI, uris[i])
		}
		c.Start, c.End, c.URI = time.Time{}, time.Time{}, ""
		if c != want[i] {
			t.Errorf("call %d: got %+v, want %+v", i, c, want[i])
		}
	}
	if got[0].Key() != got[1].Key() || got[0].Key() == got[4].Key() {
		t.Errorf("keys: %q %q %q, want the two supplier reads alike, the token fetch on the second aside, and the order read other", got[0].Key(), got[1].Key(), got[4].Key())
	}
	for i, read := range []bool{true, true, false, false, true} {
		if got[i].Read() != read {
			t.Errorf("call %d (%s): Read %v, want %v", i, got[i].Key(), got[i].Read(), read)
		}
	}

	e.sim.ResetCalls()
	if n := len(e.sim.Calls()); n != 0 {
		t.Errorf("after ResetCalls: %d calls, want none", n)
	}
}

func TestCallsOffByDefault(t *testing.T) {
	e := newEnv(t, sim.Options{})
	e.get(bpSrv + "/A_Supplier('100042')")
	if n := len(e.sim.Calls()); n != 0 {
		t.Errorf("calls without RecordCalls: %d, want none", n)
	}
}
