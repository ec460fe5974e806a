package api

// readArgs reads the body, up to Options.MaxBodyBytes, and parses its
// top-level fields for the idempotency store and the run guard. Fields
// that only repeat a path parameter are dropped first (path_echo.go).
func (s *Server) readArgs(o operation, next callHandler) callHandler {
	return func(c *operationCall) *response {
		body, err := readBody(c.r, s.maxBody)
		if err != nil {
			return s.failure(c.r, err, c.record)
		}
		if body, err = dropPathEcho(c.r, body); err != nil {
			return s.failure(c.r, err, c.record)
		}
		c.body, c.args = body, parseArgs(c.r, body)
		return next(c)
	}
}
