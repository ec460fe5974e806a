package sim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
)

const (
	invSrv = "/sap/opu/odata/sap/API_SUPPLIERINVOICE_PROCESS_SRV"
	poSrv  = "/sap/opu/odata/sap/API_PURCHASEORDER_PROCESS_SRV"
	mdSrv  = "/sap/opu/odata/sap/API_MATERIAL_DOCUMENT_SRV"
	bpSrv  = "/sap/opu/odata/sap/API_BUSINESS_PARTNER"
)

// clock is the fixed time the tests run the simulator at.
var clock = time.Date(2026, time.November, 29, 10, 0, 0, 0, time.UTC)

// env is a simulator behind a real HTTP server with a client that keeps
// the session cookie.
type env struct {
	t      *testing.T
	sim    *sim.Server
	url    string
	client *http.Client
	tokens map[string]string // service base -> CSRF token
}

func newEnv(t *testing.T, opts sim.Options) *env {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return clock }
	}
	s := sim.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Keep-alives off: Go's transport silently retries idempotent requests
	// whose reused connection drops, which would hide reset faults.
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &env{t: t, sim: s, url: ts.URL, client: &http.Client{Jar: jar, Transport: tr, Timeout: 10 * time.Second}, tokens: map[string]string{}}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request and returns the whole answer; a transport error fails
// the test.
func (e *env) do(method, path string, body any, header map[string]string) reply {
	e.t.Helper()
	r, err := e.try(method, path, body, header)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// try is do that returns transport errors.
func (e *env) try(method, path string, body any, header map[string]string) (reply, error) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func (e *env) get(path string) reply {
	e.t.Helper()
	return e.do(http.MethodGet, path, nil, nil)
}

// token fetches (once) a CSRF token for the service base.
func (e *env) token(base string) string {
	e.t.Helper()
	if tok, ok := e.tokens[base]; ok {
		return tok
	}
	r := e.do(http.MethodGet, base+"/", nil, map[string]string{"X-CSRF-Token": "Fetch"})
	tok := r.header.Get("X-CSRF-Token")
	if r.status != http.StatusOK || tok == "" {
		e.t.Fatalf("CSRF fetch %s: status %d token %q", base, r.status, tok)
	}
	e.tokens[base] = tok
	return tok
}

// post writes with a CSRF token.
func (e *env) post(base, rel string, body any) reply {
	e.t.Helper()
	return e.do(http.MethodPost, base+rel, body, map[string]string{"X-CSRF-Token": e.token(base)})
}

func postPath(id, fy string) string {
	return "/Post?SupplierInvoice='" + id + "'&FiscalYear='" + fy + "'"
}

// postInvoice calls the function import Post for the invoice.
func (e *env) postInvoice(id, fy string) reply {
	e.t.Helper()
	return e.post(invSrv, postPath(id, fy), nil)
}

// releaseBlock calls the function import Release for the invoice.
func (e *env) releaseBlock(id, fy string, shiftDiscountDays bool) reply {
	e.t.Helper()
	shift := "false"
	if shiftDiscountDays {
		shift = "true"
	}
	return e.post(invSrv, "/Release?SupplierInvoice='"+id+"'&FiscalYear='"+fy+"'&DiscountDaysHaveToBeShifted="+shift, nil)
}

// admin posts JSON to an admin endpoint and wants 200.
func (e *env) admin(method, path string, body any) reply {
	e.t.Helper()
	r := e.do(method, path, body, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("%s %s: status %d: %s", method, path, r.status, r.body)
	}
	return r
}

// q builds a query string from key/value pairs.
func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}

// entity decodes {"d":{...}}.
func entity(t *testing.T, r reply) map[string]any {
	t.Helper()
	var v struct {
		D map[string]any `json:"d"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || v.D == nil {
		t.Fatalf("status %d: not an entity: %v: %s", r.status, err, r.body)
	}
	return v.D
}

// list decodes {"d":{"results":[...]}}.
func list(t *testing.T, r reply) []map[string]any {
	t.Helper()
	var v struct {
		D struct {
			Results []map[string]any `json:"results"`
		} `json:"d"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || v.D.Results == nil {
		t.Fatalf("status %d: not a list: %v: %s", r.status, err, r.body)
	}
	return v.D.Results
}

// column returns one property of every entity.
func column(rows []map[string]any, name string) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		s, _ := r[name].(string)
		out = append(out, s)
	}
	return out
}

// apiErr is an error envelope in either form.
type apiErr struct {
	code    string
	message string
	details []string
	txid    string
}

// decodeError reads a v2 (array or object details) or v4 envelope.
func decodeError(t *testing.T, r reply) apiErr {
	t.Helper()
	var raw struct {
		Error struct {
			Code       string          `json:"code"`
			Message    json.RawMessage `json:"message"`
			Details    []detailJSON    `json:"details"`
			InnerError *struct {
				TransactionID string          `json:"transactionid"`
				ErrorDetails  json.RawMessage `json:"errordetails"`
			} `json:"innererror"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil || raw.Error.Code == "" {
		t.Fatalf("status %d: not an error envelope: %v: %s", r.status, err, r.body)
	}
	out := apiErr{code: raw.Error.Code}
	var v2msg struct{ Value string }
	if json.Unmarshal(raw.Error.Message, &v2msg) == nil && v2msg.Value != "" {
		out.message = v2msg.Value
	} else {
		_ = json.Unmarshal(raw.Error.Message, &out.message)
	}
	details := raw.Error.Details
	if ie := raw.Error.InnerError; ie != nil {
		out.txid = ie.TransactionID
		if json.Unmarshal(ie.ErrorDetails, &details) != nil {
			var obj struct {
				ErrorDetail []detailJSON `json:"errordetail"`
			}
			if err := json.Unmarshal(ie.ErrorDetails, &obj); err != nil {
				t.Fatalf("errordetails: %v: %s", err, ie.ErrorDetails)
			}
			details = obj.ErrorDetail
		}
	}
	for _, d := range details {
		out.details = append(out.details, d.Code+":"+d.Severity)
	}
	return out
}

type detailJSON struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
	Target   string `json:"target"`
}

// wantError checks the status and the primary message id.
func wantError(t *testing.T, r reply, status int, code string) apiErr {
	t.Helper()
	if r.status != status {
		t.Fatalf("status: got %d, want %d: %s", r.status, status, r.body)
	}
	e := decodeError(t, r)
	if e.code != code {
		t.Fatalf("code: got %q, want %q: %s", e.code, code, r.body)
	}
	return e
}
