package sap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/erpgate/erpgate/erp"
)

// servicePaths maps each service to its OData service name.
var servicePaths = map[erp.Service]string{
	erp.ServiceSupplierInvoice:  "API_SUPPLIERINVOICE_PROCESS_SRV",
	erp.ServicePurchaseOrder:    "API_PURCHASEORDER_PROCESS_SRV",
	erp.ServiceMaterialDocument: "API_MATERIAL_DOCUMENT_SRV",
	erp.ServiceBusinessPartner:  "API_BUSINESS_PARTNER",
}

// param is one query parameter; order is kept so URLs are predictable.
type param struct{ name, value string }

// odataRoot is where the OData services are below the base URL.
const odataRoot = "/sap/opu/odata/sap/"

// url builds the URL of resource (already escaped, see entityKey) in the
// service with the query parameters, whose values are escaped here.
func (c *Client) url(svc erp.Service, resource string, params ...param) string {
	var b strings.Builder
	n := len(c.base) + len(odataRoot) + len(servicePaths[svc]) + 1 + len(resource) + len("&sap-client=") + 3*len(c.sapClient)
	for _, p := range params {
		n += 2 + len(p.name) + 3*len(p.value)
	}
	b.Grow(n)
	b.WriteString(c.base)
	b.WriteString(odataRoot)
	b.WriteString(servicePaths[svc])
	b.WriteByte('/')
	b.WriteString(resource)
	if c.sapClient != "" {
		params = append(params, param{"sap-client", c.sapClient})
	}
	for i, p := range params {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(escape(p.name, true))
		b.WriteByte('=')
		b.WriteString(escape(p.value, false))
	}
	return b.String()
}

// entityKey is the escaped path segment Set('key').
func entityKey(set, key string) string {
	return set + "('" + escape(quoteString(key), false) + "')"
}

// literal is an OData string literal: the value in single quotes, with
// single quotes inside doubled.
func literal(s string) string {
	return "'" + quoteString(s) + "'"
}

func quoteString(s string) string {
	return strings.ReplaceAll(s, "'", "''")
}

// escape percent-encodes every byte but the unreserved ones, so a value can
// never end a path segment, a parameter or the query. Spaces become %20,
// not '+', which OData servers do not all read as a space. keepDollar keeps
// the '$' of system query option names readable.
func escape(s string, keepDollar bool) string {
	const hex = "0123456789ABCDEF"
	unreserved := func(ch byte) bool {
		return 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' ||
			ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '$' && keepDollar
	}
	escapes := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			escapes++
		}
	}
	if escapes == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*escapes)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if unreserved(ch) {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&15])
	}
	return b.String()
}

// odataJSON is how OData answers are read: with JSON v2
// (github.com/go-json-experiment/json, what encoding/json/v2 is made from),
// which reads an answer about twice as fast as encoding/json, keeping
// encoding/json's tolerance of member names in another letter case (but
// not with underscores left out), duplicate names (the last wins) and
// invalid UTF-8, so that an answer reads as it always has. Error envelopes
// are read with encoding/json.
var odataJSON = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// unmarshal reads one JSON value of an OData answer into v.
func unmarshal(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, odataJSON)
}

// decodeEntity reads {"d": {...}} into v.
func decodeEntity(body []byte, v any) error {
	var env struct {
		D jsontext.Value `json:"d"`
	}
	if err := unmarshal(body, &env); err != nil {
		return err
	}
	d := bytes.TrimSpace(env.D)
	if len(d) == 0 || d[0] != '{' {
		return errors.New(`no entity in "d"`)
	}
	return unmarshal(d, v)
}

// entityOf reads {"d": {...}} into a W in one pass over the body. Any
// other shape goes to decodeEntity, so that it fails the same way.
func entityOf[W any](body []byte) (W, error) {
	var env struct {
		D *W `json:"d"`
	}
	if err := unmarshal(body, &env); err == nil && env.D != nil {
		return *env.D, nil
	}
	var w W
	err := decodeEntity(body, &w)
	return w, err
}

// decodeList reads {"d": {"results": [...]}}, or the older {"d": [...]}.
// The usual form is read in one pass over the body; the older form and
// every failure take the general path, so that errors read the same.
func decodeList[T any](body []byte) ([]T, error) {
	var fast struct {
		D *struct {
			Results *[]T `json:"results"`
		} `json:"d"`
	}
	if err := unmarshal(body, &fast); err == nil && fast.D != nil && fast.D.Results != nil {
		if list := *fast.D.Results; list != nil {
			return list, nil
		}
		return []T{}, nil
	}
	return decodeAnyList[T](body)
}

// decodeAnyList reads both list forms, and names what is wrong with any
// other body.
func decodeAnyList[T any](body []byte) ([]T, error) {
	var env struct {
		D jsontext.Value `json:"d"`
	}
	if err := unmarshal(body, &env); err != nil {
		return nil, err
	}
	d := bytes.TrimSpace(env.D)
	var list []T
	switch {
	case len(d) > 0 && d[0] == '[':
		if err := unmarshal(d, &list); err != nil {
			return nil, err
		}
	case len(d) > 0 && d[0] == '{':
		var res struct {
			Results *[]T `json:"results"`
		}
		if err := unmarshal(d, &res); err != nil {
			return nil, err
		}
		if res.Results == nil {
			return nil, errors.New(`no "results" in "d"`)
		}
		list = *res.Results
	default:
		return nil, errors.New(`no list in "d"`)
	}
	if list == nil {
		list = []T{}
	}
	return list, nil
}

// fetchEntity reads one entity with a GET and converts it; a conversion
// failure is a malformed response.
func fetchEntity[W, D any](ctx context.Context, c *Client, r request, conv func(W) (D, error)) (D, error) {
	var v D
	_, err := c.do(ctx, r, func(_ http.Header, body []byte) error {
		w, err := entityOf[W](body)
		if err != nil {
			return err
		}
		d, err := conv(w)
		if err != nil {
			return err
		}
		v = d
		return nil
	})
	return v, err
}

// fetchList reads an entity set with a GET and converts each entry; the
// result is never nil on success.
func fetchList[W, D any](ctx context.Context, c *Client, r request, conv func(W) (D, error)) ([]D, error) {
	var v []D
	_, err := c.do(ctx, r, func(_ http.Header, body []byte) error {
		list, err := decodeList[W](body)
		if err != nil {
			return err
		}
		out := make([]D, 0, len(list))
		for _, w := range list {
			d, err := conv(w)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		v = out
		return nil
	})
	return v, err
}

// missing reports a required field the ERP left empty.
func missing(field string) error {
	return fmt.Errorf("%s is empty", field)
}
