package errmap

import (
	"fmt"
	"net/http"
)

// Transport is the five-field INVALID_REQUEST of an HTTP status the MCP
// transport at /mcp refuses a request with, in its own words: a foreign Host
// or Origin (403), a session id (404), a method other than POST (405, naming
// method when it is one HTTP defines, never echoing anything else), a body
// over maxBody bytes (413), a body not sent as JSON (415); any other 4xx is
// a malformed request (400), a 5xx the gateway's INTERNAL. The text the
// transport wrote is never used: it may echo the request.
func Transport(status int, method string, maxBody int64) *Error {
	switch status {
	case http.StatusForbidden:
		return Protocol(status, "The request's Host or Origin is not one /mcp serves: cross-origin and DNS-rebinding requests are refused.", nil)
	case http.StatusNotFound:
		return Protocol(status, "No MCP session with this id: /mcp keeps no sessions, so send no Mcp-Session-Id.", nil)
	case http.StatusMethodNotAllowed:
		switch method {
		case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete,
			http.MethodConnect, http.MethodOptions, http.MethodTrace:
		default:
			method = "this"
		}
		return Protocol(status, fmt.Sprintf("Method %s is not allowed at /mcp. POST JSON-RPC messages there.", method), nil)
	case http.StatusRequestEntityTooLarge:
		return Protocol(status, fmt.Sprintf("The MCP request body is larger than %d bytes.", maxBody), map[string]any{"limit_bytes": maxBody})
	case http.StatusUnsupportedMediaType:
		return Protocol(status, "The MCP request body must be JSON, sent with Content-Type: application/json.", nil)
	}
	if status >= http.StatusInternalServerError {
		return Map(fmt.Errorf("mcp transport answered %d", status))
	}
	return Protocol(http.StatusBadRequest,
		"The MCP request is malformed: POST one JSON-RPC request, Content-Type: application/json, Accept: application/json, text/event-stream.", nil)
}
