package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/errmap"
)

// args is a request's arguments as the guard and the idempotency store see
// them: the body's top-level fields, when it is a JSON object.
type args struct {
	fields map[string]json.RawMessage
	raw    []byte
}

func parseArgs(r *http.Request, body []byte) args {
	a := args{raw: body}
	if len(bytes.TrimSpace(body)) > 0 {
		// Decoded into a variable of its own, so that a call without a
		// body does not put a on the heap.
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(body, &fields) // a body that is not an object is refused by its handler
		a.fields = fields
	}
	return a
}

// str returns a top-level string field of the body, or "".
func (a args) str(name string) string {
	raw, ok := a.fields[name]
	if !ok {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// digest identifies an operation's arguments: the path, the query and the
// body without its idempotency key, canonicalised so that field order and
// spacing do not matter.
func (a args) digest(operation string, r *http.Request) string {
	h := sha256.New()
	h.Write([]byte(operation))
	h.Write([]byte{0})
	h.Write([]byte(r.URL.Path))
	h.Write([]byte{0})
	q := r.URL.Query()
	q.Del("run_id")
	h.Write([]byte(q.Encode()))
	h.Write([]byte{0})
	if a.fields != nil {
		canon := make(map[string]json.RawMessage, len(a.fields))
		for k, v := range a.fields {
			if k == "idempotency_key" || k == "run_id" {
				continue
			}
			var buf bytes.Buffer
			if json.Compact(&buf, v) == nil {
				v = buf.Bytes()
			}
			canon[k] = v
		}
		b, _ := json.Marshal(canon) // map keys are sorted
		h.Write(b)
	} else {
		h.Write(a.raw)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// invoiceID is the invoice a call is about, from the path or the body; ""
// for calls about no invoice.
func (a args) invoiceID(r *http.Request) string {
	if id := chi.URLParam(r, "invoice_id"); id != "" {
		return id
	}
	return a.str("invoice_id")
}

// idempotencyKey returns the write's key from the Idempotency-Key header or
// the idempotency_key body field; when both are given they must agree.
func idempotencyKey(r *http.Request, a args) (string, error) {
	header := r.Header.Get("Idempotency-Key")
	body := a.str("idempotency_key")
	key := header
	switch {
	case header != "" && body != "" && header != body:
		return "", errmap.Invalid("idempotency_key", "differs from the Idempotency-Key header; send one key")
	case key == "":
		key = body
	}
	if key != "" && !keyPattern.MatchString(key) {
		field := "idempotency_key"
		if header != "" {
			field = "Idempotency-Key"
		}
		return "", errmap.Invalid(field, "must be 1 to 200 characters of letters, digits, '_', '.', ':' or '-'")
	}
	return key, nil
}
