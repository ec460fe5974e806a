package errmap

import (
	"net/http"

	"github.com/erpgate/erpgate/api/refusal"
)

// InsufficientScope is SCOPE_MISSING as the MCP authorization spec has an
// OAuth client meet it on the MCP endpoint: HTTP 403, refused before the
// JSON-RPC call runs, so that the client can ask its authorization server
// for the scope (the caller adds the WWW-Authenticate insufficient_scope
// challenge). The body is the five fields of SCOPE_MISSING.
func InsufficientScope(s refusal.ScopeMissing) *Error {
	e := Map(s)
	e.Status = http.StatusForbidden
	return e
}
