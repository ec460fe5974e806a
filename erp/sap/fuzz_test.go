package sap

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// maxRetryAfter is the longest wait an ERP answer may ask for; a longer one
// is cut to it.
const maxRetryAfter = MaxRetryAfter

func FuzzParseError(f *testing.F) {
	for _, body := range []string{v2Array, v2Object, v2Single, v4, v4NoSeverity, fault, html, ``, `null`, `{}`,
		`{"error":null,"fault":null}`, `{"error":{"code":" M8/108 ","message":{"value":null}}}`,
		`{"error":{"code":"","message":"","innererror":{"errordetails":{"errordetail":null}}}}`,
		`{"error":{"innererror":{"errordetails":"M8/108"},"details":{"code":"x"}}}`,
		`{"error":{"code":"F5/201","innererror":{"errordetails":{"errordetail":[{"code":"\u0000"},{"code":"F5/201"}]}}}}`,
		`{"ERROR":{"CODE":"06/019"}}`, "{\"error\":{\"code\":\"\xff\xfe\",\"message\":\"\xc3\x28\"}}", "\xff\xfe\x00 binary",
		`{"fault":{"faultstring":"Identifier : gw.example.internal"}}`, `[{"error":{"code":"M8/108"}}]`,
		strings.Repeat(`{"error":`, 64) + `1` + strings.Repeat(`}`, 64)} {
		f.Add(400, "", []byte(body))
	}
	f.Add(429, "7", []byte(v4))
	f.Add(503, "Tue, 24 Nov 2026 10:00:30 GMT", []byte(v2Object))
	f.Add(503, "-1", []byte(fault))
	f.Add(0, "99999999999999999999", []byte(html))
	f.Add(999, "Mon, 02 Jan 2006 15:04:05 GMT", []byte(`{"error":{"code":"M8/081"}}`))

	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	keys := map[string]string{"invoice_id": "5105600101", "po_id": "4500018822"}
	r := request{call: retry.Call{Service: erp.ServiceSupplierInvoice, Operation: "release invoice", Write: true}, keys: keys}

	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		header := http.Header{}
		header.Set("Retry-After", retryAfter)
		up := r.statusError(status, header, body, now)
		if up == nil {
			t.Fatal("no error for a failed answer")
		}
		if up.Status != status || up.Service != erp.ServiceSupplierInvoice || up.Operation != "release invoice" || !up.Write {
			t.Errorf("call fields changed: %+v", up)
		}
		if !maps.Equal(up.Keys, keys) {
			t.Errorf("keys %v, want the call's %v", up.Keys, keys)
		}
		if up.RetryAfter < 0 || up.RetryAfter > maxRetryAfter {
			t.Errorf("Retry-After %q gave a wait of %v, want 0 or at most %v", retryAfter, up.RetryAfter, maxRetryAfter)
		}
		switch status {
		case 429, 502, 503, 504:
			if !up.Transient {
				t.Errorf("status %d not transient", status)
			}
		}
		checkMessageIDs(t, up.MessageIDs, body)
		p := parseErrorBody(body)
		if !p.envelope && !p.fault {
			if len(p.ids) != 0 {
				t.Errorf("ids %q from a body that is no envelope", p.ids)
			}
			// Text of a body that is not an envelope is a bounded snippet
			// on one line, for a log record.
			if len(p.text) > 256+len("...") || strings.ContainsAny(p.text, "\r\n\t") {
				t.Errorf("snippet of %d bytes: %q", len(p.text), p.text)
			}
		}
		if p.fault && len(p.ids) != 0 {
			t.Errorf("ids %q from an API management fault", p.ids)
		}
	})
}

// checkMessageIDs asserts that ids are what the envelope's code fields
// hold: trimmed, non-empty, valid UTF-8, without repeats, and never made
// up by the parser.
func checkMessageIDs(t *testing.T, ids []string, body []byte) {
	t.Helper()
	codes := map[string]bool{}
	var v any
	if json.Unmarshal(body, &v) == nil {
		collectCodes(v, codes)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		switch {
		case id == "" || id != strings.TrimSpace(id):
			t.Errorf("id %q is empty or not trimmed", id)
		case !utf8.ValidString(id):
			t.Errorf("id %q is not valid UTF-8", id)
		case seen[id]:
			t.Errorf("id %q repeated in %q", id, ids)
		case !codes[id]:
			t.Errorf("id %q is not a code of the body", id)
		}
		seen[id] = true
	}
}

