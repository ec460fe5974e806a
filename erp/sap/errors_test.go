package sap

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

const (
	v2Array = `{"error":{"code":"M8/108","message":{"lang":"en","value":"Check if invoice already entered under accounting doc. no. 5105600100 2026"},
"innererror":{"transactionid":"7F3A9C2B11D04E0F","errordetails":[
{"code":"M8/108","message":"Check if invoice already entered","severity":"error","target":""},
{"code":"M8/082","message":"Price variance","severity":"warning","target":""},
{"code":"/IWBEP/CX_MGW_BUSI_EXCEPTION","message":"Business exception","severity":"error","target":""}]}}}`
	v2Object = `{"error":{"code":"F5/201","message":{"lang":"en","value":"Posting period 012 2025 is not open"},
"innererror":{"transactionid":"7F3A9C2B11D04E0F","errordetails":{"errordetail":[
{"code":"F5/201","message":"Posting period 012 2025 is not open","severity":"error"},
{"code":"F5/999","message":"info","severity":"info"},
{"code":"F5/202","message":"Period check","severity":"error"}]}}}}`
	v2Single = `{"error":{"code":"06/020","message":{"lang":"en","value":"Item closed"},
"innererror":{"errordetails":{"errordetail":{"code":"06/021","message":"Item 10 is closed","severity":"error"}}}}}`
	v4 = `{"error":{"code":"06/025","message":"Vendor 100099 not created (please check your input)",
"details":[{"code":"06/027","message":"Vendor 100099 has not been created for purch. organization 1010","severity":"error","target":"Supplier"},
{"code":"06/025","message":"again","severity":"error"},{"code":"06/099","message":"hint","severity":"warning"}]}}`
	v4NoSeverity = `{"error":{"code":"M8/081","message":"No goods receipt","details":[{"code":"M8/081","message":"x"},{"code":"M8/083","message":"y"}]}}`
	fault        = `{"fault":{"faultstring":"Rate limit quota violation. Quota limit exceeded. Identifier : gw.example.internal","detail":{"errorcode":"policies.ratelimit.QuotaViolation"}}}`
	html         = `<html><body>Connection timed out</body></html>`
)

func TestUpstreamErrors(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		wantIDs    []string
		wantText   string // a part of Text
		transient  bool
		retryAfter time.Duration
	}{
		{"v2 errordetails array", 400, nil, v2Array, []string{"M8/108", "/IWBEP/CX_MGW_BUSI_EXCEPTION"},
			"already entered under accounting doc", false, 0},
		{"v2 errordetail object", 400, nil, v2Object, []string{"F5/201", "F5/202"}, "Posting period 012 2025", false, 0},
		{"v2 single errordetail", 400, nil, v2Single, []string{"06/020", "06/021"}, "Item closed", false, 0},
		{"v4 string message and details", 400, nil, v4, []string{"06/025", "06/027"}, "Vendor 100099 not created", false, 0},
		{"v4 details without severity", 400, nil, v4NoSeverity, []string{"M8/081", "M8/083"}, "No goods receipt", false, 0},
		{"500 with envelope", 500, nil, v2Array, []string{"M8/108", "/IWBEP/CX_MGW_BUSI_EXCEPTION"}, "already entered", false, 0},
		{"429 retry-after seconds", 429, map[string]string{"Retry-After": "7"}, v4, []string{"06/025", "06/027"}, "", true, 7 * time.Second},
		{"502", 502, nil, `Bad Gateway`, nil, "Bad Gateway", true, 0},
		{"503 with envelope", 503, map[string]string{"Retry-After": "2"}, v2Object, []string{"F5/201", "F5/202"}, "", true, 2 * time.Second},
		{"504", 504, nil, ``, nil, "", true, 0},
		{"html 500", 500, nil, html, nil, "Connection timed out", true, 0},
		{"fault 429", 429, nil, fault, nil, "Rate limit quota violation", true, 0},
		{"fault 500", 500, nil, fault, nil, "policies.ratelimit.QuotaViolation", true, 0},
		{"401 plain", 401, nil, `Unauthorized`, nil, "Unauthorized", false, 0},
		{"400 bad retry-after", 400, map[string]string{"Retry-After": "soon"}, v4, []string{"06/025", "06/027"}, "", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				writeJSON(w, tt.status, tt.body)
			})
			_, err := f.client(Options{}).Supplier(context.Background(), "100042")
			var up *erp.UpstreamError
			if !errors.As(err, &up) {
				t.Fatalf("got %v, want an UpstreamError", err)
			}
			if up.Status != tt.status {
				t.Errorf("status: got %d, want %d", up.Status, tt.status)
			}
			if !slices.Equal(up.MessageIDs, tt.wantIDs) {
				t.Errorf("message ids: got %q, want %q", up.MessageIDs, tt.wantIDs)
			}
			if !strings.Contains(up.Text, tt.wantText) {
				t.Errorf("text: got %q, want it to contain %q", up.Text, tt.wantText)
			}
			if up.Transient != tt.transient {
				t.Errorf("transient: got %v, want %v", up.Transient, tt.transient)
			}
			if up.RetryAfter != tt.retryAfter {
				t.Errorf("retry after: got %v, want %v", up.RetryAfter, tt.retryAfter)
			}
			var call *retry.Error
			if !errors.As(err, &call) || call.Attempts != 1 {
				t.Errorf("runner: got %#v, want a *retry.Error of 1 attempt", call)
			}
			if up.Service != erp.ServiceBusinessPartner || up.Operation != "read supplier" || up.Write || up.Timeout {
				t.Errorf("call: got %s %q write=%v timeout=%v, want business_partner \"read supplier\" read, no timeout",
					up.Service, up.Operation, up.Write, up.Timeout)
			}
			if up.Keys["supplier_id"] != "100042" {
				t.Errorf("keys: got %v, want supplier_id 100042", up.Keys)
			}
			noUpstreamText(t, up)
		})
	}
}

