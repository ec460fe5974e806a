package sap

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/erpgate/erpgate/erp"
)

// transportError classifies a failure to get an answer at all: the caller
// gave up, the attempt ran out of time, or the network failed.
func (r request) transportError(ctx, actx context.Context, err error) *erp.UpstreamError {
	return r.upstream(0, func(up *erp.UpstreamError) {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			up.Text = "request canceled by the caller"
			up.Err = context.Canceled
		case errors.Is(actx.Err(), context.DeadlineExceeded) || isResponseTimeout(err):
			// A write that timed out may have been applied, so only a read
			// is safe to repeat.
			up.Timeout = true
			up.Transient = !r.call.Write
			up.Text = "no answer within the attempt timeout"
			up.Err = context.DeadlineExceeded
		default:
			up.Transient = true
			up.Text = err.Error()
			up.Err = err
		}
	})
}

// isResponseTimeout reports a transport timeout after the connection was
// made; a dial timeout is an ordinary network error, as nothing was sent.
func isResponseTimeout(err error) bool {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return false
	}
	var op *net.OpError
	return !(errors.As(err, &op) && op.Op == "dial")
}

// statusError turns a non-2xx answer into an UpstreamError: its message
// ids, what kind of body it had and what the call asked for, which errmap
// reads together to tell SAP Gateway's own answer from anything else that
// answers at the configured URL.
func (r request) statusError(status int, header http.Header, body []byte, now time.Time) *erp.UpstreamError {
	p := parseAnswer(body, r.acceptsXML())
	return r.upstream(status, func(up *erp.UpstreamError) {
		up.MessageIDs = p.ids
		up.Text = p.text
		up.Body = p.body
		up.Call = r.kind()
		up.RetryAfter = parseRetryAfter(header.Get("Retry-After"), now)
		up.Transient = transientStatus(status, p.body)
	})
}

// kind is what the request asks for: a POST calls a function import, a
// path that ends in a key reads one entity, any other path (an entity
// set, a navigation to many, the service root, $metadata) a list.
func (r request) kind() erp.CallKind {
	if r.call.Write || r.method == http.MethodPost {
		return erp.CallFunction
	}
	path, _, _ := strings.Cut(r.url, "?")
	if strings.HasSuffix(path, ")") {
		return erp.CallEntity
	}
	return erp.CallList
}

// acceptsXML reports whether the request asked for XML, as the $metadata
// read does: SAP Gateway then writes its errors in XML. Every other
// request accepts JSON only, so XML in answer to it is not SAP Gateway's.
func (r request) acceptsXML() bool {
	return strings.Contains(r.header.Get("Accept"), "xml")
}

// transientStatus reports whether an answer with the status and body may go
// away on a retry: 429 and the gateway statuses 502 to 504, whatever their
// body, and any other 5xx but 501 that is not SAP Gateway's error, which
// came from something in front of the ERP (a proxy, a gateway timeout
// page, an API management layer) rather than from its business logic.
// errmap's table of answers names the same ones transient.
func transientStatus(status int, body erp.AnswerBody) bool {
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusBadGateway,
		status == http.StatusServiceUnavailable, status == http.StatusGatewayTimeout:
		return true
	case status == http.StatusNotImplemented:
		return false
	}
	return status >= 500 && body != erp.BodySAPError
}

// entityNotFound returns nf when err is SAP Gateway's own answer that the
// entity a read or a function import names does not exist: a 404 with SAP
// Gateway's error, about the entity rather than the service. Anything else
// that answers 404 (a Web Dispatcher's page, another server's JSON) is
// never taken for the entity; err is returned as it is.
func entityNotFound(err error, nf *erp.NotFoundError) error {
	up, ok := errors.AsType[*erp.UpstreamError](err)
	if ok && up.Status == http.StatusNotFound && up.Body == erp.BodySAPError && !up.Config && up.Call != erp.CallList {
		return nf
	}
	return err
}

