package sap

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// maxBody caps how much of a response is read.
const maxBody = 4 << 20

// request is one OData call, possibly attempted more than once.
type request struct {
	call    retry.Call
	method  string
	url     string
	body    []byte // JSON; nil for none
	header  http.Header
	cookies []*http.Cookie    // sent by hand when the HTTP client has no jar
	keys    map[string]string // the ids the call is about, for errors
	// key is one more id the call is about, for a read that is about one
	// thing and makes no map for a call that succeeds (errorKeys).
	key      param
	notFound *erp.NotFoundError
	// root says the request is for the service itself (its root or its
	// $metadata): a 404 then means the service is missing, a fault of
	// configuration.
	root bool
	// metadata says the request reads the service's $metadata: the one
	// request sent to a service that the last read of it found missing.
	metadata bool

	// csrfRequired is set when the answer was 403 with X-CSRF-Token: Required.
	csrfRequired *bool
}

var (
	mediaJSON    = []string{"application/json"}
	encodingGzip = []string{"gzip"}
)

// reply is what a successful attempt got back besides the decoded body.
type reply struct {
	status int
	header http.Header
}

// decoder turns a 2xx body into the caller's value; an error makes the
// answer a malformed response.
type decoder func(header http.Header, body []byte) error

// do runs one attempt of r through the runner. The service and the entity
// set or function r asks for go first into the call's collector, when it
// has one (erp.Called), for the access log's line of the request.
func (c *Client) do(ctx context.Context, r request, decode decoder) (reply, error) {
	if called := erp.CalledFrom(ctx); called != nil {
		svc := servicePaths[r.call.Service]
		called.Add(svc, resourceOf(r.url, svc))
	}
	if err := c.refuseMissing(r); err != nil {
		c.logAttempt(ctx, r, 0, time.Now(), err)
		return reply{}, err
	}
	if err := c.checkToken(ctx, r); err != nil {
		c.logAttempt(ctx, r, 0, time.Now(), err)
		return reply{}, err
	}
	var rep reply
	err := c.runner.Do(ctx, classified(r.call), func(actx context.Context) error {
		var err error
		rep, err = c.attempt(ctx, actx, r, decode)
		return err
	})
	// A not-found is an answer: it comes back as it is, not wrapped in
	// the runner's *retry.Error.
	if nf, ok := errors.AsType[*erp.NotFoundError](err); ok {
		return rep, nf
	}
	return rep, err
}

// header gives req the header of r: what every request has, r's own, the
// gateway's name and the call's own (the request id, the trace context and
// the caller), the gateway's credentials and, without a jar, r's cookies.
func (c *Client) header(ctx, actx context.Context, req *http.Request, r request, call callHeaders) error {
	// Shared values: a request's header is only ever Set, never
	// appended to in place.
	req.Header["Accept"] = mediaJSON
	// Asked for here rather than by the transport, which would make a
	// header of its own on every request for it; readAnswer decompresses.
	req.Header["Accept-Encoding"] = encodingGzip
	if r.body != nil {
		req.Header["Content-Type"] = mediaJSON
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	req.Header["User-Agent"] = c.userAgent
	call.set(req.Header)
	// The gateway's own credentials, set last so that nothing else can
	// put an Authorization header on a request to the ERP.
	if err := c.authorize(req, r.call.Service); err != nil {
		up := r.authError(ctx, actx, err)
		c.logAttempt(ctx, r, 0, time.Now(), up)
		return up
	}
	if c.http.Jar == nil {
		for _, ck := range r.cookies {
			req.AddCookie(ck)
		}
	}
	return nil
}

// send sends req as http.Client.Do does when it follows no redirect: the
// jar's cookies on the request and the answer's back into the jar, errors
// as *url.Error. It goes to the transport itself, without Do's
// bookkeeping for redirects (a copy of the request's header and URL and a
// closure on every request), unless the client has a Timeout, which Do
// keeps.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	if c.http.Timeout > 0 {
		return c.http.Do(req)
	}
	if c.http.Jar != nil {
		if cks := c.http.Jar.Cookies(req.URL); len(cks) > 0 {
			// On a copy: the header may be one that requests share.
			req.Header = req.Header.Clone()
			for _, ck := range cks {
				req.AddCookie(ck)
			}
		}
	}
	rt := c.http.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err == nil && resp == nil {
		err = errors.New("http: RoundTripper returned a nil *Response with a nil error")
	}
	if err != nil {
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.Redacted(), Err: err}
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	if c.http.Jar != nil {
		if rc := resp.Cookies(); len(rc) > 0 {
			c.http.Jar.SetCookies(req.URL, rc)
		}
	}
	return resp, nil
}

