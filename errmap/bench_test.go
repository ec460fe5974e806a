package errmap_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
)

// BenchmarkMapMarshalUpstream names an SAP business error (a closed posting
// period, by its message id) and encodes its five-field body.
func BenchmarkMapMarshalUpstream(b *testing.B) {
	up := &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Operation: "release invoice", Write: true,
		Status: http.StatusBadRequest, MessageIDs: []string{"F5/201"}, Keys: map[string]string{"invoice_id": "5105600109"},
		Attempts: 1, Text: "Posting period 011 2025 is not open"}
	b.ReportAllocs()
	for b.Loop() {
		e := errmap.Map(up)
		if e.Code != errmap.PeriodClosed {
			b.Fatalf("code %s", e.Code)
		}
		_ = e.Marshal()
	}
}

// BenchmarkMapMarshalUnavailable names a 503 after three attempts, the
// error an agent sees most in a brown-out, and encodes it.
func BenchmarkMapMarshalUnavailable(b *testing.B) {
	up := &erp.UpstreamError{Service: erp.ServicePurchaseOrder, Operation: "read purchase order",
		Status: http.StatusServiceUnavailable, Keys: map[string]string{"po_id": "4500018822"}, Transient: true, Attempts: 3}
	b.ReportAllocs()
	for b.Loop() {
		_ = errmap.Map(up).Marshal()
	}
}

// headerWriter is a ResponseWriter that discards the body.
type headerWriter struct{ h http.Header }

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) WriteHeader(int)             {}
func (w *headerWriter) Write(p []byte) (int, error) { return io.Discard.Write(p) }

// BenchmarkWrite is the encoding of an error body with its headers.
func BenchmarkWrite(b *testing.B) {
	e := errmap.Map(&erp.NotFoundError{Entity: erp.EntityInvoice, ID: "5105600999"})
	w := &headerWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		errmap.Write(w, e)
	}
}
