package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/runs"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// fixedERP answers Invoice with one invoice, or not found for any other
// id, without I/O.
type fixedERP struct {
	erp.Client
	inv erp.Invoice
}

func (f fixedERP) Invoice(_ context.Context, id string) (erp.Invoice, error) {
	if id != f.inv.ID {
		return erp.Invoice{}, &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id}
	}
	return f.inv, nil
}

func benchInvoice() erp.Invoice {
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	return erp.Invoice{
		ID: "5105600101", FiscalYear: "2026", CompanyCode: "1010", SupplierID: "100042", SupplierRef: "ACME-2026-0412",
		DocumentDate: day, PostingDate: day.AddDate(0, 0, 4), Currency: "EUR",
		GrossAmount: decimal.RequireFromString("1000.00"), Status: erp.InvoiceParked,
		Lines: []erp.InvoiceLine{{Item: "1", POID: "4500018822", POItem: "10",
			Quantity: decimal.RequireFromString("10.000"), Unit: "EA", Amount: decimal.RequireFromString("1000.00")}},
	}
}

// discardWriter is a ResponseWriter that keeps only the status, so the
// benchmark counts the gateway's allocations and not a recorder's.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func (w *discardWriter) reset() {
	clear(w.h)
	w.status = 0
}

// serveLoop sends GET path to h b.N times and checks the status.
func serveLoop(b *testing.B, h http.Handler, path string, want int) {
	b.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, req)
		if w.status != want {
			b.Fatalf("status %d, want %d", w.status, want)
		}
	}
}

// benchLogger is the gateway's production logger, JSON at info, writing
// nowhere: the access log's formatting is part of every request.
func benchLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

func benchServer(b *testing.B, client erp.Client) *api.Server {
	b.Helper()
	srv, err := api.NewServer(api.Options{ERP: client, Records: testRecords(b), Logger: benchLogger()})
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// BenchmarkGetInvoice is the gateway's own work for a read: routing, the
// request-id, access-log and recover middleware, the operation wrapper with
// its metrics, and encoding the success body, over an ERP that costs
// nothing.
func BenchmarkGetInvoice(b *testing.B) {
	srv := benchServer(b, fixedERP{inv: benchInvoice()})
	serveLoop(b, srv, "/invoices/5105600101", http.StatusOK)
}

// BenchmarkGetInvoiceNotFound is the same read answered INVOICE_NOT_FOUND:
// the error path through errmap.
func BenchmarkGetInvoiceNotFound(b *testing.B) {
	srv := benchServer(b, fixedERP{inv: benchInvoice()})
	serveLoop(b, srv, "/invoices/5105600999", http.StatusNotFound)
}

// cannedTransport answers every request with one recorded response, so a
// benchmark of the SAP client spends nothing on sockets.
type cannedTransport struct {
	status int
	header http.Header
	body   []byte
}

func (c *cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: c.status, Header: c.header, Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)), Request: req, ProtoMajor: 1, ProtoMinor: 1}, nil
}

// recordSim returns the simulated ERP's answer to the SAP client's request
// for invoice id, as a transport that replays it.
func recordSim(b *testing.B, id string) *cannedTransport {
	b.Helper()
	var rec *cannedTransport
	simulator := sim.New(sim.Options{})
	capture := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		w := httptest.NewRecorder()
		if req.Body == nil {
			req.Body = http.NoBody
		}
		simulator.ServeHTTP(w, req)
		rec = &cannedTransport{status: w.Code, header: w.Header().Clone(), body: w.Body.Bytes()}
		return rec.RoundTrip(req)
	})
	client, err := sap.New("http://sap.invalid", sap.Options{HTTPClient: &http.Client{Transport: capture}})
	if err != nil {
		b.Fatal(err)
	}
	_, _ = client.Invoice(context.Background(), id)
	if rec == nil {
		b.Fatal("the SAP client sent no request")
	}
	return rec
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// BenchmarkProxiedRead is a whole get_invoice as the gateway process does
// it, minus the sockets: router, operation wrapper, the SAP client with its
// retry runner and breaker, decoding the OData answer recorded from the
// simulated ERP, and encoding the success body.
func BenchmarkProxiedRead(b *testing.B) {
	for _, tc := range []struct {
		name, id string
		want     int
	}{{"found", "5105600101", http.StatusOK}, {"not_found", "5105600999", http.StatusNotFound}} {
		b.Run(tc.name, func(b *testing.B) {
			metrics := api.NewMetrics()
			client, err := sap.New("http://sap.invalid", sap.Options{
				HTTPClient: &http.Client{Transport: recordSim(b, tc.id)},
				Runner:     retry.New(retry.Policy{}, metrics),
			})
			if err != nil {
				b.Fatal(err)
			}
			srv, err := api.NewServer(api.Options{ERP: client, Records: testRecords(b), Metrics: metrics, Logger: benchLogger()})
			if err != nil {
				b.Fatal(err)
			}
			serveLoop(b, srv, "/invoices/"+tc.id, tc.want)
		})
	}
}

