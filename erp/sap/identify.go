package sap

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/erpgate/erpgate/erp"
)

// modulePath is the gateway's module, whose version names it to the ERP
// when Options.Version is empty.
const modulePath = "github.com/erpgate/erpgate"

// moduleVersion is the gateway module's version from the binary's build
// information: the main module's, or the dependency's when the gateway is
// built into another program; "devel" when it has none (go run, go test,
// a build from a working tree).
var moduleVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(info)
})

func versionOf(info *debug.BuildInfo) string {
	mod := &info.Main
	if mod.Path != modulePath {
		mod = nil
		for _, dep := range info.Deps {
			if dep.Path == modulePath {
				mod = dep
				if dep.Replace != nil && dep.Replace.Version != "" {
					mod = dep.Replace
				}
				break
			}
		}
	}
	if mod == nil || mod.Version == "" || mod.Version == "(devel)" || !isToken(mod.Version) {
		return "devel"
	}
	return mod.Version
}

// userAgent is the User-Agent of every request to the ERP: SAP's rules
// for third-party access ask that a caller name itself, and an operator
// finds the gateway's calls in the ERP's logs by it.
func userAgent(version string) ([]string, error) {
	if version == "" {
		version = moduleVersion()
	}
	if !isToken(version) {
		return nil, errors.New("sap: Options.Version must be a token such as v1.2.3: letters, digits and !#$%&'*+-.^_`|~")
	}
	return []string{"erpgate/" + version}, nil
}

// isToken reports whether s is an HTTP token (RFC 9110, section 5.6.2),
// which is what a product version in a User-Agent must be.
func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') &&
			strings.IndexByte("!#$%&'*+-.^_`|~", c) < 0 {
			return false
		}
	}
	return true
}

// Header names of the request id on a request to the ERP: the usual one,
// and SAP's, which SAP Gateway's logs and CAP's request context read.
const (
	headerRequestID     = "X-Request-Id"
	headerCorrelationID = "X-Correlationid" // X-CorrelationID, in Go's canonical form
)

// requestID returns the gateway's request id that ctx carries, as the
// value of its headers, or nil when it carries none, or one that could not
// be sent as it is (the API's own ids always can).
func requestID(ctx context.Context) []string {
	id := erp.RequestIDFrom(ctx)
	if id == "" || len(id) > 128 {
		return nil
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return nil
		}
	}
	return []string{id}
}

// setRequestID puts the request id on h.
func setRequestID(h http.Header, id []string) {
	h[headerRequestID] = id
	h[headerCorrelationID] = id
}

// userAgentTransport names the gateway on requests that do not go through
// the client's own header code: those of the OAuth 2.0 token endpoint.
type userAgentTransport struct {
	rt http.RoundTripper
	ua []string
}

func (t userAgentTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt := t.rt
	if rt == nil {
		rt = http.DefaultTransport
	}
	// A RoundTripper must not change the request it is given.
	r := req.Clone(req.Context())
	r.Header["User-Agent"] = t.ua
	return rt.RoundTrip(r)
}