// urlErrorOp is the Op of a *url.Error as http.Client names it: "Get",
// "Post", "Patch" (the client's methods are all ASCII).
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

func (c *Client) attempt(ctx, actx context.Context, r request, decode decoder) (reply, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, r.url, body)
	if err != nil {
		return reply{}, r.upstream(0, func(up *erp.UpstreamError) {
			up.Text = "cannot build request"
			up.Err = err
		})
	}
	span := retry.AttemptSpan(actx)
	recording := span != nil && span.IsRecording()
	call := callHeadersOf(ctx, actx)
	if c.readHeader != nil && r.body == nil && r.header == nil && (c.http.Jar != nil || len(r.cookies) == 0) {
		// A plain read: the client's one header, which nothing changes in
		// place (send copies it before it adds the jar's cookies).
		req.Header = c.readHeader
		if !call.empty() {
			req.Header = call.onto(c.readHeader)
		}
	} else if err := c.header(ctx, actx, req, r, call); err != nil {
		return reply{}, err
	}

	start := time.Now()
	resp, err := c.send(req)
	if err != nil {
		up := r.transportError(ctx, actx, err)
		markConfigTransport(ctx, up, err)
		c.logAttempt(ctx, r, 0, start, up)
		if recording {
			traceAnswer(span, r, 0, up)
		}
		return reply{}, up
	}
	data, err := readAnswer(resp)
	resp.Body.Close()
	if err != nil {
		var up *erp.UpstreamError
		if errors.Is(err, errTooLarge) {
			up = r.malformed(resp.StatusCode, err)
		} else {
			// The status line arrived but not the whole answer: for a write
			// that means it may have been applied, as with a broken connection.
			up = r.transportError(ctx, actx, err)
		}
		c.logAttempt(ctx, r, resp.StatusCode, start, up)
		if recording {
			traceAnswer(span, r, resp.StatusCode, up)
		}
		return reply{}, up
	}

	rep := reply{status: resp.StatusCode, header: resp.Header}
	var out error
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if decode != nil {
			if err := decode(resp.Header, data); err != nil {
				up := r.malformed(resp.StatusCode, err)
				up.Text = answerText(err)
				// A page where an OData answer belongs is a login page, a
				// portal or a proxy's: the request never reached the
				// service, and trying again brings the same page.
				if isPage(resp.Header, data) {
					up.Config = true
					up.Text = "an HTML page answered where the service's OData answer belongs"
				}
				out = up
			}
		}
	// Only SAP Gateway's own error says the entity does not exist: a 404
	// page of a proxy or a Web Dispatcher says the path is wrong.
	case resp.StatusCode == http.StatusNotFound && r.notFound != nil && !serviceMissing(data) && parseErrorBody(data).envelope:
		nf := *r.notFound
		out = &nf
	default:
		if resp.StatusCode == http.StatusForbidden && strings.EqualFold(resp.Header.Get("X-CSRF-Token"), "Required") && r.csrfRequired != nil {
			*r.csrfRequired = true
		}
		up := r.statusError(resp.StatusCode, resp.Header, data, time.Now())
		up.Config = r.configStatus(resp.StatusCode, up.MessageIDs)
		out = up
	}
	c.logAttempt(ctx, r, resp.StatusCode, start, out)
	if recording {
		traceAnswer(span, r, resp.StatusCode, out)
	}
	return rep, out
}