// BenchmarkGuard is the loop guard's bookkeeping for a call that carries a
// run id: Admit before the ERP call and Finish after it, in the in-memory
// store, for a run's first call and for a call after nine others.
func BenchmarkGuard(b *testing.B) {
	for _, prior := range []int{0, 9} {
		b.Run("prior="+strconv.Itoa(prior), func(b *testing.B) {
			ctx := context.Background()
			g := runs.NewGuard(runs.NewMemory(nil, 0), runs.Limits{}, nil, nil)
			call := func(i int) runs.Call {
				return runs.Call{Operation: "get_invoice", InvoiceID: "5105600101", Digest: "digest-" + strconv.Itoa(i)}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				run := "run-" + strconv.Itoa(n)
				n++
				if prior > 0 {
					b.StopTimer()
					for i := range prior {
						seq, _, _ := g.Admit(ctx, run, call(i))
						_ = g.Finish(ctx, run, seq, call(i), api.OutcomeOK, nil)
					}
					b.StartTimer()
				}
				seq, refusal, err := g.Admit(ctx, run, call(prior))
				if err != nil || refusal != nil {
					b.Fatalf("admit: %v %v", err, refusal)
				}
				if err := g.Finish(ctx, run, seq, call(prior), api.OutcomeOK, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteError is the encoding of an error body as the gateway
// sends it.
func BenchmarkWriteError(b *testing.B) {
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		e := errmap.Map(&erp.NotFoundError{Entity: erp.EntityInvoice, ID: "5105600999"})
		errmap.Write(w, e.WithDetail("invoice_id", "5105600999"))
	}
}

// BenchmarkProxiedReadOverSockets is BenchmarkProxiedRead found with both
// of the gateway's HTTP hops on loopback sockets: a client that writes one
// request after the other on a keep-alive connection to the gateway's
// net/http server, and the SAP client with its default HTTP client
// (transport, cookie jar) asking an ERP that replays the simulator's
// answer. It counts what net/http costs the gateway besides its own code;
// the client and the ERP allocate next to nothing.
func BenchmarkProxiedReadOverSockets(b *testing.B) {
	erpURL := replayERP(b, recordedAnswer(b))
	metrics := api.NewMetrics()
	client, err := sap.New(erpURL, sap.Options{Runner: retry.New(retry.Policy{}, metrics)})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := api.NewServer(api.Options{ERP: client, Records: testRecords(b), Metrics: metrics, Logger: benchLogger()})
	if err != nil {
		b.Fatal(err)
	}
	benchOverSockets(b, srv, "GET /invoices/5105600101 HTTP/1.1\r\nHost: erpgate\r\n\r\n")
}

// BenchmarkGoProxyOverSockets is the floor under
// BenchmarkProxiedReadOverSockets: net/http/httputil's ReverseProxy alone,
// with the transport cmd/loadbench/goproxy gives it, forwarding the same
// read to the same replaying ERP. Its client asks for gzip, as Go's HTTP
// client does, so that the proxy passes the ERP's answer on as it came.
func BenchmarkGoProxyOverSockets(b *testing.B) {
	erpURL := replayERP(b, recordedAnswer(b))
	u, err := url.Parse(erpURL)
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 128, 128
	proxy.Transport = transport
	benchOverSockets(b, proxy, "GET /invoices/5105600101 HTTP/1.1\r\nHost: erpgate\r\nAccept-Encoding: gzip\r\n\r\n")
}

// recordedAnswer is the simulator's HTTP answer to the SAP client's read
// of invoice 5105600101, as bytes on the wire.
func recordedAnswer(b *testing.B) []byte {
	rec := recordSim(b, "5105600101")
	var answer bytes.Buffer
	fmt.Fprintf(&answer, "HTTP/1.1 %d %s\r\n", rec.status, http.StatusText(rec.status))
	for k, vs := range rec.header {
		for _, v := range vs {
			fmt.Fprintf(&answer, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&answer, "Content-Length: %d\r\n\r\n", len(rec.body))
	answer.Write(rec.body)
	return answer.Bytes()
}

// benchOverSockets serves h on a loopback listener and sends it request
// one after the other on one keep-alive connection, each answer a 200
// with a Content-Length read whole.
func benchOverSockets(b *testing.B, h http.Handler, request string) {
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	r := bufio.NewReaderSize(conn, 64<<10)
	req := []byte(request)
	body := make([]byte, 64<<10)
	read := func() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		status, _ := r.ReadSlice('\n')
		if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
			b.Fatalf("status line %q, want 200", status)
		}
		size := -1
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(bytes.TrimSpace(line)) == 0 {
				break
			}
			if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
				size, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if size < 0 || size > len(body) {
			b.Fatalf("Content-Length %d", size)
		}
		if _, err := io.ReadFull(r, body[:size]); err != nil {
			b.Fatal(err)
		}
	}
	for range 100 { // connections and pools warm
		read()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		read()
	}
}

// replayERP serves answer to every request on a loopback listener, for
// the life of the benchmark, and returns its URL.
func replayERP(b *testing.B, answer []byte) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 16<<10)
				have := 0
				for {
					n, err := conn.Read(buf[have:])
					if err != nil {
						return
					}
					have += n
					// A request without a body ends at its blank line.
					for {
						end := bytes.Index(buf[:have], []byte("\r\n\r\n"))
						if end < 0 {
							break
						}
						have = copy(buf, buf[end+4:have])
						if _, err := conn.Write(answer); err != nil {
							return
						}
					}
					if have == len(buf) {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}
