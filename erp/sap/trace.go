package sap

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// Header names of what a request to the ERP carries of the call it is
// made for, besides the request id (identify.go): the W3C trace context,
// and the caller, for SAP's logs.
const (
	headerTraceparent = "Traceparent"
	headerTracestate  = "Tracestate"
	// HeaderCaller names the agent or person a request to the ERP is made
	// for: key="<API key's name>" for a client known by its API key, or
	// client="<client id>", sub="<subject>" for one known by an access
	// token. Only names, never a credential: the caller's own token and
	// key stay with the gateway.
	HeaderCaller = "X-Erpgate-Caller"
)

// callHeaders are the headers of a request to the ERP that come from the
// call it is made for.
type callHeaders struct {
	id, traceparent, tracestate, caller []string
}

// callHeadersOf reads the call's headers: the request id and the caller
// from ctx, the call's, and the trace context from actx, the attempt's,
// whose span (when tracing) is the attempt's own. Without tracing, the
// trace context is the caller's as it came, when it sent one.
func callHeadersOf(ctx, actx context.Context) callHeaders {
	h := callHeaders{id: requestID(ctx)}
	if sc := trace.SpanContextFromContext(actx); sc.IsValid() {
		propagation.TraceContext{}.Inject(actx, &h)
	}
	if c := erp.CallerFrom(ctx); c != (erp.Caller{}) {
		h.caller = []string{callerValue(c)}
	}
	return h
}

// Get, Set and Keys make callHeaders the carrier the trace context is
// written into.
func (h *callHeaders) Get(string) string { return "" }

func (h *callHeaders) Set(key, value string) {
	switch key {
	case "traceparent":
		h.traceparent = []string{value}
	case "tracestate":
		h.tracestate = []string{value}
	}
}

func (h *callHeaders) Keys() []string { return nil }

func (h callHeaders) empty() bool {
	return h.id == nil && h.traceparent == nil && h.caller == nil
}

// set puts the call's headers on hdr.
func (h callHeaders) set(hdr http.Header) {
	if h.id != nil {
		setRequestID(hdr, h.id)
	}
	if h.traceparent != nil {
		hdr[headerTraceparent] = h.traceparent
		if h.tracestate != nil {
			hdr[headerTracestate] = h.tracestate
		}
	}
	if h.caller != nil {
		hdr[HeaderCaller] = h.caller
	}
}

// onto returns a copy of the shared header hdr with the call's headers.
func (h callHeaders) onto(hdr http.Header) http.Header {
	out := make(http.Header, len(hdr)+5)
	maps.Copy(out, hdr)
	h.set(out)
	return out
}

// callerValue is the X-Erpgate-Caller of c.
func callerValue(c erp.Caller) string {
	var b strings.Builder
	item := func(name, value string) {
		if value == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteByte('=')
		quoted(&b, value)
	}
	switch {
	case c.Client != "" || c.Subject != "":
		item("client", c.Client)
		item("sub", c.Subject)
	default:
		item("key", c.Name)
	}
	return b.String()
}

// maxCallerValue bounds one name in X-Erpgate-Caller.
const maxCallerValue = 256

// quoted writes s as a quoted string of a structured header field
// (RFC 8941): between double quotes, with " and \ escaped by a backslash.
// A byte that a quoted string cannot hold (a control character, non-ASCII)
// and % are percent-encoded, so that the value is one line of ASCII
// whatever a token's claims hold.
func quoted(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	if len(s) > maxCallerValue {
		s = s[:maxCallerValue]
	}
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e || c == '%':
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// The attributes erp/sap adds to an attempt's span (retry.Policy.Tracer).
const (
	attrSAPService   = attribute.Key("erpgate.sap.service")
	attrEntitySet    = attribute.Key("erpgate.sap.entity_set")
	attrFunction     = attribute.Key("erpgate.sap.function")
	attrMessageIDs   = attribute.Key("erpgate.sap.message_ids")
	attrStatus       = attribute.Key("http.response.status_code")
	entitySetsPrefix = "A_" // every entity set of SAP's APIs the gateway calls
)

// traceAnswer names the attempt's span, when it records, after what r
// asked of the ERP, "GET A_SupplierInvoice" (the HTTP method and the
// entity set or function import), and adds the SAP service, the entity set
// or function, the ERP's status and, from an error body, SAP's message
// ids, in one call: each SetAttributes of a span grows its list anew. The
// URL's keys and query stay out: they may name a person.
func traceAnswer(span trace.Span, r request, status int, err error) {
	svc := servicePaths[r.call.Service]
	res := resourceOf(r.url, svc)
	if res == "" {
		span.SetName(r.method + " " + svc)
	} else {
		span.SetName(r.method + " " + res)
	}
	retry.SetAttributes(span, func(attrs []attribute.KeyValue) []attribute.KeyValue {
		attrs = append(attrs, attrSAPService.String(svc))
		switch {
		case strings.HasPrefix(res, entitySetsPrefix):
			attrs = append(attrs, attrEntitySet.String(res))
		case res != "" && res[0] != '$':
			attrs = append(attrs, attrFunction.String(res))
		}
		if status > 0 {
			attrs = append(attrs, attrStatus.Int(status))
		}
		if up, ok := errors.AsType[*erp.UpstreamError](err); ok && len(up.MessageIDs) > 0 {
			attrs = append(attrs, attrMessageIDs.StringSlice(up.MessageIDs))
		}
		return attrs
	})
}

// resourceOf is the entity set, function import or $metadata that url
// names in the service svc; "" for the service's root.
func resourceOf(url, svc string) string {
	i := strings.Index(url, odataRoot)
	if i < 0 || !strings.HasPrefix(url[i+len(odataRoot):], svc) {
		return ""
	}
	rest := strings.TrimPrefix(url[i+len(odataRoot)+len(svc):], "/")
	if j := strings.IndexAny(rest, "(?/"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
