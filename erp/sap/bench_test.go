package sap

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// invoiceListJSON is an A_SupplierInvoice list answer with its purchase
// order references expanded, as S/4HANA sends it, with n lines.
func invoiceListJSON(n int) []byte {
	const root = "http://s4.example.com/sap/opu/odata/sap/API_SUPPLIERINVOICE_PROCESS_SRV/"
	var items []string
	for i := 1; i <= n; i++ {
		key := fmt.Sprintf("SupplierInvoice='5105600101',FiscalYear='2026',SupplierInvoiceItem='%d',PurchaseOrder='4500018822',PurchaseOrderItem='%d'", i, i*10)
		items = append(items, fmt.Sprintf(`{"__metadata":{"id":"%[1]sA_SuplrInvcItemPurOrdRef(%[2]s)","uri":"%[1]sA_SuplrInvcItemPurOrdRef(%[2]s)",`+
			`"type":"API_SUPPLIERINVOICE_PROCESS_SRV.A_SuplrInvcItemPurOrdRefType"},"SupplierInvoice":"5105600101","FiscalYear":"2026",`+
			`"SupplierInvoiceItem":"%[3]d","PurchaseOrder":"4500018822","PurchaseOrderItem":"%[4]d","QuantityInPurchaseOrderUnit":"10.000",`+
			`"PurchaseOrderQuantityUnit":"EA","SupplierInvoiceItemAmount":"1000.00","DocumentCurrency":"EUR"}`, root, key, i, i*10))
	}
	key := "SupplierInvoice='5105600101',FiscalYear='2026'"
	return fmt.Appendf(nil, `{"d":{"results":[{"__metadata":{"id":"%[1]sA_SupplierInvoice(%[2]s)","uri":"%[1]sA_SupplierInvoice(%[2]s)",`+
		`"type":"API_SUPPLIERINVOICE_PROCESS_SRV.A_SupplierInvoiceType"},"SupplierInvoice":"5105600101","FiscalYear":"2026",`+
		`"CompanyCode":"1010","DocumentDate":"/Date(1795132800000)/","PostingDate":"/Date(1795478400000)/","InvoicingParty":"100042",`+
		`"SupplierInvoiceIDByInvcgParty":"ACME-2026-0412","DocumentCurrency":"EUR","InvoiceGrossAmount":"%[3]d.00",`+
		`"SupplierInvoiceStatus":"A","PaymentBlockingReason":"","to_SuplrInvcItemPurOrdRef":{"results":[%[4]s]}}]}}`,
		root, key, 1000*n, strings.Join(items, ","))
}

// BenchmarkDecodeInvoiceList is the SAP client's decoding of an invoice
// read: the OData envelope, the entity with its expanded lines, and the
// conversion to the domain type, for 1 and 10 lines.
func BenchmarkDecodeInvoiceList(b *testing.B) {
	for _, n := range []int{1, 10} {
		body := invoiceListJSON(n)
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				list, err := decodeList[wireInvoice](body)
				if err != nil {
					b.Fatal(err)
				}
				inv, err := list[0].toDomain()
				if err != nil {
					b.Fatal(err)
				}
				if len(inv.Lines) != n {
					b.Fatalf("%d lines, want %d", len(inv.Lines), n)
				}
			}
		})
	}
}

// TestOnePassDecodingAgrees holds the one-pass readers of OData answers to
// the general ones: the same value for every body they accept, and the
// same error for every body they refuse.
func TestOnePassDecodingAgrees(t *testing.T) {
	lists := []string{
		string(invoiceListJSON(1)),
		string(invoiceListJSON(10)),
		`{"d":{"results":[]}}`,
		`{"d":[{"SupplierInvoice":"5105600101","SupplierInvoiceStatus":"A"}]}`,
		`{"d":[]}`,
		`{"d":{"results":null}}`,
		`{"d":{}}`,
		`{"d":null}`,
		`{}`,
		`{"d":"x"}`,
		`{"d":{"results":[{"SupplierInvoice":"1","DocumentDate":"/Date(x)/"}]}}`,
		`{"d":{"results":[{"SupplierInvoice":"1","InvoiceGrossAmount":"1,0"}]}}`,
		`{"d":{"results":[{"SupplierInvoice":1}]}}`,
		`{"d":{"results":[]}} trailing`,
		`not json`,
	}
	for i, body := range lists {
		fast, fastErr := decodeList[wireInvoice]([]byte(body))
		slow, slowErr := decodeAnyList[wireInvoice]([]byte(body))
		if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("list %d:\none pass %+v, %v\ngeneral  %+v, %v", i, fast, fastErr, slow, slowErr)
		}
	}
	entities := []string{
		`{"d":{"PurchaseOrder":"4500018822","to_PurchaseOrderItem":{"results":[{"PurchaseOrderItem":"10","OrderQuantity":"10"}]}}}`,
		`{"d":{}}`,
		`{"d":[]}`,
		`{"d":null}`,
		`{}`,
		`{"d":{"PurchaseOrder":4500018822}}`,
		`[]`,
	}
	for _, body := range entities {
		fast, fastErr := entityOf[wirePurchaseOrder]([]byte(body))
		var slow wirePurchaseOrder
		slowErr := decodeEntity([]byte(body), &slow)
		if slowErr != nil {
			slow = wirePurchaseOrder{}
		}
		if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s:\none pass %+v, %v\ngeneral  %+v, %v", body, fast, fastErr, slow, slowErr)
		}
	}
}

// TestPlainStringsAgree holds the reading of dates and decimals without a
// nested JSON decoder to the full decoder, escapes and odd bytes included.
func TestPlainStringsAgree(t *testing.T) {
	for _, raw := range []string{`"12.50"`, `" 12.50 "`, `"\u0031\u0032"`, `"1\"2"`, `"/Date(1795132800000)/"`,
		`"\/Date(1795132800000)\/"`, `"/Date(1795132800000+0060)/"`, `""`, `"é"`, "\"1\x7f\"", `"2026-11-20T00:00:00Z"`, `"x"`} {
		var want string
		wantErr := json.Unmarshal([]byte(raw), &want)
		got, ok := plainString([]byte(raw))
		if ok && (wantErr != nil || got != want) {
			t.Errorf("plainString(%s) = %q, the JSON decoder reads %q (%v)", raw, got, want, wantErr)
		}
		var d1, d2 sapDecimal
		e1 := d1.UnmarshalJSON([]byte(raw))
		e2 := json.Unmarshal([]byte(`{"v":`+raw+`}`), &struct{ V *sapDecimal }{&d2})
		if (e1 == nil) != (e2 == nil) || !d1.Equal(d2.Decimal) {
			t.Errorf("decimal %s: direct %v (%v), in a document %v (%v)", raw, d1, e1, d2, e2)
		}
		var t1, t2 sapDate
		e1 = t1.UnmarshalJSON([]byte(raw))
		e2 = json.Unmarshal([]byte(`{"v":`+raw+`}`), &struct{ V *sapDate }{&t2})
		if (e1 == nil) != (e2 == nil) || !t1.Equal(t2.Time) {
			t.Errorf("date %s: direct %v (%v), in a document %v (%v)", raw, t1, e1, t2, e2)
		}
	}
}
