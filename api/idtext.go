package api

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// idFields are the body fields that hold an id: the ERP's (an invoice, a
// purchase order, its item, a supplier) or the gateway's (an approval, a
// hold, a handover). Every one is text in the contract.
var idFields = map[string]bool{
	"invoice_id": true, "po_id": true, "item": true, "supplier_id": true,
	"approval_id": true, "hold_id": true, "handover_id": true,
}

// idsAsText returns body with each top-level id field (idFields) that was
// sent as a JSON integer written as the string of its digits, as models
// send SAP's all-digit ids: {"invoice_id": 5105600101} is read as
// {"invoice_id": "5105600101"}. Only the plain form of an integer is taken
// (digits, no sign, fraction or exponent); its text then meets the id's
// pattern as any string does, so 12 for an invoice is still refused for
// its form. Any other number, and any other field, stays as it came, for
// the decoder to refuse with the wrong type. A body that is not a JSON
// object, or not valid JSON, is returned as it came; so is a body with no
// such field, without being copied.
func idsAsText(body []byte) []byte {
	if !mayHoldIntegerID(body) {
		return body
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return body
	}
	var out []byte
	last := 0
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return body
		}
		isID := idFields[name.String()]
		v, err := dec.ReadValue()
		if err != nil {
			return body
		}
		if !isID || v.Kind() != '0' || !plainInteger(v) {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		out = append(out, body[last:start]...)
		out = append(out, '"')
		out = append(out, v...)
		out = append(out, '"')
		last = end
	}
	if out == nil {
		return body
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return body
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return body
	}
	return append(out, body[last:]...)
}

// plainInteger reports whether v is written as digits only, one or more:
// a JSON number in its plain form (no sign, fraction or exponent), or an
// id of digits only.
func plainInteger(v []byte) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(v) > 0
}

// mayHoldIntegerID reports whether body has an id field's name followed,
// past a colon and blanks, by a digit: a cheap look that spares the usual
// bodies, whose ids are strings, the parse of idsAsText. It may say yes
// where a string holds such text; idsAsText then finds nothing to change.
func mayHoldIntegerID(body []byte) bool {
	for i := 0; i < len(body); {
		j := bytes.IndexByte(body[i:], ':')
		if j < 0 {
			return false
		}
		at := i + j
		i = at + 1
		k := i
		for k < len(body) && isBlank(body[k]) {
			k++
		}
		if k == len(body) || body[k] < '0' || body[k] > '9' {
			continue
		}
		// The name before the colon: its closing quote, past blanks.
		e := at - 1
		for e >= 0 && isBlank(body[e]) {
			e--
		}
		if e < 0 || body[e] != '"' {
			continue
		}
		s := bytes.LastIndexByte(body[:e], '"')
		if s >= 0 && idFields[string(body[s+1:e])] {
			return true
		}
	}
	return false
}

// isBlank reports whether c is JSON whitespace.
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
