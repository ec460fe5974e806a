// Package mcp serves erpgate's operations as MCP tools over the Streamable
// HTTP transport. The tools are made from the contract (openapi.yaml): one
// per operation for agents, named by its operationId, with a flat input
// schema of its path and query parameters and JSON body fields. The
// operations of people (x-erpgate-audience: people), such as deciding an
// approval, are no tools. A tool call is served by
// the same HTTP handlers as the REST call, so limits, idempotent replay,
// metrics and the five-field error body are the REST ones: an error result
// carries the REST error body byte for byte.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	restapi "github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/api/refusal"
	"github.com/erpgate/erpgate/errmap"
)

// Options configures a Server. Every zero field takes the default documented
// beside it.
type Options struct {
	// Name is the server implementation name announced to clients.
	// Default "erpgate".
	Name string
	// Version is the server implementation version. Default: the
	// contract's info.version, which versions the tools the server lists
	// ("1.0.0" if the contract has none).
	Version string
	// Logger receives the MCP server's own log lines. Default: discard.
	Logger *slog.Logger
	// Allowed reports whether the caller, known by the headers of its MCP
	// request, may call an operation; tools/list shows it only those. Nil
	// lists every tool. A call of a hidden tool still goes to the REST
	// handler, which refuses it in the five-field shape.
	Allowed func(header http.Header, operation string) bool
	// Tracer, when set, makes each tool call a server span (trace.go), the
	// child of the trace context in the call's params._meta or else of the
	// HTTP request's traceparent. Default: no spans; that trace context is
	// still passed on to the ERP as it came.
	Tracer trace.Tracer
}

// Server serves the contract's operations as MCP tools.
type Server struct {
	api   http.Handler
	log   *slog.Logger
	tools map[string]*tool // by name
	// sdkOnly sends every request to the SDK, the direct path's
	// reference.
	sdkOnly atomic.Bool
	// failEncode makes the direct path's encoding of a tool result fail,
	// for a test of what it answers then.
	failEncode atomic.Bool
	// directAnswers counts the calls the direct path answered, for the
	// tests of which path a call takes.
	directAnswers atomic.Int64
	// serverInfo is the server's name as the results of 2026-07-28 carry
	// it, in JSON.
	serverInfo []byte
	// metas are the _meta values of 2026-07-28 the direct path has taken.
	metas   metaSet
	server  *sdk.Server
	handler http.Handler
	tracer  trace.Tracer
	// auth is set when credentials are configured: no operation is
	// allowed without them.
	auth bool
	// logRefused writes the access log's line of a call refused before
	// its operation ran (LogRefusedCall of the REST handler), or is nil.
	logRefused func(context.Context, restapi.RefusedCall)
}

// refusalLogger is a REST handler that writes the access log's line of a
// call refused before its operation ran, as the gateway's does.
type refusalLogger interface {
	LogRefusedCall(context.Context, restapi.RefusedCall)
}

// New returns a Server whose tools are the operations of doc, each served
// by api, the gateway's REST handler. When api writes the access log's line
// of a call refused before its operation ran (as *api.Server does, with
// LogRefusedCall), every tools/call the endpoint refuses so has that line,
// as every call the REST handler serves has its own.
func New(api http.Handler, doc *openapi3.T, opts Options) (*Server, error) {
	if api == nil {
		return nil, fmt.Errorf("mcp: the API handler is required")
	}
	if opts.Name == "" {
		opts.Name = "erpgate"
	}
	if opts.Version == "" && doc.Info != nil {
		opts.Version = doc.Info.Version
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tools, err := buildTools(doc)
	if err != nil {
		return nil, err
	}
	s := &Server{api: api, log: opts.Logger, tools: map[string]*tool{}, tracer: opts.Tracer}
	if l, ok := api.(refusalLogger); ok {
		s.logRefused = l.LogRefusedCall
	}
	var instructions string
	if doc.Info != nil {
		instructions = doc.Info.Description
	}
	impl := &sdk.Implementation{Name: opts.Name, Version: opts.Version}
	if s.serverInfo, err = json.Marshal(impl); err != nil {
		return nil, err
	}
	s.server = sdk.NewServer(impl,
		&sdk.ServerOptions{
			Instructions: instructions,
			Logger:       sdkLogger(opts.Logger),
			Capabilities: capabilities(),
		})
	for _, t := range tools {
		s.server.AddTool(t.def, s.handle(t))
		s.tools[t.name] = t
	}
	// With credentials configured, a caller without any may call no
	// operation: the MCP endpoint then asks for credentials over HTTP, and
	// tools/list differs per key.
	if opts.Allowed != nil {
		s.auth = true
		for _, t := range tools {
			if opts.Allowed(http.Header{}, t.name) {
				s.auth = false
				break
			}
		}
		s.server.AddReceivingMiddleware(listOnlyAllowed(opts.Allowed, s.auth))
	}
	s.server.AddReceivingMiddleware(protocolErrorFields)
	// Stateless: each POST stands alone, so replicas behind a load balancer
	// need no session affinity; run state lives in the REST layer anyway.
	stream := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.server },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: sdkLogger(opts.Logger),
			// A call whose client went away stops, as a REST call does.
			PropagateRequestCancellation: true})
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if s.auth && r.Header.Get("Authorization") == "" && r.Header.Get("X-API-Key") == "" {
			// No credentials at all: 401 before any JSON-RPC, with the
			// challenge MCP clients start authorization from and the
			// five-field body of every refusal.
			w.Header().Set("WWW-Authenticate", `Bearer realm="erpgate"`)
			errmap.Write(w, errmap.Map(refusal.Unauthenticated{}))
			return
		}
		if !s.sdkOnly.Load() && s.direct(w, r, start) {
			return
		}
		// The tool handler sees only the request's headers; the peer
		// address travels in a header of our own that no client can set.
		r2 := r.Clone(r.Context())
		r2.Header.Set(remoteAddrHeader, r.RemoteAddr)
		r2.Header.Set(pathHeader, r.URL.Path)
		r2.Header.Del(callIDHeader)
		// The body, within the SDK's bound, for an argument's header a
		// client did not mirror (mirror.go) and the id a refusal answers.
		var body []byte
		if r2.Method == http.MethodPost && r2.Body != nil {
			body, _ = readBody(r2.Body, sdk.DefaultMaxRequestBodyBytes+1)
			r2.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r2.Body), r2.Body}
			s.mirrorParams(r2.Header, body)
		}
		if s.tracer != nil {
			if id := peekCallID(r2); id != "" {
				r2.Header.Set(callIDHeader, id)
			}
		}
		rw := &rpcWriter{ResponseWriter: w, r: r2, body: body, tee: s.logRefused != nil}
		stream.ServeHTTP(rw, r2)
		rw.finish()
		if s.logRefused != nil {
			s.logRPCRefusal(r.Context(), r2, body, rw.teed, start)
		}
	})
	return s, nil
}

