package sap

import (
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// gzipWriter compresses what a handler writes.
type gzipWriter struct {
	http.ResponseWriter
	zw *gzip.Writer
}

func (w gzipWriter) Write(p []byte) (int, error) { return w.zw.Write(p) }

// TestGzipAnswers reads an invoice from an ERP that compresses its
// answers, as SAP's ICM does when asked, and holds it to the invoice read
// uncompressed: the client asks for gzip itself and decompresses.
func TestGzipAnswers(t *testing.T) {
	simulator := sim.New(sim.Options{})
	var asked []string
	gz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		defer zw.Close()
		simulator.ServeHTTP(gzipWriter{ResponseWriter: w, zw: zw}, r)
	}))
	t.Cleanup(gz.Close)
	plain := httptest.NewServer(simulator)
	t.Cleanup(plain.Close)

	// An invoice and a not-found, each as the client reads it.
	read := func(url string) []any {
		t.Helper()
		c, err := New(url, Options{Runner: retry.New(oneAttempt(5*time.Second), nil)})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := c.Invoice(context.Background(), "5105600101")
		if err != nil {
			t.Fatalf("invoice from %s: %v", url, err)
		}
		_, err = c.Invoice(context.Background(), "5105600999")
		return []any{inv, err}
	}
	want, got := read(plain.URL), read(gz.URL)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read compressed: %+v\nread plain: %+v", got, want)
	}
	for _, enc := range asked {
		if enc != "gzip" {
			t.Errorf("Accept-Encoding %q, want gzip", enc)
		}
	}
	if len(asked) == 0 {
		t.Error("the compressing ERP was not asked")
	}
}

// TestGzipAnswerBroken is an answer that says gzip and is not: a read
// error, as the transport's own decompression made it.
func TestGzipAnswerBroken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write([]byte(`{"d":{"results":[]}}`))
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, Options{Runner: retry.New(oneAttempt(5*time.Second), nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoice(context.Background(), "5105600101"); err == nil {
		t.Fatal("no error for a broken gzip answer")
	}
}
