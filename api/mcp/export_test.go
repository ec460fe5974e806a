package mcp

// SetSDKOnly sends every request of s to the SDK (on) or lets the direct
// path answer the calls it can (off).
func (s *Server) SetSDKOnly(on bool) { s.sdkOnly.Store(on) }

// Direct reports whether the direct path answers body.
func (s *Server) Direct(body []byte) bool {
	_, _, _, ok := s.directCall(body)
	return ok
}