// noUpstreamText fails when a field other than Text and Err carries words
// or identifiers from the upstream body.
func noUpstreamText(t *testing.T, up *erp.UpstreamError) {
	t.Helper()
	leaks := []string{"7F3A9C2B11D04E0F", "gw.example.internal", "already entered", "Posting period", "not created",
		"Connection timed out", "Rate limit", "Item closed", "127.0.0.1"}
	fields := []string{string(up.Service), up.Operation}
	fields = append(fields, up.MessageIDs...)
	for k, v := range up.Keys {
		fields = append(fields, k, v)
	}
	for _, leak := range leaks {
		for _, f := range fields {
			if strings.Contains(f, leak) {
				t.Errorf("field %q carries upstream text %q", f, leak)
			}
		}
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	at := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", at)
		writeJSON(w, 429, `{}`)
	})
	_, err := f.client(Options{}).Supplier(context.Background(), "100042")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Transient {
		t.Fatalf("got %v, want a transient UpstreamError", err)
	}
	if up.RetryAfter < 60*time.Second || up.RetryAfter > 91*time.Second {
		t.Errorf("retry after: got %v, want about 90s", up.RetryAfter)
	}
}

func TestMalformedResponses(t *testing.T) {
	tests := []struct {
		name string
		call func(*Client) error
		body string
	}{
		{"not json", func(c *Client) error { _, err := c.Supplier(context.Background(), "1"); return err }, `{"d":`},
		{"html", func(c *Client) error { _, err := c.Supplier(context.Background(), "1"); return err }, `<html>login</html>`},
		{"no d", func(c *Client) error { _, err := c.Supplier(context.Background(), "1"); return err }, `{}`},
		{"no key", func(c *Client) error { _, err := c.Supplier(context.Background(), "1"); return err }, `{"d":{"SupplierName":"x"}}`},
		{"list without results", func(c *Client) error { _, err := c.SearchSuppliers(context.Background(), "a", 1); return err }, `{"d":{}}`},
		{"bad decimal", func(c *Client) error { _, err := c.PurchaseOrder(context.Background(), "1"); return err },
			`{"d":{"PurchaseOrder":"1","to_PurchaseOrderItem":{"results":[{"OrderQuantity":"ten"}]}}}`},
		{"bad date", func(c *Client) error { _, err := c.Invoice(context.Background(), "1"); return err },
			`{"d":{"results":[{"SupplierInvoice":"1","SupplierInvoiceStatus":"A","DocumentDate":"/Date(abc)/"}]}}`},
		{"post without Success", func(c *Client) error {
			_, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "1", FiscalYear: "2026"}, "")
			return err
		}, `{"d":{"Post":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, respond(200, tt.body))
			err := tt.call(f.client(Options{}))
			var up *erp.UpstreamError
			if !errors.As(err, &up) {
				t.Fatalf("got %v, want an UpstreamError", err)
			}
			// An HTML page where the answer belongs is a login page or a
			// portal: a fault of configuration, not a broken answer.
			wantText, wantConfig := "malformed response", false
			if tt.name == "html" {
				wantText, wantConfig = "an HTML page answered where the service's OData answer belongs", true
			}
			if up.Status != 200 || up.Text != wantText || up.Config != wantConfig || up.Transient || up.Timeout || up.Err == nil {
				t.Errorf("got status %d text %q config %v transient %v timeout %v err %v, want 200 %q, config %v, not transient, Err set",
					up.Status, up.Text, up.Config, up.Transient, up.Timeout, up.Err, wantText, wantConfig)
			}
		})
	}
}

func TestConnectionReset(t *testing.T) {
	hijack := func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}
	for _, write := range []bool{false, true} {
		f := newFake(t, hijack)
		c := f.client(Options{})
		var err error
		if write {
			_, err = c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
		} else {
			_, err = c.Supplier(context.Background(), "100042")
		}
		var up *erp.UpstreamError
		if !errors.As(err, &up) {
			t.Fatalf("write=%v: got %v, want an UpstreamError", write, err)
		}
		if up.Status != 0 || !up.Transient || up.Timeout || up.Err == nil || up.Write != write {
			t.Errorf("write=%v: got status %d transient %v timeout %v err %v write %v, want 0, transient, Err set",
				write, up.Status, up.Transient, up.Timeout, up.Err, up.Write)
		}
	}
}

func TestConnectionRefused(t *testing.T) {
	f := newFake(t, respond(200, `{}`))
	c := f.client(Options{})
	f.srv.Close()
	_, err := c.Supplier(context.Background(), "100042")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || up.Status != 0 || !up.Transient || up.Err == nil || up.Timeout {
		t.Fatalf("got %#v, want a transient network UpstreamError", err)
	}
}

// hang blocks until the client goes away.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func TestAttemptTimeout(t *testing.T) {
	tests := []struct {
		name      string
		call      func(context.Context, *Client) error
		write     bool
		transient bool
	}{
		{"read", func(ctx context.Context, c *Client) error { _, err := c.Supplier(ctx, "100042"); return err }, false, true},
		{"write", func(ctx context.Context, c *Client) error {
			_, err := c.PostInvoice(ctx, erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "k")
			return err
		}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, hang)
			c := f.client(Options{Runner: retry.New(oneAttempt(50*time.Millisecond), nil)})
			start := time.Now()
			err := tt.call(context.Background(), c)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v, want about the attempt timeout", d)
			}
			var up *erp.UpstreamError
			if !errors.As(err, &up) {
				t.Fatalf("got %v, want an UpstreamError", err)
			}
			if !up.Timeout || up.Transient != tt.transient || up.Write != tt.write || up.Status != 0 {
				t.Errorf("got timeout %v transient %v write %v status %d, want timeout, transient %v, write %v, status 0",
					up.Timeout, up.Transient, up.Write, up.Status, tt.transient, tt.write)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want it to wrap context.DeadlineExceeded", err)
			}
			if got := Result(err); got != "timeout" {
				t.Errorf("Result: got %q, want timeout", got)
			}
		})
	}
}

func TestCallerCanceled(t *testing.T) {
	f := newFake(t, hang)
	c := f.client(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Supplier(ctx, "100042")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want an UpstreamError wrapping context.Canceled", err)
	}
	if up.Timeout || up.Transient {
		t.Errorf("got timeout %v transient %v, want neither", up.Timeout, up.Transient)
	}

	// Canceled before the write: nothing is sent.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = c.PostInvoice(ctx, erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "")
	if !errors.Is(err, context.Canceled) || !errors.As(err, &up) {
		t.Fatalf("got %v, want an UpstreamError wrapping context.Canceled", err)
	}
}

func TestBodyCap(t *testing.T) {
	big := `{"d":{"Supplier":"1","SupplierName":"` + strings.Repeat("x", maxBody) + `"}}`
	f := newFake(t, respond(200, big))
	_, err := f.client(Options{}).Supplier(context.Background(), "1")
	var up *erp.UpstreamError
	if !errors.As(err, &up) || up.Text != "malformed response" || up.Status != 200 {
		t.Fatalf("got %v, want a malformed-response UpstreamError", err)
	}
}

// xmlEnvelope is SAP Gateway's error in XML, as it answers a request that
// accepts XML, such as the $metadata read.
const xmlEnvelope = `<?xml version="1.0" encoding="utf-8"?>
<error xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
<code>/IWFND/CM_BEC/026</code><message xml:lang="en">SAP backend system is not available</message>
<innererror><transactionid>7F3A9C2B11D04E0F</transactionid><errordetails>
<errordetail><code>/IWFND/CM_BEC/026</code><message>x</message><severity>error</severity></errordetail>
<errordetail><code>/IWBEP/CM_MGW_RT/099</code><message>y</message><severity>warning</severity></errordetail>
<errordetail><code>/IWFND/CM_BEC/027</code><message>z</message><severity>error</severity></errordetail>
</errordetails></innererror></error>`

// TestAnswerBodies: what kind of body a failed answer has. Only SAP
// Gateway's error, with a code and a message, in a form the request
// accepted, is SAP Gateway speaking.
func TestAnswerBodies(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		acceptsXML bool
		want       erp.AnswerBody
		ids        []string
	}{
		{"v2", v2Array, false, erp.BodySAPError, []string{"M8/108", "/IWBEP/CX_MGW_BUSI_EXCEPTION"}},
		{"v2 detail object", v2Object, false, erp.BodySAPError, []string{"F5/201", "F5/202"}},
		{"v4", v4, false, erp.BodySAPError, []string{"06/025", "06/027"}},
		{"empty message", `{"error":{"code":"/IWBEP/CM_MGW_RT/020","message":{"lang":"en","value":""}}}`, false, erp.BodySAPError,
			[]string{"/IWBEP/CM_MGW_RT/020"}},
		{"fault", fault, false, erp.BodyOtherJSON, nil},
		{"error as a string", `{"error":"Not Found","status":404}`, false, erp.BodyOtherJSON, nil},
		{"error without code", `{"error":{"status":404,"message":"Not Found"}}`, false, erp.BodyOtherJSON, nil},
		{"numeric code", `{"error":{"code":404,"message":"Not Found"}}`, false, erp.BodyOtherJSON, nil},
		{"code without message", `{"error":{"code":"06/019"}}`, false, erp.BodyOtherJSON, nil},
		{"null message", `{"error":{"code":"06/019","message":null}}`, false, erp.BodyOtherJSON, nil},
		{"array", `[{"error":{"code":"M8/108","message":"x"}}]`, false, erp.BodyOtherJSON, nil},
		{"html", html, false, erp.BodyText, nil},
		{"xml not asked for", xmlEnvelope, false, erp.BodyText, nil},
		{"xml asked for", xmlEnvelope, true, erp.BodySAPError, []string{"/IWFND/CM_BEC/026", "/IWFND/CM_BEC/027"}},
		{"other xml", `<?xml version="1.0"?><error><code>404</code><message>x</message></error>`, true, erp.BodyText, nil},
		{"text", "Bad Gateway", false, erp.BodyText, nil},
		{"json number", "404", false, erp.BodyOtherJSON, nil},
		{"empty", "", false, erp.BodyEmpty, nil},
		{"white space", " \r\n\t", false, erp.BodyEmpty, nil},
	}
	for _, tt := range tests {
		p := parseAnswer([]byte(tt.body), tt.acceptsXML)
		if p.body != tt.want || !slices.Equal(p.ids, tt.ids) {
			t.Errorf("%s: got %s %q, want %s %q", tt.name, p.body, p.ids, tt.want, tt.ids)
		}
		if (p.body == erp.BodySAPError) != p.envelope {
			t.Errorf("%s: envelope %v for a body %s", tt.name, p.envelope, p.body)
		}
	}
}

// TestAnswerKindsFromTheWire: the client records what kind of body a
// failed answer had and what the call asked for, for every kind of call.
func TestAnswerKindsFromTheWire(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		kind erp.CallKind
		call func(*Client) error
	}{
		{"purchase order", erp.CallEntity, func(c *Client) error { _, err := c.PurchaseOrder(ctx, "4500018822"); return err }},
		{"supplier", erp.CallList, func(c *Client) error { _, err := c.Supplier(ctx, "100042"); return err }},
		{"search", erp.CallList, func(c *Client) error { _, err := c.SearchSuppliers(ctx, "acme", 5); return err }},
		{"goods receipts", erp.CallList, func(c *Client) error { _, err := c.GoodsReceipts(ctx, "4500018822", "10"); return err }},
		{"invoice", erp.CallList, func(c *Client) error { _, err := c.Invoice(ctx, "5105600101"); return err }},
		{"post", erp.CallFunction, func(c *Client) error {
			_, err := c.PostInvoice(ctx, erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "")
			return err
		}},
	}
	bodies := []struct {
		contentType, body string
		want              erp.AnswerBody
	}{
		{"application/json", v2Single, erp.BodySAPError},
		{"application/json", `{"error":"Method Not Allowed"}`, erp.BodyOtherJSON},
		{"text/html", html, erp.BodyText},
		{"application/xml", xmlEnvelope, erp.BodyText},
		{"", "", erp.BodyEmpty},
	}
	for _, b := range bodies {
		for _, call := range calls {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if b.contentType != "" {
					w.Header().Set("Content-Type", b.contentType)
				}
				w.WriteHeader(http.StatusMethodNotAllowed)
				io.WriteString(w, b.body)
			})
			err := call.call(f.client(Options{}))
			up, ok := errors.AsType[*erp.UpstreamError](err)
			if !ok || up.Status != http.StatusMethodNotAllowed || up.Body != b.want || up.Call != call.kind || up.Transient {
				t.Errorf("%s answered %s: got %+v, want status 405, body %s, call %s, not transient", call.name, b.want, up, b.want, call.kind)
			}
		}
	}
}

// TestEntityNotFoundOnlyFromSAP: a read of one purchase order is not found
// only when SAP Gateway says so; the same 404 from a Web Dispatcher, from
// another server, or about the service, is no answer about the order.
func TestEntityNotFoundOnlyFromSAP(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		notFound, config        bool
	}{
		{"SAP Gateway", "application/json", `{"error":{"code":"/IWBEP/CM_MGW_RT/020","message":{"lang":"en","value":"Resource not found for segment 'A_PurchaseOrderType'"}}}`, true, false},
		{"SAP Gateway v4", "application/json", `{"error":{"code":"/IWBEP/CM_MGW_RT/020","message":"Resource not found"}}`, true, false},
		{"service missing", "application/json", `{"error":{"code":"/IWFND/MED/170","message":{"lang":"en","value":"No service found"}}}`, false, true},
		{"Web Dispatcher", "text/html", `<html><body><h1>404 Not Found</h1>Partner not reached</body></html>`, false, false},
		{"another server", "application/json", `{"status":404,"error":"Not Found","path":"/sap/opu/odata/sap/API_PURCHASEORDER_PROCESS_SRV"}`, false, false},
		{"nothing", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, tt.body)
			})
			_, err := f.client(Options{}).PurchaseOrder(context.Background(), "4500019822")
			var nf *erp.NotFoundError
			if got := errors.As(err, &nf); got != tt.notFound {
				t.Fatalf("got %v, want not found %v", err, tt.notFound)
			}
			if tt.notFound {
				if nf.Entity != erp.EntityPurchaseOrder || nf.ID != "4500019822" {
					t.Errorf("got %+v, want purchase order 4500019822", nf)
				}
				return
			}
			up, ok := errors.AsType[*erp.UpstreamError](err)
			if !ok || up.Status != http.StatusNotFound || up.Call != erp.CallEntity || up.Config != tt.config || up.Transient {
				t.Errorf("got %+v, want a 404 of an entity read, config %v", up, tt.config)
			}
		})
	}
}

// TestMetadataErrorInXML: the $metadata read asks for XML, and SAP Gateway
// writes its errors to it in XML: its message ids are read from it.
func TestMetadataErrorInXML(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, xmlEnvelope)
	})
	infos, _ := f.client(Options{}).ReadMetadata(context.Background())
	up, ok := errors.AsType[*erp.UpstreamError](infos[erp.ServicePurchaseOrder].Err)
	if !ok || up.Body != erp.BodySAPError || !slices.Equal(up.MessageIDs, []string{"/IWFND/CM_BEC/026", "/IWFND/CM_BEC/027"}) || up.Transient {
		t.Fatalf("got %+v, want SAP Gateway's error with its ids, not transient", up)
	}
}
