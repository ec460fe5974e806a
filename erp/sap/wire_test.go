package sap

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
)

func at(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func TestParseDate(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"/Date(1730505600000)/", day(2024, 11, 2), false},
		{"/Date(1730505600000+0000)/", day(2024, 11, 2), false},
		{"/Date(1730505600000+0060)/", day(2024, 11, 2), false},
		{"/Date(1730505600000-0130)/", day(2024, 11, 2), false},
		{"/Date(-86400000)/", day(1969, 12, 31), false},
		{"/Date(0)/", at(0), false},
		{"", time.Time{}, false},
		{"2026-11-24T00:00:00Z", day(2026, 11, 24), false},
		{"/Date(abc)/", time.Time{}, true},
		{"/Date(123+00)/", time.Time{}, true},
		{"/Date()/", time.Time{}, true},
		{"/Date(123", time.Time{}, true},
		{"24.11.2026", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := parseDate(tt.in)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("parseDate(%q): got %v, %v, want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSAPDateJSON(t *testing.T) {
	var v struct{ A, B sapDate }
	if err := json.Unmarshal([]byte(`{"A":"\/Date(1730505600000)\/","B":null}`), &v); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !v.A.Equal(day(2024, 11, 2)) || !v.B.IsZero() {
		t.Errorf("got %v and %v, want 2024-11-02 and zero", v.A, v.B)
	}
}

func TestSAPDecimal(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{`"1000.00"`, "1000", false},
		{`"10.000"`, "10", false},
		{`"-0.5"`, "-0.5", false},
		{`12.5`, "12.5", false},
		{`""`, "0", false},
		{`null`, "0", false},
		{`"1,000.00"`, "", true},
		{`true`, "", true},
	}
	for _, tt := range tests {
		var d sapDecimal
		err := json.Unmarshal([]byte(tt.in), &d)
		if (err != nil) != tt.wantErr || (!tt.wantErr && d.String() != tt.want) {
			t.Errorf("decimal %s: got %v, %v, want %s, error %v", tt.in, d.Decimal, err, tt.want, tt.wantErr)
		}
	}
}

func TestEscapeAndLiterals(t *testing.T) {
	tests := []struct{ in, key, lit string }{
		{"4500018822", "A('4500018822')", "'4500018822'"},
		{"45'00", "A('45%27%2700')", "'45''00'"},
		{"a b/c?d&e#f+g%", "A('a%20b%2Fc%3Fd%26e%23f%2Bg%25')", "'a b/c?d&e#f+g%'"},
		{"ü", "A('%C3%BC')", "'ü'"},
	}
	for _, tt := range tests {
		if got := entityKey("A", tt.in); got != tt.key {
			t.Errorf("entityKey(%q): got %q, want %q", tt.in, got, tt.key)
		}
		if got := literal(tt.in); got != tt.lit {
			t.Errorf("literal(%q): got %q, want %q", tt.in, got, tt.lit)
		}
	}
	if got, want := escape("$filter", true), "$filter"; got != want {
		t.Errorf("escape name: got %q, want %q", got, want)
	}
	if got, want := escape("$x", false), "%24x"; got != want {
		t.Errorf("escape value: got %q, want %q", got, want)
	}
}

func TestItemNumber(t *testing.T) {
	for in, want := range map[string]string{"00010": "10", "10": "10", "000001": "1", "0": "0", "000": "0", "": ""} {
		if got := itemNumber(in); got != want {
			t.Errorf("itemNumber(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestParseMessages(t *testing.T) {
	tests := []struct {
		name    string
		header  string
		want    []erp.Message
		wantErr bool
	}{
		{"empty", "", nil, false},
		{"single warning", `{"code":"M8/082","message":"Price variance","severity":"warning","target":""}`,
			[]erp.Message{{ID: "M8/082", Severity: "warning"}}, false},
		{"with details", `{"code":"M8/082","message":"x","severity":"warning","details":[
{"code":"M8/082","message":"x","severity":"warning"},{"code":"M8/087","message":"y","severity":"Info"},{"code":"","severity":"info"}]}`,
			[]erp.Message{{ID: "M8/082", Severity: "warning"}, {ID: "M8/087", Severity: "info"}}, false},
		{"same id other severity", `{"code":"M8/082","severity":"warning","details":[{"code":"M8/082","severity":"error"}]}`,
			[]erp.Message{{ID: "M8/082", Severity: "warning"}, {ID: "M8/082", Severity: "error"}}, false},
		{"v2 message object", `{"code":"MRM/001","message":{"lang":"en","value":"Posted"},"severity":"success"}`,
			[]erp.Message{{ID: "MRM/001", Severity: "success"}}, false},
		{"not json", `M8/082 warning`, nil, true},
	}
	for _, tt := range tests {
		got, err := ParseMessages(tt.header)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, %v, want %v, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-5", 0},
		{"Tue, 24 Nov 2026 10:00:30 GMT", 30 * time.Second},
		{"Tue, 24 Nov 2026 09:59:00 GMT", 0},
		{"later", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		ids      []string
		envelope bool
		fault    bool
	}{
		{"v2 array", v2Array, []string{"M8/108", "/IWBEP/CX_MGW_BUSI_EXCEPTION"}, true, false},
		{"v2 object", v2Object, []string{"F5/201", "F5/202"}, true, false},
		{"v2 single", v2Single, []string{"06/020", "06/021"}, true, false},
		{"v4", v4, []string{"06/025", "06/027"}, true, false},
		{"errordetails null", `{"error":{"code":"X/1","message":"m","innererror":{"errordetails":null}}}`, []string{"X/1"}, true, false},
		{"fault", fault, nil, false, true},
		{"html", html, nil, false, false},
		{"empty", ``, nil, false, false},
		{"other json", `{"message":"x"}`, nil, false, false},
	}
	for _, tt := range tests {
		p := parseErrorBody([]byte(tt.body))
		if !slices.Equal(p.ids, tt.ids) || p.envelope != tt.envelope || p.fault != tt.fault {
			t.Errorf("%s: got ids %q envelope %v fault %v, want %q %v %v", tt.name, p.ids, p.envelope, p.fault, tt.ids, tt.envelope, tt.fault)
		}
	}
}

// TestAnswersReadAsEncodingJSONReadsThem holds the JSON v2 reading of OData
// answers to what encoding/json made of them: member names in another
// letter case, a name given twice, invalid UTF-8 and nulls read the same,
// and what encoding/json refused is refused.
func TestAnswersReadAsEncodingJSONReadsThem(t *testing.T) {
	bodies := []string{
		string(invoiceListJSON(3)),
		`{"d":{"results":[{"supplierinvoice":"5105600101","SUPPLIERINVOICESTATUS":"A","invoicegrossamount":"12.50"}]}}`,
		`{"d":{"results":[{"SupplierInvoice":"1","SupplierInvoice":"2","SupplierInvoiceStatus":"A"}]}}`,
		"{\"d\":{\"results\":[{\"SupplierInvoice\":\"1\",\"SupplierInvoiceIDByInvcgParty\":\"M\xfcller\",\"SupplierInvoiceStatus\":\"A\"}]}}",
		`{"d":{"results":[{"SupplierInvoice":"1","SupplierInvoiceStatus":"A","DocumentDate":null,"InvoiceGrossAmount":null,"to_SuplrInvcItemPurOrdRef":null}]}}`,
		`{"d":{"results":[{"SupplierInvoice":"1","SupplierInvoiceStatus":"A","InvoiceGrossAmount":12.5,"Unknown":{"a":[1,2]}}]}}`,
		`{"d":{"results":[{"SupplierInvoice":"1","SupplierInvoiceStatus":"A","DocumentDate":"\/Date(1795132800000)\/"}]}}`,
		`{"d":{"results":[{"SupplierInvoice":true}]}}`,
		`{"d":{"results":[{"SupplierInvoice":"1","InvoiceGrossAmount":"x"}]}}`,
		`{"d":{"results":[{"SupplierInvoice":"1"}]}`,
	}
	for i, body := range bodies {
		got, gotErr := decodeList[wireInvoice]([]byte(body))
		var v1 struct {
			D struct {
				Results []wireInvoice `json:"results"`
			} `json:"d"`
		}
		wantErr := json.Unmarshal([]byte(body), &v1)
		if (gotErr != nil) != (wantErr != nil) {
			t.Errorf("body %d: error %v, encoding/json's %v", i, gotErr, wantErr)
			continue
		}
		if wantErr == nil && !reflect.DeepEqual(got, v1.D.Results) {
			t.Errorf("body %d:\nread %+v\nencoding/json read %+v", i, got, v1.D.Results)
		}
	}
}
