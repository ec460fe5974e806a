package sim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// detail is one entry of an error envelope's detail list.
type detail struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
	Target   string `json:"target"`
}

// apiError is an OData error the simulator answers with.
type apiError struct {
	status  int
	code    string // SAP message id "CLASS/NUMBER"
	message string
	target  string
	extra   []detail // details after the primary one
}

func newError(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

// response is a complete HTTP answer, computed under the lock and written
// after it; repeatable writes keep it for replay.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) write(w http.ResponseWriter) {
	for k, vs := range r.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}

// jsonResponse marshals v as an OData JSON answer.
func jsonResponse(status int, v any) response {
	body, err := json.Marshal(v)
	if err != nil {
		return textResponse(http.StatusInternalServerError, "text/plain; charset=utf-8", "marshal: "+err.Error())
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("DataServiceVersion", "2.0")
	return response{status: status, header: h, body: body}
}

func textResponse(status int, contentType, body string) response {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	return response{status: status, header: h, body: []byte(body)}
}

// envelope renders e in the given form.
func (e *apiError) envelope(form, serviceName, component string, now time.Time) response {
	details := append([]detail{{Code: e.code, Message: e.message, Severity: "error", Target: e.target}}, e.extra...)
	var body any
	switch form {
	case EnvelopeV4:
		body = map[string]any{"error": obj{
			{"code", e.code},
			{"message", e.message},
			{"target", e.target},
			{"details", details},
		}}
	default:
		var errordetails any = details
		if form == EnvelopeV2Detail {
			errordetails = map[string]any{"errordetail": details}
		}
		body = map[string]any{"error": obj{
			{"code", e.code},
			{"message", obj{{"lang", "en"}, {"value", e.message}}},
			{"innererror", obj{
				{"application", obj{
					{"component_id", component},
					{"service_namespace", "/SAP/"},
					{"service_id", serviceName},
					{"service_version", "0001"},
				}},
				{"transactionid", transactionID()},
				{"timestamp", now.UTC().Format("20060102150405.0000000")},
				{"Error_Resolution", obj{
					{"SAP_Transaction", "For backend administrators: use ADT feed reader \"SAP Gateway Error Log\" or run transaction /IWFND/ERROR_LOG on SAP Gateway hub system and search for entries with the timestamp above for more details"},
					{"SAP_Note", "See SAP Note 1797736 for error analysis (https://service.sap.com/sap/support/notes/1797736)"},
				}},
				{"errordetails", errordetails},
			}},
		}}
	}
	r := jsonResponse(e.status, body)
	if e.status >= 500 {
		r.header.Del("DataServiceVersion")
	}
	return r
}

// transactionID is a random gateway transaction id: 32 upper-case hex
// digits, meaningful only to a Basis administrator.
func transactionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// sapMessage is the JSON of SAP's sap-message header for a successful
// answer with a message.
func sapMessage(code, message, severity string) string {
	b, _ := json.Marshal(obj{
		{"code", code},
		{"message", message},
		{"severity", severity},
		{"target", ""},
		{"details", []detail{}},
	})
	return string(b)
}