// MaxRetryAfter is the longest wait a Retry-After hint is taken for: a
// longer one, in seconds or as a date, is cut to it, so that the agent
// holds the invoice for a day at most and checks again.
const MaxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After header given in seconds or as an HTTP
// date, at most MaxRetryAfter; it returns 0 when the header is absent,
// invalid or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case s <= 0:
			return 0
		case s > int64(MaxRetryAfter/time.Second):
			return MaxRetryAfter
		}
		return time.Duration(s) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d := t.Sub(now); d > 0 {
		return min(d, MaxRetryAfter)
	}
	return 0
}

// parsedError is what an error body says.
type parsedError struct {
	ids      []string // message ids, primary first, deduplicated, errors only
	text     string   // upstream wording, for logs
	body     erp.AnswerBody
	envelope bool // the body was SAP Gateway's OData error
	fault    bool // the body was an API management fault
}

// errorBody covers the OData v2 and v4 error envelopes and the API
// management fault.
type errorBody struct {
	Error *struct {
		Code       string          `json:"code"`
		Message    json.RawMessage `json:"message"`
		InnerError *struct {
			ErrorDetails json.RawMessage `json:"errordetails"`
		} `json:"innererror"`
		Details []errorDetail `json:"details"`
	} `json:"error"`
	Fault *struct {
		FaultString string `json:"faultstring"`
		Detail      struct {
			ErrorCode string `json:"errorcode"`
		} `json:"detail"`
	} `json:"fault"`
}

// errorDetail is one entry of errordetails (v2) or details (v4); the same
// shape is used by the sap-message header.
type errorDetail struct {
	Code     string          `json:"code"`
	Message  json.RawMessage `json:"message"`
	Severity string          `json:"severity"`
	Target   string          `json:"target"`
}

// parseErrorBody reads a JSON error body; see parseAnswer.
func parseErrorBody(body []byte) parsedError { return parseAnswer(body, false) }

// parseAnswer reads the body of a failed call: SAP Gateway's OData error
// (v2 or v4 JSON, or v2 XML when the request accepted XML) with its
// message ids, or else the kind of body it is. SAP Gateway's error has a
// code and a message, as OData prescribes; JSON with an "error" member of
// another shape is someone else's.
func parseAnswer(body []byte, acceptsXML bool) parsedError {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return parsedError{body: erp.BodyEmpty}
	}
	var eb errorBody
	err := json.Unmarshal(trimmed, &eb)
	switch {
	case err == nil && eb.Error != nil && strings.TrimSpace(eb.Error.Code) != "" && isMessage(eb.Error.Message):
		return parseEnvelope(eb)
	case acceptsXML && trimmed[0] == '<':
		if p, ok := parseXMLEnvelope(trimmed); ok {
			return p
		}
	case err == nil && eb.Fault != nil:
		text := eb.Fault.FaultString
		if eb.Fault.Detail.ErrorCode != "" {
			text += " (" + eb.Fault.Detail.ErrorCode + ")"
		}
		return parsedError{text: text, body: erp.BodyOtherJSON, fault: true}
	}
	p := parsedError{text: snippet(body), body: erp.BodyText}
	if json.Valid(trimmed) {
		p.body = erp.BodyOtherJSON
	}
	return p
}

// isMessage reports whether raw is an OData error message: a string (v4)
// or an object with a string value (v2).
func isMessage(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return true
	}
	var obj struct {
		Value *string `json:"value"`
	}
	return json.Unmarshal(raw, &obj) == nil && obj.Value != nil
}

// parseEnvelope reads the message ids and the text of SAP Gateway's JSON
// error.
func parseEnvelope(eb errorBody) parsedError {
	e := eb.Error
	p := parsedError{envelope: true, body: erp.BodySAPError, text: messageText(e.Message)}
	var details []errorDetail
	if e.InnerError != nil {
		details = append(details, parseErrorDetails(e.InnerError.ErrorDetails)...)
	}
	details = append(details, e.Details...)
	p.ids = errorIDs(e.Code, details)
	if p.text == "" {
		p.text = e.Code
	}
	return p
}

