package sap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// same compares domain values by their printed form, which prints decimals
// and times by value.
func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

func TestInvoice(t *testing.T) {
	f := newFake(t, respond(200, list(invoiceJSON("5105600101", "2026", "A", ""))))
	got, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
	if err != nil {
		t.Fatalf("Invoice: got error %v, want nil", err)
	}
	want := erp.Invoice{
		ID: "5105600101", FiscalYear: "2026", CompanyCode: "1010", SupplierID: "100042",
		SupplierRef: "ACME-2026-0412", DocumentDate: day(2026, 11, 20), PostingDate: day(2026, 11, 24),
		Currency: "EUR", GrossAmount: dec("1000.00"), Status: erp.InvoiceParked, SAPStatus: "A",
		Lines: []erp.InvoiceLine{{Item: "1", POID: "4500018822", POItem: "10", Quantity: dec("10"), Unit: "EA", Amount: dec("1000")}},
	}
	same(t, "invoice", got, want)

	reqs := f.odata()
	if len(reqs) != 1 {
		t.Fatalf("requests: got %d, want 1", len(reqs))
	}
	r := reqs[0]
	if r.path != invPath+"A_SupplierInvoice" {
		t.Errorf("path: got %q, want %q", r.path, invPath+"A_SupplierInvoice")
	}
	if got, want := r.query["$filter"], []string{"SupplierInvoice eq '5105600101'"}; !slices.Equal(got, want) {
		t.Errorf("$filter: got %q, want %q", got, want)
	}
	if got, want := r.query["$expand"], []string{"to_SuplrInvcItemPurOrdRef"}; !slices.Equal(got, want) {
		t.Errorf("$expand: got %q, want %q", got, want)
	}
	if got := r.header.Get("Accept"); got != "application/json" {
		t.Errorf("Accept: got %q, want application/json", got)
	}
}

func TestInvoiceLatestFiscalYear(t *testing.T) {
	f := newFake(t, respond(200, list(invoiceJSON("5105600101", "2025", "5", ""), invoiceJSON("5105600101", "2026", "A", ""))))
	got, err := f.client(Options{}).Invoice(context.Background(), "5105600101")
	if err != nil {
		t.Fatalf("Invoice: got error %v, want nil", err)
	}
	if got.FiscalYear != "2026" {
		t.Errorf("fiscal year: got %q, want 2026", got.FiscalYear)
	}
}

func TestInvoiceEmptyListIsNotFound(t *testing.T) {
	f := newFake(t, respond(200, list()))
	_, err := f.client(Options{}).Invoice(context.Background(), "5105600199")
	var nf *erp.NotFoundError
	if !errors.As(err, &nf) || nf.Entity != erp.EntityInvoice || nf.ID != "5105600199" {
		t.Fatalf("got %v, want NotFoundError invoice 5105600199", err)
	}
}

func TestInvoicesBySupplierRef(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Query().Get("$filter"), "NONE") {
			writeJSON(w, 200, list())
			return
		}
		writeJSON(w, 200, list(invoiceJSON("5105600100", "2026", "5", ""), invoiceJSON("5105600107", "2026", "A", "")))
	})
	c := f.client(Options{})
	got, err := c.InvoicesBySupplierRef(context.Background(), "100043", "INV-88120")
	if err != nil {
		t.Fatalf("InvoicesBySupplierRef: got error %v, want nil", err)
	}
	if len(got) != 2 || got[0].ID != "5105600100" || got[1].ID != "5105600107" {
		t.Errorf("invoices: got %+v, want 5105600100 and 5105600107", got)
	}
	want := "InvoicingParty eq '100043' and SupplierInvoiceIDByInvcgParty eq 'INV-88120'"
	if got := f.odata()[0].query["$filter"]; !slices.Equal(got, []string{want}) {
		t.Errorf("$filter: got %q, want %q", got, want)
	}

	none, err := c.InvoicesBySupplierRef(context.Background(), "100043", "NONE")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("no match: got %#v, %v, want an empty non-nil slice", none, err)
	}
}

