package api

// The values of /readyz's "auth": whether a caller needs credentials.
const (
	// AuthRequired: API keys or OAuth access tokens are configured; a
	// caller without valid ones is UNAUTHENTICATED.
	AuthRequired = "required"
	// AuthOpen: neither is configured; a caller without credentials is
	// served as the agent anonymous (scopes read, write and post), and
	// only the demonstration people's keys (Options.DemoPeople) reach the
	// operations of people.
	AuthOpen = "open"
)

// authState is /readyz's "auth": AuthRequired or AuthOpen.
func (s *Server) authState() string {
	if s.authenticated() {
		return AuthRequired
	}
	return AuthOpen
}