// errorIDs are the message ids of an error: its code first, then the
// codes of the details that are errors, each once.
func errorIDs(code string, details []errorDetail) []string {
	var ids []string
	seen := map[string]bool{}
	add := func(id string) {
		id = strings.TrimSpace(id)
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	add(code)
	for _, d := range details {
		if isErrorSeverity(d.Severity) {
			add(d.Code)
		}
	}
	return ids
}

// metadataNamespace is the namespace of OData v2's XML error.
const metadataNamespace = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"

// xmlError is SAP Gateway's OData v2 error in XML.
type xmlError struct {
	XMLName xml.Name `xml:"error"`
	Code    string   `xml:"code"`
	Message string   `xml:"message"`
	Details []struct {
		Code     string `xml:"code"`
		Severity string `xml:"severity"`
	} `xml:"innererror>errordetails>errordetail"`
}

// parseXMLEnvelope reads SAP Gateway's XML error; false for any other XML.
func parseXMLEnvelope(body []byte) (parsedError, bool) {
	var x xmlError
	if xml.Unmarshal(body, &x) != nil || x.XMLName.Space != metadataNamespace || strings.TrimSpace(x.Code) == "" {
		return parsedError{}, false
	}
	details := make([]errorDetail, 0, len(x.Details))
	for _, d := range x.Details {
		details = append(details, errorDetail{Code: d.Code, Severity: d.Severity})
	}
	p := parsedError{envelope: true, body: erp.BodySAPError, text: strings.TrimSpace(x.Message), ids: errorIDs(x.Code, details)}
	if p.text == "" {
		p.text = strings.TrimSpace(x.Code)
	}
	return p, true
}

// parseErrorDetails accepts errordetails as an array, as
// {"errordetail":[...]} or as {"errordetail":{...}}.
func parseErrorDetails(raw json.RawMessage) []errorDetail {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return nil
	}
	var list []errorDetail
	if raw[0] == '[' {
		if json.Unmarshal(raw, &list) == nil {
			return list
		}
		return nil
	}
	var wrapped struct {
		ErrorDetail json.RawMessage `json:"errordetail"`
	}
	if json.Unmarshal(raw, &wrapped) != nil {
		return nil
	}
	inner := bytes.TrimSpace(wrapped.ErrorDetail)
	if len(inner) == 0 {
		return nil
	}
	if inner[0] == '[' {
		if json.Unmarshal(inner, &list) == nil {
			return list
		}
		return nil
	}
	var one errorDetail
	if json.Unmarshal(inner, &one) == nil {
		return []errorDetail{one}
	}
	return nil
}

// isErrorSeverity reports whether a detail counts as an error. A detail
// without a severity is one: the v4 envelope often leaves it out.
func isErrorSeverity(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "warning", "info", "information", "success":
		return false
	}
	return true
}

// messageText reads a message given as a v4 string or a v2 object
// {"lang":"en","value":"..."}.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Value string `json:"value"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Value
	}
	return ""
}

// snippet is the start of a body that is not JSON, for logs.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	const max = 256
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "..."
	}
	return s
}

// ParseMessages parses SAP's sap-message response header, a JSON object
// {"code","message","severity","target","details":[...]}, into the
// messages it carries: the top-level one first, then the details, each with
// its severity in lower case. Exact repeats are dropped. An empty header
// gives no messages and no error.
func ParseMessages(header string) ([]erp.Message, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, nil
	}
	var m struct {
		errorDetail
		Details []errorDetail `json:"details"`
	}
	if err := json.Unmarshal([]byte(header), &m); err != nil {
		return nil, err
	}
	var out []erp.Message
	seen := map[erp.Message]bool{}
	for _, d := range append([]errorDetail{m.errorDetail}, m.Details...) {
		msg := erp.Message{ID: strings.TrimSpace(d.Code), Severity: strings.ToLower(strings.TrimSpace(d.Severity))}
		if msg.ID == "" || seen[msg] {
			continue
		}
		seen[msg] = true
		out = append(out, msg)
	}
	return out, nil
}
