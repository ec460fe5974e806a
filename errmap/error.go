package errmap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Error is a named business error: the five fields the agent reads, the
// HTTP status from the catalogue, and the cause, which is logged and never
// written.
type Error struct {
	Code       Code
	Message    string
	Retryable  bool
	NextAction NextAction
	Details    map[string]any
	Status     int
	Cause      error
}

// New returns an error with the code's status, retryable flag and
// next_action from the catalogue. A code with a queue carries it in
// details.queue, so the agent knows where to route without looking it up,
// also when it may first retry once. An unknown code is a bug and becomes
// INTERNAL.
func New(code Code, message string, details map[string]any) *Error {
	entry, ok := byCode[code]
	if !ok || !entry.Error {
		return New(Internal, internalMessage, map[string]any{})
	}
	if details == nil {
		details = map[string]any{}
	}
	e := &Error{Code: code, Message: message, Retryable: entry.Retryable,
		NextAction: entry.NextAction, Details: details, Status: entry.Status}
	if entry.Queue != "" {
		e.setDefault("queue", entry.Queue)
	}
	return e
}

// Error returns the code and the message.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// WithDetail sets details[key] unless it is already set, and returns e.
// Handlers use it to add the ids of the request to an error.
func (e *Error) WithDetail(key string, v any) *Error {
	e.setDefault(key, v)
	return e
}

// Route turns the error into a handover: next_action route_to_person and
// details.queue set to the code's queue (or queue, when given).
func (e *Error) Route(queue string) *Error {
	if queue == "" {
		queue = byCode[e.Code].Queue
	}
	e.NextAction = RouteToPerson
	if queue != "" {
		e.Details["queue"] = queue
	}
	return e
}

// Hold turns the error into a wait: next_action hold_and_recheck, for a
// refusal whose cure is time (goods that have not arrived, a person who has
// not decided yet), not a person's handover.
func (e *Error) Hold() *Error {
	e.NextAction = HoldAndRecheck
	return e
}

// Fix turns the error into a corrected call: next_action
// fix_input_and_retry, for a refusal whose cure is in details (an approval
// that took another's place).
func (e *Error) Fix() *Error {
	e.NextAction = FixInputAndRetry
	return e
}

func (e *Error) setDefault(key string, v any) {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	if _, ok := e.Details[key]; !ok {
		e.Details[key] = v
	}
}

// Body is the five-field error body, in its published field order.
type Body struct {
	Code       Code           `json:"code"`
	Message    string         `json:"message"`
	Retryable  bool           `json:"retryable"`
	NextAction NextAction     `json:"next_action"`
	Details    map[string]any `json:"details"`
}

// Body returns the five fields the agent reads.
func (e *Error) Body() Body {
	d := e.Details
	if d == nil {
		d = map[string]any{}
	}
	return Body{Code: e.Code, Message: e.Message, Retryable: e.Retryable, NextAction: e.NextAction, Details: d}
}

// Marshal returns the JSON of the five-field body, the exact bytes Write
// sends (without the trailing newline).
func (e *Error) Marshal() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.Body()); err != nil {
		// Details hold only strings, numbers and booleans we put there; a
		// value that cannot be encoded is a bug, reported without details.
		fb := New(Internal, internalMessage, nil)
		return fb.Marshal()
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ContentType is the media type of every error body.
const ContentType = "application/problem+json"

// Write sends e as an application/problem+json response with the catalogue
// status. A retryable error with details.retry_after_s also gets a
// Retry-After header, for clients that read headers.
func Write(w http.ResponseWriter, e *Error) {
	body := e.Marshal()
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("Cache-Control", "no-store")
	if s, ok := e.Details["retry_after_s"]; ok && e.Retryable {
		h.Set("Retry-After", fmt.Sprint(s))
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(body, '\n'))
}
