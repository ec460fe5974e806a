package errmap

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// HeadLimit is how much of an error body some OpenAPI-to-MCP bridges pass
// on (openapi-mcp-generator cuts at 200 characters): code, retryable and
// next_action must end within it.
const HeadLimit = 200

// HeadEnd is the byte offset in e's body at which next_action ends: its
// code, message, retryable and next_action, which come first.
func (e *Error) HeadEnd() int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	head := struct {
		Code       Code       `json:"code"`
		Message    string     `json:"message"`
		Retryable  bool       `json:"retryable"`
		NextAction NextAction `json:"next_action"`
	}{e.Code, e.Message, e.Retryable, e.NextAction}
	if enc.Encode(head) != nil {
		return 0
	}
	// The head object ends with "}\n"; the body goes on with ,"details".
	return buf.Len() - 2
}

// FitHead shortens a message that would push next_action past HeadLimit:
// it cuts the message at a word boundary and ends it with "…". The ids a
// message names are in details too, so nothing the next step needs is
// lost. Messages errmap words itself always fit (length_test.go); this
// keeps the promise for messages composed around a caller's input, such as
// a field name. It returns e.
func (e *Error) FitHead() *Error {
	if e.HeadEnd() <= HeadLimit {
		return e
	}
	const ellipsis = "…"
	msg := e.Message
	e.Message = ""
	room := HeadLimit - e.HeadEnd() - len(ellipsis)
	end := 0
	for i, r := range msg {
		n := encodedLen(string(r))
		if n > room {
			break
		}
		room -= n
		end = i + utf8.RuneLen(r)
	}
	cut := msg[:end]
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
		cut = cut[:i]
	}
	e.Message = strings.TrimRight(cut, " ,;:.") + ellipsis
	return e
}

// encodedLen is the length of s as a JSON string, without its quotes.
func encodedLen(s string) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return buf.Len() - 3
}

// OneOf is the INVALID_REQUEST of an enumerated field: "Field "f" <problem>
// a, b, c." listing the values when that fits in the head of the body
// (HeadLimit), else "<problem> the values in details.allowed" with the
// values in details.allowed.
func OneOf(field, problem string, allowed []string) *Error {
	e := Invalid(field, problem+" "+strings.Join(allowed, ", "))
	if e.HeadEnd() <= HeadLimit {
		return e
	}
	return Invalid(field, problem+" the values in details.allowed").WithDetail("allowed", allowed)
}