var errTooLarge = fmt.Errorf("response larger than %d bytes", maxBody)

// serviceMissingIDs are the message ids of SAP's gateway for a request to a
// service that is not published: not activated, or a wrong name or version.
var serviceMissingIDs = []string{
	"/IWFND/MED/170", // no service found for namespace, name and version
}

// serviceMissing reports whether an error body says the service itself is
// missing, not an entity in it.
func serviceMissing(body []byte) bool {
	for _, id := range parseErrorBody(body).ids {
		if slices.Contains(serviceMissingIDs, id) {
			return true
		}
	}
	return false
}

// configStatus reports whether a non-2xx answer is a fault of
// configuration: a 401 or 403 on any call (credentials or authorisations
// missing), or a 404 that is about the service rather than an entity.
func (r request) configStatus(status int, ids []string) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return true
	case http.StatusNotFound:
		if r.root {
			return true
		}
		for _, id := range ids {
			if slices.Contains(serviceMissingIDs, id) {
				return true
			}
		}
	}
	return false
}

// readAnswer reads the body of resp as readBody does, decompressed when
// the ERP sent it gzip-encoded; it then takes Content-Encoding and
// Content-Length out of the header, as the transport does when it
// decompresses an answer itself.
func readAnswer(resp *http.Response) ([]byte, error) {
	if !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return readBody(resp.Body, resp.ContentLength)
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return readBody(zr, -1)
}

// readBody reads a response body of size bytes (-1 when unknown) up to
// maxBody.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size > 0 && size <= maxBody {
		// The transport holds a body to its Content-Length: read it into
		// one buffer of that size instead of growing one.
		data := make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxBody {
		return nil, errTooLarge
	}
	return data, nil
}

func (c *Client) logAttempt(ctx context.Context, r request, status int, start time.Time, err error) {
	if !c.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("service", string(r.call.Service)),
		slog.String("operation", r.call.Operation),
		slog.String("method", r.method),
		slog.Int("status", status),
		slog.Duration("duration", time.Since(start)),
	}
	if id := erp.RequestIDFrom(ctx); id != "" {
		attrs = append(attrs, slog.String("request_id", id))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "sap attempt", attrs...)
}

// upstream returns an UpstreamError about r with the status, after applying
// set to it.
func (r request) upstream(status int, set func(*erp.UpstreamError)) *erp.UpstreamError {
	up := &erp.UpstreamError{
		Service:   r.call.Service,
		Operation: r.call.Operation,
		Write:     r.call.Write,
		Status:    status,
		Keys:      r.errorKeys(),
	}
	if set != nil {
		set(up)
	}
	return up
}

// errorKeys returns the ids the call is about, keys and key, as a map
// of their own; nil for none.
func (r request) errorKeys() map[string]string {
	m := maps.Clone(r.keys)
	if r.key.name != "" {
		if m == nil {
			m = make(map[string]string, 1)
		}
		m[r.key.name] = r.key.value
	}
	return m
}

// malformed reports a 2xx answer that cannot be read. It is not transient:
// the same answer would come again.
// isPage reports an answer that is an HTML page, by its media type or by
// its first byte.
func isPage(h http.Header, body []byte) bool {
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil && (mt == "text/html" || mt == "application/xhtml+xml") {
		return true
	}
	b := bytes.ToLower(bytes.TrimSpace(body[:min(len(body), 64)]))
	return bytes.HasPrefix(b, []byte("<!doctype html")) || bytes.HasPrefix(b, []byte("<html"))
}

func (r request) malformed(status int, err error) *erp.UpstreamError {
	return r.upstream(status, func(up *erp.UpstreamError) {
		up.Text = "malformed response"
		up.Err = err
	})
}
