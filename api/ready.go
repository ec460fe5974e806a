package api

// The values of /readyz's "auth": whether a caller needs credentials.
const (
	// AuthRequired: API keys or OAuth access tokens are configured; a
	// caller without valid ones is UNAUTHENTICATED.
	AuthRequired = "required"
	// AuthOpen: neither is configured; every caller is served, with every
	// scope.
	AuthOpen = "open"
)

// authState is /readyz's "auth": AuthRequired or AuthOpen.
func (s *Server) authState() string {
	if s.authenticated() {
		return AuthRequired
	}
	return AuthOpen
}