// collectCodes gathers the trimmed string values of every "code" key, in
// any case, as encoding/json matches field names without regard to case.
func collectCodes(v any, codes map[string]bool) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			collectCodes(e, codes)
		}
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && strings.EqualFold(k, "code") {
				codes[strings.TrimSpace(s)] = true
			}
			collectCodes(e, codes)
		}
	}
}

func FuzzParseMessages(f *testing.F) {
	for _, h := range []string{
		``, `   `, `null`, `{}`, `[]`, `"M8/082"`, `M8/082 warning`,
		`{"code":"M8/082","message":"Price variance","severity":"warning","target":""}`,
		`{"code":"M8/082","message":"x","severity":"warning","details":[{"code":"M8/082","message":"x","severity":"warning"},{"code":"M8/087","message":"y","severity":"Info"},{"code":"","severity":"info"}]}`,
		`{"code":"M8/082","severity":"warning","details":[{"code":"M8/082","severity":"error"}]}`,
		`{"code":"MRM/001","message":{"lang":"en","value":"Posted"},"severity":"success"}`,
		`{"code":" M8/081 ","severity":" WARNING ","details":null}`,
		`{"code":1,"severity":true}`, `{"details":[null,{"code":"M8/194"},{}]}`,
		"{\"code\":\"\xff\xfe\",\"severity\":\"\xc3\x28\"}", `{"CODE":"M8/083","Severity":"Warning","DETAILS":[{"Code":"M8/083"}]}`,
		`{"code":"M8/082"} trailing`, strings.Repeat(`{"details":[`, 40),
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		msgs, err := ParseMessages(header)
		if strings.TrimSpace(header) == "" && (msgs != nil || err != nil) {
			t.Fatalf("empty header: %v, %v", msgs, err)
		}
		if err != nil {
			if msgs != nil {
				t.Errorf("messages %v beside error %v", msgs, err)
			}
			return
		}
		seen := map[erp.Message]bool{}
		for _, m := range msgs {
			if m.ID == "" || m.ID != strings.TrimSpace(m.ID) || !utf8.ValidString(m.ID) {
				t.Errorf("message id %q", m.ID)
			}
			if m.Severity != strings.ToLower(strings.TrimSpace(m.Severity)) || !utf8.ValidString(m.Severity) {
				t.Errorf("severity %q is not trimmed lower case", m.Severity)
			}
			if seen[m] {
				t.Errorf("message %v repeated in %v", m, msgs)
			}
			seen[m] = true
		}
		var v any
		if json.Unmarshal([]byte(header), &v) == nil {
			codes := map[string]bool{}
			collectCodes(v, codes)
			for _, m := range msgs {
				if !codes[m.ID] {
					t.Errorf("id %q is not a code of the header", m.ID)
				}
			}
		}
	})
}

// FuzzDecodeList reads arbitrary bodies as an invoice list: no panic, the
// one-pass reader agrees with the general one, and both read what
// encoding/json reads the same way.
func FuzzDecodeList(f *testing.F) {
	for _, seed := range []string{
		string(invoiceListJSON(2)),
		`{"d":[{"SupplierInvoice":"1","SupplierInvoiceStatus":"A"}]}`,
		`{"d":{"results":[{"supplierinvoice":"1","InvoiceGrossAmount":"1.5","DocumentDate":"\/Date(0+0100)\/"}]}}`,
		`{"d":{"results":null}}`,
		"{\"d\":{\"results\":[{\"SupplierInvoice\":\"\xff\\ud800\"}]}}",
		`{"d":{"results":[{"SupplierInvoice":"1","SupplierInvoice":2}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, fastErr := decodeList[wireInvoice](body)
		slow, slowErr := decodeAnyList[wireInvoice](body)
		if fmt.Sprint(fastErr) != fmt.Sprint(slowErr) || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("one pass %+v, %v\ngeneral  %+v, %v", fast, fastErr, slow, slowErr)
		}
		var v1 struct {
			D struct {
				Results []wireInvoice `json:"results"`
			} `json:"d"`
		}
		v1Err := json.Unmarshal(body, &v1)
		if fastErr == nil && v1Err == nil && !reflect.DeepEqual(fast, v1.D.Results) && len(fast)+len(v1.D.Results) > 0 {
			t.Fatalf("read %+v\nencoding/json read %+v", fast, v1.D.Results)
		}
	})
}
