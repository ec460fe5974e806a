package api

// checkScope refuses, SCOPE_MISSING, a client whose scopes do not hold the
// one the operation needs (scopeOf).
func (s *Server) checkScope(o operation, next callHandler) callHandler {
	scope := s.scopeOf(o)
	return func(c *operationCall) *response {
		if err := authorize(c.client, o, scope); err != nil {
			return s.failure(c.r, err, c.record)
		}
		return next(c)
	}
}
