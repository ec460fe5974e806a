package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
)

// BenchmarkAccessLogInvocation is what an operation's line of the access
// log costs for its arguments and the ERP's calls: the line of a read
// (one id, one entity set) and of a write with free text (an id, three
// body fields, one of them redacted, and three entity sets), each with
// those attributes (invocation) and without (plain).
func BenchmarkAccessLogInvocation(b *testing.B) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, c := range []struct {
		name   string
		fields map[string]json.RawMessage
		called [][2]string
	}{
		{"read", nil, [][2]string{{"API_SUPPLIERINVOICE_PROCESS_SRV", "A_SupplierInvoice"}}},
		{"write", map[string]json.RawMessage{"proposed_action": json.RawMessage(`"accept_variance"`),
			"justification": json.RawMessage(`"Unit price 8 % over the PO; surcharge confirmed by the supplier."`),
			"run_id":        json.RawMessage(`"run-42"`)},
			[][2]string{{"API_SUPPLIERINVOICE_PROCESS_SRV", "A_SupplierInvoice"}, {"API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrder"},
				{"API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentItem"}}},
	} {
		rc := chi.NewRouteContext()
		rc.URLParams.Add("invoice_id", "5105600101")
		r := httptest.NewRequest(http.MethodGet, "/invoices/5105600101", nil)
		r = r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rc))
		for _, with := range []bool{false, true} {
			name := c.name + "/plain"
			if with {
				name = c.name + "/invocation"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					rec := &requestRecord{operation: "get_invoice", client: "agent", fields: c.fields}
					attrs := make([]slog.Attr, 0, 13)
					attrs = append(attrs, slog.String("request_id", "0123456789abcdef0123456789abcdef"), slog.String("method", "GET"),
						slog.String("path", logPath(r)), slog.Int("status", 200), slog.Int64("duration_ms", 0),
						slog.String("operation", rec.operation), slog.String("client", rec.client))
					if with {
						for _, t := range c.called {
							rec.called.Add(t[0], t[1])
						}
						attrs = appendInvocation(attrs, r, rec)
					}
					logger.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
				}
			})
		}
	}
}