// capabilities are the ones the server declares in initialize and
// server/discover. The SDK answers prompts/list and prompts/get on every
// server, so prompts are declared: the list is empty (the operations are
// tools, and there are no prompts) and never changes, so there is no
// listChanged. Completions are not declared: completion/complete refers to
// a prompt or a resource template, and there are neither, so it is
// answered "method not found", as for a server without the capability.
func capabilities() *sdk.ServerCapabilities {
	return &sdk.ServerCapabilities{
		Tools:   &sdk.ToolCapabilities{},
		Prompts: &sdk.PromptCapabilities{},
	}
}

// Handler returns the MCP Streamable HTTP endpoint, to mount at any path.
func (s *Server) Handler() http.Handler { return s.handler }

// handle serves one call of t.
func (s *Server) handle(t *tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var header http.Header
		if req.Extra != nil {
			header = req.Extra.Header
		}
		ct := callTrace{tool: t.name, spanName: t.spanName, id: header.Get(callIDHeader), meta: sdkMetaTrace(req.Params.Meta),
			protocol: header.Get("Mcp-Protocol-Version"), header: header, final: true, start: time.Now(), path: header.Get(pathHeader)}
		status, body, err := s.call(ctx, t, req.Params.Arguments, nil, header, header.Get(remoteAddrHeader), &recorder{header: http.Header{}}, &ct)
		if err != nil {
			return nil, err
		}
		return result(status, body), nil
	}
}

// call serves one call of t with the raw arguments (and decoded, the
// arguments as scalarArgs decodes them, or nil), for a client whose MCP
// request had header and came from remote, and returns the REST
// answer's status and body (or those of the refusal of arguments REST
// cannot check); an error is a protocol error. The REST handler answers
// into rec, whose buffer holds the body returned. The call runs in its
// trace context (ct), and when tracing is its span (trace.go); a protocol
// error has one only when ct is final, not when the SDK is to answer the
// request again.
func (s *Server) call(ctx context.Context, t *tool, args json.RawMessage, decoded map[string]any, header http.Header, remote string, rec *recorder, ct *callTrace) (int, []byte, error) {
	ctx = ct.context(ctx)
	parsed, invalid, err := t.parse(args, decoded)
	if err != nil {
		// A protocol error, answered as a JSON-RPC error by the SDK, whose
		// writer logs the call (logRPCRefusal).
		if ct.final {
			_, span := s.startCall(ctx, ct)
			endCall(span, 0, err)
		}
		return 0, nil, err
	}
	ctx, span := s.startCall(ctx, ct)
	if invalid != nil {
		// The arguments break the input schema where REST cannot see
		// it: the same five fields as a REST refusal, as a result.
		if span != nil && span.IsRecording() {
			span.SetAttributes(attrCode.String(string(invalid.Code)))
		}
		s.refused(ctx, header, ct, args, invalid.Code)
		endCall(span, invalid.Status, nil)
		return invalid.Status, invalid.FitHead().Marshal(), nil
	}
	// Made in the span's context, the REST request needs no copy to carry
	// it. It cannot fail for the contract's tools; if it did, the span ends
	// with the protocol error.
	hreq, err := t.request(ctx, parsed, header, remote)
	if err != nil {
		endCall(span, 0, err)
		return 0, nil, err
	}
	s.api.ServeHTTP(rec, hreq)
	endCall(span, rec.code(), nil)
	return rec.code(), rec.body.Bytes(), nil
}

// cacheScopePrivate is the cacheScope of a result only the requesting
// user's client may cache.
const cacheScopePrivate = "private"

// listOnlyAllowed filters tools/list down to the tools the caller may call.
// When private is set the list depends on the caller's credentials, so it
// is marked cacheable only by the caller's own client (cacheScope private).
func listOnlyAllowed(allowed func(http.Header, string) bool, private bool) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			list, ok := res.(*sdk.ListToolsResult)
			if err != nil || method != "tools/list" || !ok {
				return res, err
			}
			var header http.Header
			if extra := req.GetExtra(); extra != nil {
				header = extra.Header
			}
			kept := make([]*sdk.Tool, 0, len(list.Tools))
			for _, t := range list.Tools {
				if allowed(header, t.Name) {
					kept = append(kept, t)
				}
			}
			list.Tools = kept
			if private {
				list.CacheScope = cacheScopePrivate
			}
			return list, nil
		}
	}
}
