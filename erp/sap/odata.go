package sap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
	sep := byte('?')
	write := func(p param) {
		b.WriteByte(sep)
		sep = '&'
		escapeTo(&b, p.name, true)
		b.WriteByte('=')
		escapeTo(&b, p.value, false)
	}
	for _, p := range params {
		write(p)
	}
	// Written last, not appended to params: that would copy them.
	if c.sapClient != "" {
		write(param{"sap-client", c.sapClient})
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
	escapes := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i], keepDollar) {
			escapes++
		}
	}
	if escapes == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*escapes)
	escapeTo(&b, s, keepDollar)
	return b.String()
}

// escapeTo writes s to b as escape returns it.
func escapeTo(b *strings.Builder, s string, keepDollar bool) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if unreserved(ch, keepDollar) {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[ch>>4])
		b.WriteByte(hex[ch&15])
	}
}

// unreserved reports whether escape keeps ch as it is.
func unreserved(ch byte, keepDollar bool) bool {
	return 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' ||
		ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '$' && keepDollar
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
	list, _, err := decodePage[T](body)
	return list, err
}

// decodePage reads one page of a list as decodeList does, and its __next
// link: where the rest of the list is, "" on the last page.
func decodePage[T any](body []byte) ([]T, string, error) {
	// Values, not pointers, so that reading them allocates nothing but
	// the list: a JSON array, [] included, reads as a non-nil slice, and
	// a "d" or "results" that is missing or null leaves the list nil.
	var fast struct {
		D struct {
			Results []T    `json:"results"`
			Next    string `json:"__next"`
		} `json:"d"`
	}
	if err := unmarshal(body, &fast); err == nil && fast.D.Results != nil {
		return fast.D.Results, fast.D.Next, nil
	}
	list, err := decodeAnyList[T](body)
	if err != nil {
		return nil, "", err
	}
	var env struct {
		D struct {
			Next string `json:"__next"`
		} `json:"d"`
	}
	// The older form, an array, has no link; an object's link is read on
	// its own here, and one that is not a string is no link.
	_ = unmarshal(body, &env)
	return list, env.D.Next, nil
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
// result is never nil on success. A list the ERP serves in pages is read
// to its end by following each page's __next link, each page a call of its
// own, up to the client's bound on pages: a longer list is an ERP fault,
// never a silent cut. Each link is followed on the client's base URL,
// whatever host it names, and never outside the service (nextPage).
func fetchList[W, D any](ctx context.Context, c *Client, r request, conv func(W) (D, error)) ([]D, error) {
	var out []D
	for page := 1; ; page++ {
		var next string
		_, err := c.do(ctx, r, func(_ http.Header, body []byte) error {
			list, link, err := decodePage[W](body)
			if err != nil {
				return err
			}
			// Converted apart and added only whole: an attempt that fails
			// halfway must leave nothing behind for the next one.
			got := make([]D, 0, len(list))
			for _, w := range list {
				d, err := conv(w)
				if err != nil {
					return err
				}
				got = append(got, d)
			}
			if out == nil {
				out = got
			} else {
				out = append(out, got...)
			}
			next = link
			return nil
		})
		if err != nil {
			return nil, err
		}
		if next == "" {
			break
		}
		if page >= c.maxPages {
			return nil, r.upstream(http.StatusOK, func(up *erp.UpstreamError) {
				up.Text = fmt.Sprintf("list longer than %d pages", c.maxPages)
				up.Attempts = 1
			})
		}
		u, err := c.nextPage(r.call.Service, r.url, next)
		if err != nil {
			up := r.malformed(http.StatusOK, err)
			up.Attempts = 1
			return nil, up
		}
		r.url = u
	}
	if out == nil {
		out = []D{}
	}
	return out, nil
}

// nextPage checks a __next link, absolute or relative to the page it came
// with, and returns the URL to read the next page at: the link's path and
// query on the client's base URL, whatever scheme, host and port the link
// names. An ERP behind a reverse proxy, a Web Dispatcher or the Cloud
// Connector writes its own name for itself into the link, one the gateway
// may not reach; and a request to any other host would take the gateway's
// credentials there. The path must stay inside the service the list was
// read from, without dot segments or encoded slashes: below the base URL's
// path, or below the OData root alone, as a system that knows nothing of a
// proxy's path prefix writes it. The sap-client must be the configured one
// (added when the link lacks it); a link naming one when none is
// configured is refused too, as it would read another client's data.
func (c *Client) nextPage(svc erp.Service, current, link string) (string, error) {
	cur, err := url.Parse(current)
	if err != nil {
		return "", err
	}
	u, err := cur.Parse(link)
	if err != nil {
		return "", fmt.Errorf("__next link is no URL: %w", err)
	}
	refuse := func(why string) (string, error) {
		return "", fmt.Errorf("__next link %q refused: %s", link, why)
	}
	if u.Opaque != "" || u.User != nil || !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https") {
		return refuse("not a plain HTTP URL")
	}
	path := u.EscapedPath()
	if p := "/" + u.Path + "/"; strings.Contains(p, "/../") || strings.Contains(p, "/./") ||
		strings.ContainsRune(u.Path, '\\') || strings.Contains(strings.ToLower(path), "%2f") {
		return refuse("a path that could leave the service")
	}
	root := odataRoot + servicePaths[svc] + "/"
	var rest string
	switch prefix := c.basePath; {
	case hasPrefixFold(path, prefix+root):
		rest = path[len(prefix+root):]
	case prefix != "" && hasPrefixFold(path, root):
		rest = path[len(root):]
	}
	if rest == "" {
		return refuse("outside the service")
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return refuse("a query that cannot be read")
	}
	var clients []string
	for name, values := range query {
		if strings.EqualFold(name, "sap-client") {
			clients = append(clients, values...)
		}
	}
	raw := u.RawQuery
	switch {
	case c.sapClient == "" && len(clients) > 0:
		return refuse("a sap-client where none is configured")
	case c.sapClient == "":
	case len(clients) == 0:
		if raw != "" {
			raw += "&"
		}
		raw += "sap-client=" + escape(c.sapClient, false)
	case len(clients) != 1 || clients[0] != c.sapClient:
		return refuse("another sap-client")
	}
	var b strings.Builder
	b.Grow(len(c.base) + len(root) + len(rest) + 1 + len(raw))
	b.WriteString(c.base)
	b.WriteString(root)
	b.WriteString(rest)
	if raw != "" {
		b.WriteByte('?')
		b.WriteString(raw)
	}
	return b.String(), nil
}

// hasPrefixFold reports whether s begins with prefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// missing reports a required field the ERP left empty.
func missing(field string) error {
	return fmt.Errorf("%s is empty", field)
}
