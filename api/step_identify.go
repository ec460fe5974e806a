package api

// identifyCaller finds the client by its API key (identify) and names it in
// the access log; a call without a valid key is UNAUTHENTICATED.
func (s *Server) identifyCaller(o operation, next callHandler) callHandler {
	return func(c *operationCall) *response {
		client, err := s.identify(c.r)
		if err != nil {
			return s.failure(c.r, err, c.record)
		}
		c.client = client
		c.record.client = client.Name
		return next(c)
	}
}
