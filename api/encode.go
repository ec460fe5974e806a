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

	"github.com/erpgate/erpgate/errmap"
)

// JSON is encoded and decoded here and nowhere else in the API; error
// bodies are written by errmap.Write.

// marshal encodes a success body without HTML escaping, so that ids and
// amounts read the same to a person and to a model.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

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
		return nil, errmap.Protocol(http.StatusRequestEntityTooLarge,
			fmt.Sprintf("The request body is larger than %d bytes.", limit), map[string]any{"limit_bytes": limit})
	case err != nil:
		return nil, errmap.Protocol(http.StatusBadRequest, "The request body could not be read.", nil)
	}
	return body, nil
}

// decode parses a JSON object body into v, refusing a body that is not
// JSON, unknown fields, wrong types and trailing data. An empty body decodes
// to the zero value when allowEmpty is set.
func decode(r *http.Request, body []byte, v any, allowEmpty bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return nil
		}
		return errmap.Protocol(http.StatusBadRequest, "The request needs a JSON object body.", nil)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errmap.Protocol(http.StatusUnsupportedMediaType,
				"The request body must be JSON, sent with Content-Type: application/json.", nil)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return errmap.Protocol(http.StatusBadRequest, "The request body holds more than one JSON value.", nil)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errmap.Protocol(http.StatusBadRequest, "The request body holds data after its JSON object.", nil)
	}
	return nil
}

// decodeError names what is wrong with a body without echoing it.
func decodeError(err error) error {
	var (
		syntax    *json.SyntaxError
		typeError *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return errmap.Protocol(http.StatusBadRequest, "The request body is not valid JSON.", nil)
	case errors.As(err, &typeError) && fieldNamePattern.MatchString(typeError.Field):
		return errmap.Invalid(typeError.Field, "has the wrong type; see the operation's schema")
	case errors.As(err, &typeError):
		return errmap.Protocol(http.StatusBadRequest, "The request body must be a JSON object.", nil)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if !fieldNamePattern.MatchString(field) {
			return errmap.Protocol(http.StatusBadRequest, "The request body has a field this operation does not know.", nil)
		}
		return errmap.Invalid(field, "is not a field of this operation")
	}
	return errmap.Protocol(http.StatusBadRequest, "The request body could not be decoded.", nil)
}