const poJSON = `{"d":{"PurchaseOrder":"4500018822","Supplier":"100042","CompanyCode":"1010","DocumentCurrency":"EUR",
"PurchasingDocumentDeletionCode":"","to_PurchaseOrderItem":{"results":[
{"PurchaseOrder":"4500018822","PurchaseOrderItem":"00010","Material":"M-BOLT-M8","PurchaseOrderItemText":"Steel bolts M8",
 "OrderQuantity":"10.000","PurchaseOrderQuantityUnit":"EA","NetPriceAmount":"100.00","NetPriceQuantity":"1","DocumentCurrency":"EUR",
 "IsFinallyInvoiced":false,"IsCompletelyDelivered":true,"InvoiceIsGoodsReceiptBased":true,"GoodsReceiptIsExpected":true,
 "PurchasingDocumentDeletionCode":""},
{"PurchaseOrder":"4500018822","PurchaseOrderItem":"20","Material":"","PurchaseOrderItemText":"Hex nuts M8",
 "OrderQuantity":"5","PurchaseOrderQuantityUnit":"EA","NetPriceAmount":200,"NetPriceQuantity":"","DocumentCurrency":"",
 "IsFinallyInvoiced":true,"IsCompletelyDelivered":false,"InvoiceIsGoodsReceiptBased":false,"GoodsReceiptIsExpected":false,
 "PurchasingDocumentDeletionCode":"L"}]}}}`

func TestPurchaseOrder(t *testing.T) {
	f := newFake(t, respond(200, poJSON))
	got, err := f.client(Options{}).PurchaseOrder(context.Background(), "4500018822")
	if err != nil {
		t.Fatalf("PurchaseOrder: got error %v, want nil", err)
	}
	want := erp.PurchaseOrder{
		ID: "4500018822", SupplierID: "100042", CompanyCode: "1010", Currency: "EUR",
		Items: []erp.POItem{
			{Item: "10", Material: "M-BOLT-M8", Text: "Steel bolts M8", Quantity: dec("10"), Unit: "EA", NetPrice: dec("100"),
				PriceUnit: dec("1"), Currency: "EUR", CompletelyDelivered: true, GoodsReceiptBased: true, GoodsReceiptExpected: true},
			{Item: "20", Text: "Hex nuts M8", Quantity: dec("5"), Unit: "EA", NetPrice: dec("200"), PriceUnit: decimal.Zero,
				Currency: "EUR", FinallyInvoiced: true, DeletionCode: "L"},
		},
	}
	same(t, "purchase order", got, want)
	r := f.odata()[0]
	if want := poPath + "A_PurchaseOrder('4500018822')"; r.path != want {
		t.Errorf("path: got %q, want %q", r.path, want)
	}
	if got := r.query["$expand"]; !slices.Equal(got, []string{"to_PurchaseOrderItem"}) {
		t.Errorf("$expand: got %q, want to_PurchaseOrderItem", got)
	}
}

func TestNotFoundPerEntity(t *testing.T) {
	notFound := respond(404, `{"error":{"code":"/IWBEP/CM_MGW_RT/020","message":{"lang":"en","value":"Resource not found"}}}`)
	tests := []struct {
		name   string
		call   func(*Client) error
		entity erp.Entity
		id     string
	}{
		{"purchase order", func(c *Client) error { _, err := c.PurchaseOrder(context.Background(), "4500019822"); return err },
			erp.EntityPurchaseOrder, "4500019822"},
		{"release", func(c *Client) error {
			_, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600199", FiscalYear: "2026"}, "")
			return err
		}, erp.EntityInvoice, "5105600199"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, notFound)
			err := tt.call(f.client(Options{}))
			var nf *erp.NotFoundError
			if !errors.As(err, &nf) || nf.Entity != tt.entity || nf.ID != tt.id {
				t.Fatalf("got %v, want NotFoundError %s %s", err, tt.entity, tt.id)
			}
		})
	}
}

