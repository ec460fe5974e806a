package sap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/erpgate/erpgate/retry"
)

// BenchmarkReadDefaultClient is one invoice read by the client with its
// own HTTP client (cookie jar, pooled connections) from a server on
// loopback that answers at once: what the client itself adds to a read,
// sockets included.
func BenchmarkReadDefaultClient(b *testing.B) {
	body := invoiceListJSON(1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c, err := New(srv.URL, Options{User: "ERPGATE_SVC", Password: "s3cret", Runner: retry.New(retry.Policy{}, nil)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Invoice(ctx, "5105600101"); err != nil {
			b.Fatal(err)
		}
	}
}
