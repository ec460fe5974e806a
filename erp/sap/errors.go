package sap

import (
	"bytes"
	"context"
	"encoding/json"
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

// statusError turns a non-2xx answer into an UpstreamError.
func (r request) statusError(status int, header http.Header, body []byte, now time.Time) *erp.UpstreamError {
	p := parseErrorBody(body)
	return r.upstream(status, func(up *erp.UpstreamError) {
		up.MessageIDs = p.ids
		up.Text = p.text
		up.RetryAfter = parseRetryAfter(header.Get("Retry-After"), now)
		up.Transient = transientStatus(status, p)
	})
}

// transientStatus reports whether an answer with the status and body may go
// away on a retry. A 5xx that is not an OData envelope came from something
// in front of the ERP (a proxy, a gateway timeout page), not from the ERP's
// business logic.
func transientStatus(status int, p parsedError) bool {
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusBadGateway,
		status == http.StatusServiceUnavailable, status == http.StatusGatewayTimeout:
		return true
	case p.fault:
		return true
	case status >= 500 && !p.envelope:
		return true
	}
	return false
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
	envelope bool     // the body was an OData error envelope
	fault    bool     // the body was an API management fault
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

func parseErrorBody(body []byte) parsedError {
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err != nil || (eb.Error == nil && eb.Fault == nil) {
		return parsedError{text: snippet(body)}
	}
	if eb.Error == nil {
		text := eb.Fault.FaultString
		if eb.Fault.Detail.ErrorCode != "" {
			text += " (" + eb.Fault.Detail.ErrorCode + ")"
		}
		return parsedError{text: text, fault: true}
	}
	e := eb.Error
	p := parsedError{envelope: true, text: messageText(e.Message)}
	seen := map[string]bool{}
	add := func(id string) {
		id = strings.TrimSpace(id)
		if id != "" && !seen[id] {
			seen[id] = true
			p.ids = append(p.ids, id)
		}
	}
	add(e.Code)
	var details []errorDetail
	if e.InnerError != nil {
		details = append(details, parseErrorDetails(e.InnerError.ErrorDetails)...)
	}
	details = append(details, e.Details...)
	for _, d := range details {
		if isErrorSeverity(d.Severity) {
			add(d.Code)
		}
	}
	if p.text == "" {
		p.text = e.Code
	}
	return p
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