// TestIDEscaping checks that no id can change the URL's structure: the
// server sees the id back, OData-quoted, in the one place it was put.
func TestIDEscaping(t *testing.T) {
	ids := []string{"45'00", "x') or ('1", "a/b?c&d=e#f", "sp ace+plus%20", "../../A_Supplier('1')", "ü€"}
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			f := newFake(t, respond(404, `{"error":{"code":"/IWBEP/CM_MGW_RT/020","message":"no"}}`))
			c := f.client(Options{})
			c.PurchaseOrder(context.Background(), id)
			c.Supplier(context.Background(), id)
			c.Invoice(context.Background(), id)
			c.GoodsReceipts(context.Background(), id, id)
			q := strings.ReplaceAll(id, "'", "''")
			want := []struct {
				path  string
				query map[string]string
			}{
				{poPath + "A_PurchaseOrder('" + q + "')", map[string]string{"$expand": "to_PurchaseOrderItem"}},
				{bpPath + "A_BusinessPartner", map[string]string{"$filter": "Supplier eq '" + q + "'", "$expand": "to_Supplier,to_BusinessPartnerAddress"}},
				{invPath + "A_SupplierInvoice", map[string]string{"$filter": "SupplierInvoice eq '" + q + "'", "$expand": "to_SuplrInvcItemPurOrdRef"}},
				{mdPath + "A_MaterialDocumentItem", map[string]string{"$filter": "PurchaseOrder eq '" + q + "' and PurchaseOrderItem eq '" + q +
					"' and GoodsMovementType eq '101' and GoodsMovementIsCancelled eq false", "$expand": "to_MaterialDocumentHeader"}},
			}
			got := f.odata()
			if len(got) != len(want) {
				t.Fatalf("requests: got %d, want %d", len(got), len(want))
			}
			for i, w := range want {
				if got[i].path != w.path {
					t.Errorf("path: got %q, want %q", got[i].path, w.path)
				}
				if len(got[i].query) != len(w.query) {
					t.Errorf("query of %s: got %q, want %q", w.path, got[i].query, w.query)
				}
				for k, v := range w.query {
					if g := got[i].query[k]; !slices.Equal(g, []string{v}) {
						t.Errorf("%s: got %q, want %q", k, g, v)
					}
				}
			}
		})
	}
}

func TestBasicAuthAndSAPClient(t *testing.T) {
	f := newFake(t, respond(200, list(supplierJSON)))
	c := f.client(Options{User: "ERPGATE", Password: "s3cret", Client: "100"})
	if _, err := c.Supplier(context.Background(), "100042"); err != nil {
		t.Fatalf("Supplier: got error %v, want nil", err)
	}
	r := f.odata()[0]
	req := &http.Request{Header: r.header}
	if u, p, ok := req.BasicAuth(); !ok || u != "ERPGATE" || p != "s3cret" {
		t.Errorf("basic auth: got %q %q %v, want ERPGATE s3cret", u, p, ok)
	}
	if got := r.query["sap-client"]; !slices.Equal(got, []string{"100"}) {
		t.Errorf("sap-client: got %q, want 100", got)
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "ftp://host", "http://", "::", "http://host/?a=b"} {
		if _, err := New(u, Options{}); err == nil {
			t.Errorf("New(%q): got nil error, want one", u)
		}
	}
	c, err := New("https://s4.example.com:44300/", Options{})
	if err != nil {
		t.Fatalf("New: got %v, want nil", err)
	}
	if got, want := c.url(erp.ServiceBusinessPartner, "A_Supplier"), "https://s4.example.com:44300/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier"; got != want {
		t.Errorf("url: got %q, want %q", got, want)
	}
}
