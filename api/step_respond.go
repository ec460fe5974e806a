package api

import (
	"time"
)

// respond writes the call's answer, with X-Run-Id when the call named a
// run, counts it in the metrics (with the trace as the latency's exemplar),
// names the operation and its outcome in the access log, and, when
// tracing, makes the call the operation's span (trace.go).
func (s *Server) respond(o operation, next callHandler) callHandler {
	return func(c *operationCall) *response {
		start := time.Now()
		c.record.operation = o.name
		span, own := s.operationSpan(c, o)
		resp := withRunID(next(c), c.run)
		resp.write(c.w)
		c.record.code = resp.code
		s.metrics.observe(o.name, resp.code, resp.status, time.Since(start), sampledTrace(span))
		endOperation(span, own, c, resp, o)
		return resp
	}
}

func withRunID(resp *response, run string) *response {
	if run != "" {
		resp.setHeader("X-Run-Id", run)
	}
	return resp
}
