package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	erpgate "github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp"
)

// allocReading is allocations per get_invoice, from the gateway's code run
// in process as api's BenchmarkGetInvoice and BenchmarkProxiedRead do.
type allocReading struct {
	gateway float64 // router, middleware, operation wrapper, encoding; the ERP costs nothing
	proxied float64 // the same with the SAP client, its runner and decoding the ERP's answer
}

// oneInvoice is an ERP that has one invoice and costs nothing to ask.
type oneInvoice struct {
	erp.Client
	inv erp.Invoice
}

func (o oneInvoice) Invoice(context.Context, string) (erp.Invoice, error) { return o.inv, nil }

// canned answers every request with one recorded answer.
type canned struct {
	status int
	header http.Header
	body   []byte
}

func (c *canned) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: c.status, Header: c.header, Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)), Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// measureAllocs counts the allocations of one get_invoice through the
// gateway's handler, with the logger the gateway runs with writing nowhere.
// The ERP's answer to readPath is recorded from the ERP at erpURL first.
func measureAllocs(ctx context.Context, erpURL, readPath string) (allocReading, error) {
	var r allocReading
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, erpURL+readPath, nil)
	if err != nil {
		return r, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return r, err
	}
	rec := &canned{status: resp.StatusCode, header: resp.Header, body: body}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))

	// Both gateways read the ERP through rec; the first reads it for real,
	// the second holds the invoice the first read and asks nothing.
	cfg := erpgate.Config{ERPURL: erpURL, ERPHTTPClient: &http.Client{Transport: rec}, SkipMetadata: true, Logger: logger}
	proxiedGW, err := erpgate.New(ctx, cfg)
	if err != nil {
		return r, err
	}
	defer proxiedGW.Close()
	inv, err := proxiedGW.ERP().Invoice(ctx, invoiceID)
	if err != nil {
		return r, err
	}
	cfg.WrapERP = func(erp.Client) erp.Client { return oneInvoice{inv: inv} }
	fakeGW, err := erpgate.New(ctx, cfg)
	if err != nil {
		return r, err
	}
	defer fakeGW.Close()
	fake, proxied := fakeGW.REST(), proxiedGW.REST()
	if r.gateway, err = allocsPerRead(fake); err != nil {
		return r, err
	}
	r.proxied, err = allocsPerRead(proxied)
	return r, err
}

// allocsPerRead runs GET /invoices/{id} through h and returns the mean
// allocations of a run.
func allocsPerRead(h http.Handler) (float64, error) {
	req := httptest.NewRequest(http.MethodGet, "/invoices/"+invoiceID, nil)
	w := &nullWriter{h: http.Header{}}
	h.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		return 0, fmt.Errorf("get_invoice in process: status %d", w.status)
	}
	return testing.AllocsPerRun(2000, func() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}), nil
}

// nullWriter is a ResponseWriter that keeps only the status.
type nullWriter struct {
	h      http.Header
	status int
}

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) WriteHeader(status int)      { w.status = status }
func (w *nullWriter) Write(p []byte) (int, error) { return len(p), nil }

// memCount is the gateway's allocation counters: objects and bytes
// allocated since it started.
type memCount struct{ mallocs, bytes float64 }

// memCounters reads go_memstats_mallocs_total and
// go_memstats_alloc_bytes_total from the gateway's /metrics.
func memCounters(ctx context.Context, client *http.Client, baseURL string) (memCount, error) {
	var c memCount
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return c, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	found := 0
	for sc.Scan() {
		for name, dst := range map[string]*float64{"go_memstats_mallocs_total ": &c.mallocs, "go_memstats_alloc_bytes_total ": &c.bytes} {
			if v, ok := strings.CutPrefix(sc.Text(), name); ok {
				if *dst, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					return c, err
				}
				found++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if found < 2 {
		return c, fmt.Errorf("no go_memstats_mallocs_total or go_memstats_alloc_bytes_total in %s/metrics", baseURL)
	}
	return c, nil
}
