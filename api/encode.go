package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/erpgate/erpgate/errmap"
)

// JSON is encoded and decoded here and nowhere else in the API; error
// bodies are written by errmap.Write.

// marshal encodes a success body without HTML escaping, so that ids and
// amounts read the same to a person and to a model.
// The body is encoded into a pooled buffer and copied out at its size, so
// that a body costs one allocation instead of a buffer grown step by step.
func marshal(v any) ([]byte, error) {
	e := encoders.Get().(*pooledEncoder)
	defer func() {
		if e.buf.Cap() <= maxPooledBody {
			e.buf.Reset()
			encoders.Put(e)
		}
	}()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// pooledEncoder is an encoder over its own buffer, kept for reuse.
type pooledEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledBody is the largest buffer kept for reuse: a rare long list
// does not pin its memory.
const maxPooledBody = 64 << 10

var encoders = sync.Pool{New: func() any {
	e := &pooledEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// writeJSON sends an already encoded body.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// readBody reads the whole request body up to limit bytes. A longer body is
// a 413 INVALID_REQUEST.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, tooLarge(limit)
	case err != nil:
		return nil, errmap.Protocol(http.StatusBadRequest, "The request body could not be read.", nil)
	}
	return body, nil
}

// strictJSON is how request bodies are read: JSON v2 semantics
// (github.com/go-json-experiment/json, what encoding/json/v2 is made from),
// so that a member name matches its field exactly (REASON is no reason, and
// IDEMPOTENCY_KEY no idempotency key), a name given twice and invalid UTF-8
// are refused, and so is a member the operation does not know.
var strictJSON = jsonv2.JoinOptions(jsonv2.RejectUnknownMembers(true))

// tooLarge is the refusal of a body over limit bytes.
func tooLarge(limit int64) *errmap.Error {
	return errmap.Protocol(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("The request body is larger than %d bytes.", limit), map[string]any{"limit_bytes": limit})
}

// decode parses a JSON object body into v, refusing a body that is not
// JSON, unknown fields, fields named in another letter case, a field given
// twice, wrong types and trailing data (a body that is not sent as JSON and
// control characters were refused by readArgs, before the call claimed
// anything). An empty body decodes to the zero value when allowEmpty is set.
func decode(_ *http.Request, body []byte, v any, allowEmpty bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return errmap.Protocol(http.StatusBadRequest, "The request needs a JSON object body.", nil)
	}
	if err := jsonv2.Unmarshal(body, v, strictJSON); err != nil {
		return decodeError(body, err)
	}
	return nil
}

// scanStrings reads the body token by token and refuses the first string,
// member name or value, that holds a control character (controlRune), a
// member name given twice and invalid UTF-8. Other syntax errors are left
// for the decoder to name.
func scanStrings(body []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return strictSyntax(body, err)
		}
		if tok.Kind() != '"' {
			continue
		}
		if s := tok.String(); hasControl(s) {
			return errmap.Invalid(fieldOf(dec.StackPointer()), problemControl)
		}
	}
}

// fieldOf names the field a JSON pointer points at, as the refusals name
// fields: "/evidence/1" is evidence[1]. A name that is not of the form of
// a field (it may be anything) is not echoed: the field is "body".
func fieldOf(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	if f := b.String(); fieldNamePattern.MatchString(f) {
		return f
	}
	return "body"
}

// decodeError names what is wrong with a body without echoing it.
func decodeError(body []byte, err error) error {
	var (
		syntax   *jsontext.SyntacticError
		semantic *jsonv2.SemanticError
	)
	if e := strictSyntax(body, err); e != nil {
		return e
	}
	switch {
	case errors.As(err, &syntax) && syntax.JSONPointer == "" && syntax.ByteOffset > 0 && json.Valid(firstValue(body)):
		return errmap.Protocol(http.StatusBadRequest, "The request body holds data after its JSON object.", nil)
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return errmap.Protocol(http.StatusBadRequest, "The request body is not valid JSON.", nil)
	case errors.As(err, &semantic) && errors.Is(semantic.Err, jsonv2.ErrUnknownName):
		field := fieldOf(semantic.JSONPointer)
		if field == "body" {
			return errmap.Protocol(http.StatusBadRequest, "The request body has a field this operation does not know.", nil)
		}
		return errmap.Invalid(field, "is not a field of this operation")
	case errors.As(err, &semantic) && semantic.JSONPointer != "":
		if field := fieldOf(semantic.JSONPointer); field != "body" {
			return errmap.Invalid(field, "has the wrong type; see the operation's schema")
		}
	case errors.As(err, &semantic):
		return errmap.Protocol(http.StatusBadRequest, "The request body must be a JSON object.", nil)
	}
	return errmap.Protocol(http.StatusBadRequest, "The request body could not be decoded.", nil)
}

// checkContentType refuses a body that is not sent as JSON: a
// Content-Type other than application/json or a +json type. A body without
// a Content-Type is read as JSON.
func checkContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return errmap.Protocol(http.StatusUnsupportedMediaType,
			"The request body must be JSON, sent with Content-Type: application/json.", nil)
	}
	return nil
}

// strictSyntax names the syntax errors that encoding/json would let
// through: a member name given twice and invalid UTF-8; nil for any other
// error.
func strictSyntax(body []byte, err error) error {
	var syntax *jsontext.SyntacticError
	switch {
	case !errors.As(err, &syntax):
		return nil
	case errors.Is(syntax.Err, jsontext.ErrDuplicateName):
		return errmap.Invalid(fieldOf(syntax.JSONPointer), "is given more than once; send each field once")
	case !utf8.Valid(body):
		return errmap.Invalid(fieldOf(syntax.JSONPointer), "is not valid UTF-8")
	}
	return nil
}

// firstValue is the body's first JSON value, for telling trailing data
// from a body that is not JSON at all.
func firstValue(body []byte) []byte {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	v, err := dec.ReadValue()
	if err != nil {
		return nil
	}
	return v
}
