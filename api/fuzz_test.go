package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// The fuzzed gateway's clients. The keys are long and distinctive so that
// an echo of one in a response cannot be a coincidence.
const (
	fuzzWriterKey = "fuzz-writer-key-7Qm2xV9t"
	fuzzReaderKey = "fuzz-reader-key-Kp4wZs8n"
	// fuzzERPHost is the simulated ERP's host as the gateway sees it: a
	// response that names it leaks the ERP's address.
	fuzzERPHost = "sap-prd.internal.example"
)

// handlerTransport serves HTTP requests from a handler in-process, so the
// gateway talks to the simulated ERP without a socket.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	// The server side of the exchange sees what a server would: a body that
	// is never nil, the request line and a peer address.
	sreq := req.Clone(req.Context())
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "192.0.2.20:50000"
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, sreq)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// fuzzGateway is the gateway over the simulated ERP, rebuilt every
// fuzzRebuildEvery requests so that the sim's ledger, the idempotency store
// and the run store do not grow without bound over a long fuzzing run.
var fuzzGateway struct {
	mu      sync.Mutex
	h       http.Handler
	records records.Store
	n       int
}

const fuzzRebuildEvery = 2000

func fuzzHandler(t testing.TB) http.Handler {
	fuzzGateway.mu.Lock()
	defer fuzzGateway.mu.Unlock()
	if fuzzGateway.h == nil || fuzzGateway.n >= fuzzRebuildEvery {
		if fuzzGateway.records != nil {
			fuzzGateway.records.Close()
		}
		store, err := records.OpenTemp(context.Background(), records.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fuzzGateway.h, fuzzGateway.records, fuzzGateway.n = newFuzzGateway(t, store), store, 0
	}
	fuzzGateway.n++
	return fuzzGateway.h
}

func newFuzzGateway(t testing.TB, store records.Store) http.Handler {
	t.Helper()
	metrics := api.NewMetrics()
	runner := retry.New(retry.Policy{MaxAttempts: 1, AttemptTimeout: 2 * time.Second, CallTimeout: 4 * time.Second,
		Sleep: func(context.Context, time.Duration) error { return nil }}, metrics)
	client, err := sap.New("http://"+fuzzERPHost+":44300", sap.Options{Runner: runner,
		HTTPClient: &http.Client{Transport: handlerTransport{sim.New(sim.Options{})}}})
	if err != nil {
		t.Fatal(err)
	}
	cred := func(name, key string, scopes ...string) api.Credential {
		sum := sha256.Sum256([]byte(key))
		c, err := api.ParseCredential(name + ":" + hex.EncodeToString(sum[:]) + ":" + strings.Join(scopes, "+"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	srv, err := api.NewServer(api.Options{ERP: client, Records: store, Metrics: metrics, BreakerStates: runner.BreakerStates,
		Credentials: []api.Credential{cred("writer", fuzzWriterKey, "read", "write"), cred("reader", fuzzReaderKey, "read")}})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// fuzzRoutes are the path templates the fuzzer picks from; {} is replaced
// by the fuzzed id. The last one sends the fuzzed id as the whole path.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/invoices/{}/hold"},
	{"POST", "/invoices/{}/approvals"},
	{"POST", "/invoices/{}/post"},
	{"POST", "/handovers"},
	{"POST", "/invoices/{}/three-way-match"},
	{"GET", "/invoices/{}"},
	{"GET", "/purchase-orders/{}"},
	{"GET", "/purchase-orders/4500018822/items/{}/goods-receipts"},
	{"GET", "/suppliers/{}"},
	{"GET", "/suppliers"},
	{"GET", "/approvals/{}"},
	{"GET", "/runs/{}"},
	{"GET", "{}"},
}

// fuzzInput is one fuzzed request, kept whole so that a failure can say
// what was sent.
type fuzzInput struct {
	Method, Target, ContentType, IdempotencyKey, RunID, Authorization string
	Body                                                              []byte
}

func FuzzDecodeRequest(f *testing.F) {
	w := "Bearer " + fuzzWriterKey
	add := func(method string, route uint8, id, query, ct, key, run, auth, body string) {
		f.Add(method, route, id, query, ct, key, run, auth, []byte(body))
	}
	add("", 0, "5105600105", "", "application/json", "hold-1", "run-1", w, `{"reason":"Goods receipt for PO 4500018822 item 20 missing."}`)
	add("", 0, "5105600101", "", "application/json", "", "", w, `{"reason":"waiting","recheck_at":"2001-01-01T00:00:00Z"}`)
	add("", 1, "5105600102", "", "application/json", "appr-1", "run-2", w, `{"proposed_action":"correct_amount","justification":"Price per contract.","corrected_amount":"12500.00"}`)
	add("", 1, "5105600108", "", "application/json", "", "", w, `{"proposed_action":"post_as_invoiced","justification":"Matched against PO and goods receipt."}`)
	add("", 2, "5105600101", "", "application/json", "post-1", "", w, `{"approval_id":"APR-0001"}`)
	add("", 2, "5105600101", "", "", "", "", "Bearer "+fuzzReaderKey, `{}`)
	add("", 3, "", "", "application/json", "ho-1", "run-3", w, `{"invoice_id":"5105600106","code":"PO_CLOSED","summary":"PO 4500018830 is finally invoiced.","evidence":["PO item 10 delivered"]}`)
	add("", 3, "", "", "application/merge-patch+json", "", "", w, `{"invoice_id":"5105600101","queue":"ceo","summary":"N/A"}`)
	add("", 4, "5105600105", "run_id=run-4", "", "", "", w, ``)
	add("", 0, "5105600101' or '1'='1", "", "application/json", "", "", w, `{"reason":"x"}`)
	add("", 0, "..%2f..%2fetc%2fpasswd", "", "text/plain", "", "", w, `{"reason":"waiting"}`)
	add("", 0, "5105600101", "", "application/json", "has space", "", w, `{"reason":"waiting","idempotency_key":"a"}`)
	add("", 0, "5105600101", "", "application/json;charset=\"", "", "", w, `{"reason":"waiting"} {}`)
	add("", 0, "5105600101", "", "", "", "", w, `{"reason":42,"colour":"red","x\u0000y":1}`)
	add("", 1, "5105600101", "", "", "", "", w, `{"proposed_action":"delete_invoice","justification":"\xff\xfe"}`)
	add("", 0, "5105600101", "", "", "", "", "", `{"reason":"waiting"}`)
	add("", 0, "5105600101", "", "", "", "", "Bearer wrong-key-<script>", `{"reason":"waiting"}`)
	add("PROPFIND", 0, "5105600101", "", "", "", "", w, ``)
	add("TRACE", 12, "/admin/config", "", "", "", "", w, ``)
	add("", 9, "", "name=acme&limit=500&sort=%27", "", "", "", w, ``)
	add("", 11, "run-1", "", "", "", "", w, ``)
	add("", 7, "abc", "", "", "", "", w, ``)
	add("", 0, "5105600101", "", "", "", "", w, `[{"reason":"a"}]`)
	add("", 0, "5105600101", "", "", "", "", w, `{"reason":"waiting for goods","reason":{"a":[1,2,{"b":null}]}}`)
	add("", 3, "", "", "", "", "", w, `{"invoice_id":"5105600101","summary":"`+strings.Repeat("x", 2100)+`"}`)

	f.Fuzz(func(t *testing.T, method string, route uint8, id, query, contentType, idemKey, runID, auth string, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		if method == "" {
			method = rt.method
		}
		target := strings.ReplaceAll(rt.path, "{}", id)
		if query != "" {
			target += "?" + query
		}
		req, ok := wireRequest(method, target, body)
		if !ok {
			return // the HTTP server itself would refuse it before any handler
		}
		for name, v := range map[string]string{"Content-Type": contentType, "Idempotency-Key": idemKey,
			"X-Run-Id": runID, "Authorization": auth} {
			v, ok := wireHeaderValue(v)
			if !ok {
				return
			}
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		in := fuzzInput{Method: method, Target: target, ContentType: contentType, IdempotencyKey: idemKey,
			RunID: runID, Authorization: auth, Body: body}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h, rec, done := fuzzHandler(t), httptest.NewRecorder(), make(chan struct{})
		// A handler that never returns holds its connection and a CPU for
		// good: that is a failure of its own, with the input that caused it.
		go func() {
			defer close(done)
			h.ServeHTTP(rec, req.WithContext(ctx))
		}()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatalf("the gateway did not return within 15 s\nrequest: %+q", in)
		}
		checkAnswer(t, in, rec.Code, rec.Header(), rec.Body.Bytes())
	})
}

// wireRequest builds the request the gateway's HTTP server would hand to
// its handler for this request line, or reports that the server would
// refuse the line itself.
func wireRequest(method, target string, body []byte) (*http.Request, bool) {
	if !isToken(method) || !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \t") {
		return nil, false
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, false
	}
	req := &http.Request{Method: method, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Host: "erpgate.example", RemoteAddr: "192.0.2.10:40000",
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
	return req, true
}

// isToken reports whether m is an RFC 9110 token, as a method must be.
func isToken(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// wireHeaderValue returns the value as the server would read it, or false
// for a value the server refuses (control characters).
func wireHeaderValue(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return "", false
		}
	}
	return strings.Trim(v, " \t"), true
}

// saneStatuses are every status the gateway may answer with. A 500 is not
// among them: no request, however malformed, may reach an internal fault.
var saneStatuses = map[int]bool{200: true, 400: true, 401: true, 404: true, 405: true, 409: true,
	413: true, 415: true, 422: true, 429: true, 502: true, 503: true}

// internalWords are what a response must never contain: Go's own error
// strings, traces, and the ERP's address and paths.
var internalWords = []string{"goroutine", "panic", "runtime error", ".go:", "127.0.0.1", "[::1]", "localhost",
	fuzzERPHost, "/sap/opu/odata", "json: ", "strconv.", "invalid character", "cannot unmarshal",
	"unexpected end of JSON", "unexpected EOF", "http: ", "net/http", "mime: ", "dial tcp", "context deadline",
	"context canceled", "i/o timeout", "innererror", "/IWBEP/"}

// checkAnswer asserts what every answer of the gateway must be, whatever
// was sent: a sane status, a five-field problem+json body for an error,
// nothing internal, and none of the request's text echoed back.
func checkAnswer(t *testing.T, in fuzzInput, status int, header http.Header, body []byte) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nrequest: %+q\nresponse %d %v:\n%s", fmt.Sprintf(format, args...), in, status, header, body)
	}
	if !saneStatuses[status] {
		fail("status %d is not one the gateway may answer", status)
	}
	if id := header.Get("X-Request-Id"); !isSafeToken(id) {
		fail("X-Request-Id %q", id)
	}
	for _, w := range internalWords {
		if bytes.Contains(body, []byte(w)) {
			fail("response carries %q", w)
		}
	}
	if status < 300 {
		if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") &&
			!strings.HasPrefix(ct, "text/plain") {
			fail("success Content-Type %q", ct)
		}
	} else {
		problem(t, fail, status, header, body)
	}
	for _, key := range []string{fuzzWriterKey, fuzzReaderKey} {
		if echoed(key, header, body) && !strings.Contains(in.Target+in.RunID+in.IdempotencyKey+in.ContentType+string(in.Body), key) {
			fail("response echoes the API key")
		}
	}
	if status >= 300 {
		vocab := vocabulary(body)
		for _, frag := range fragments(in) {
			// A fragment that the five fields' own words hold (a body of
			// `_action"` is in "next_action") is no echo.
			if echoed(frag, header, body) && !strings.Contains(vocab, frag) {
				fail("error echoes the request's text %q", frag)
			}
		}
	}
}

// vocabulary is the error body with its message and the values of its
// details left empty, and the messages the gateway sends whatever the
// request said (a refused credential's, which shows how to send one,
// "Authorization: Bearer <key>"): the words every answer with its code
// holds.
func vocabulary(body []byte) string {
	var b errmap.Body
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	b.Message = ""
	for k := range b.Details {
		b.Details[k] = ""
	}
	out, _ := json.Marshal(b)
	words := string(out)
	for _, fixed := range []refusal.Unauthenticated{{}, {OAuth: true}} {
		words += "\n" + errmap.Map(fixed).Message
	}
	return words
}

// problem asserts the five-field body: exactly code, message, retryable,
// next_action and details, in that order, as application/problem+json,
// with a code of the catalogue at its status.
func problem(t *testing.T, fail func(string, ...any), status int, header http.Header, body []byte) {
	t.Helper()
	if ct := header.Get("Content-Type"); ct != errmap.ContentType {
		fail("error Content-Type %q, want %s", ct, errmap.ContentType)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		fail("error body is not a JSON object")
	}
	var b errmap.Body
	for _, want := range []string{"code", "message", "retryable", "next_action", "details"} {
		tok, err := dec.Token()
		if err != nil || tok != want {
			fail("error body field %v (%v), want %q", tok, err, want)
		}
		var err2 error
		switch want {
		case "code":
			err2 = dec.Decode(&b.Code)
		case "message":
			err2 = dec.Decode(&b.Message)
		case "retryable":
			err2 = dec.Decode(&b.Retryable)
		case "next_action":
			err2 = dec.Decode(&b.NextAction)
		case "details":
			err2 = dec.Decode(&b.Details)
			if b.Details == nil {
				err2 = errors.New("details is not an object")
			}
		}
		if err2 != nil {
			fail("error body field %s: %v", want, err2)
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		fail("error body has more than the five fields")
	}
	if _, err := dec.Token(); err != io.EOF {
		fail("data after the error body")
	}
	entry, ok := errmap.Lookup(b.Code)
	if !ok || !entry.Error {
		fail("code %q is not an error of the catalogue", b.Code)
	}
	protocol := b.Code == errmap.InvalidRequest && (status == 404 || status == 405 || status == 413 || status == 415)
	if status != entry.Status && !protocol {
		fail("%s answered with %d, the catalogue says %d", b.Code, status, entry.Status)
	}
	if b.Retryable != entry.Retryable {
		fail("%s retryable %v, the catalogue says %v", b.Code, b.Retryable, entry.Retryable)
	}
	known := false
	for _, na := range errmap.NextActions {
		known = known || b.NextAction == na
	}
	if !known {
		fail("next_action %q", b.NextAction)
	}
	if n := utf8.RuneCountInString(b.Message); n == 0 || n > 300 || !utf8.ValidString(b.Message) {
		fail("message of %d characters", n)
	}
}

// echoed reports whether s appears in the body, raw or JSON-escaped, or in
// a header value.
func echoed(s string, header http.Header, body []byte) bool {
	if bytes.Contains(body, []byte(s)) {
		return true
	}
	var esc bytes.Buffer
	enc := json.NewEncoder(&esc)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	if e := bytes.Trim(bytes.TrimSpace(esc.Bytes()), `"`); len(e) > 0 && bytes.Contains(body, e) {
		return true
	}
	for _, vs := range header {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}

// fragments are the pieces of a request an error must not repeat: every
// fuzzed value of at least 8 bytes that is not a plain token. The gateway
// may name a field, an id of the right form or a run id, all plain tokens;
// anything else it repeats could be text an attacker planted for the model.
func fragments(in fuzzInput) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 8 && !isSafeToken(s) {
			out = append(out, s)
		}
	}
	add(in.Target)
	if u, err := url.ParseRequestURI(in.Target); err == nil {
		for _, seg := range strings.Split(u.Path, "/") {
			add(seg)
		}
		for _, seg := range strings.Split(u.EscapedPath(), "/") {
			add(seg)
		}
		if q, err := url.ParseQuery(u.RawQuery); err == nil {
			for k, vs := range q {
				add(k)
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	add(in.ContentType)
	add(in.IdempotencyKey)
	add(in.RunID)
	add(in.Authorization)
	add(strings.TrimSpace(strings.TrimPrefix(in.Authorization, "Bearer ")))
	add(string(in.Body))
	var v any
	if json.Unmarshal(in.Body, &v) == nil {
		walkStrings(v, add)
	}
	return out
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range x {
			f(k)
			walkStrings(e, f)
		}
	}
}

// isSafeToken reports whether s holds only what the gateway's ids, field
// names and run ids are made of.
func isSafeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_.:-[]", c) >= 0:
		default:
			return false
		}
	}
	return true
}
