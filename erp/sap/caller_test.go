package sap

import (
	"context"
	"testing"

	"github.com/erpgate/erpgate/erp"
)

func TestCallerHeader(t *testing.T) {
	for _, c := range []struct {
		caller erp.Caller
		want   string
	}{
		{erp.Caller{Name: "ap-agent"}, `key="ap-agent"`},
		{erp.Caller{Name: "app-7", Client: "app-7", Subject: "alice@example.com"}, `client="app-7", sub="alice@example.com"`},
		{erp.Caller{Name: "u1", Subject: "u1"}, `sub="u1"`},
		{erp.Caller{Name: "x", Client: `a"b\c`, Subject: "José\r\nX-Evil: 1 100%"}, `client="a\"b\\c", sub="Jos%C3%A9%0D%0AX-Evil: 1 100%25"`},
	} {
		if got := callerValue(c.caller); got != c.want {
			t.Errorf("%+v: %s, want %s", c.caller, got, c.want)
		}
	}
	if h := callHeadersOf(context.Background(), context.Background()); !h.empty() {
		t.Errorf("a call of the gateway's own has headers %+v", h)
	}
	ctx := erp.WithCaller(context.Background(), erp.Caller{Name: "ap-agent"})
	if h := callHeadersOf(ctx, ctx); len(h.caller) != 1 || h.caller[0] != `key="ap-agent"` || h.traceparent != nil {
		t.Errorf("headers %+v", h)
	}
	if got := erp.PrincipalFrom(erp.WithCaller(context.Background(), erp.Caller{Name: "bot", Client: "bot", Subject: "s"})); got != "bot" {
		t.Errorf("PrincipalFrom: %q", got)
	}
}

func TestResourceOf(t *testing.T) {
	svc := servicePaths[erp.ServiceSupplierInvoice]
	for url, want := range map[string]string{
		"https://s4/sap/opu/odata/sap/" + svc + "/A_SupplierInvoice(SupplierInvoice='1',FiscalYear='2024')?$expand=x": "A_SupplierInvoice",
		"https://s4/sap/opu/odata/sap/" + svc + "/Post?SupplierInvoice='1'":                                           "Post",
		"https://s4/sap/opu/odata/sap/" + svc + "/$metadata":                                                          "$metadata",
		"https://s4/sap/opu/odata/sap/" + svc + "/":                                                                   "",
		"https://s4/elsewhere": "",
	} {
		if got := resourceOf(url, svc); got != want {
			t.Errorf("%s: %q, want %q", url, got, want)
		}
	}
}
