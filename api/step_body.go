package api

import (
	"bytes"
	"maps"
	"net/http"
	"slices"

	"github.com/erpgate/erpgate/errmap"
)

// readArgs reads the body, up to Options.MaxBodyBytes, refuses a body not
// sent as JSON and control characters in it, in the query and in the
// X-Run-Id header, and parses the
// body's top-level fields for the idempotency store and the run guard.
// These refusals come before any later step claims a key or counts a call.
// Ids sent as JSON integers are read as their digits (idtext.go), and
// fields that only repeat a path parameter are dropped (path_echo.go).
func (s *Server) readArgs(o operation, next callHandler) callHandler {
	return func(c *operationCall) *response {
		body, err := readBody(c.r, s.maxBody)
		if err == nil {
			err = checkInputText(c.r, body)
		}
		if err != nil {
			return s.failure(c.r, err, c.record)
		}
		body = idsAsText(body)
		if body, err = dropPathEcho(c.r, body); err != nil {
			return s.failure(c.r, err, c.record)
		}
		c.body, c.args = body, parseArgs(c.r, body)
		c.record.fields = c.args.fields
		return next(c)
	}
}

// checkInputText refuses a call whose text holds a control character
// (controlRune): any string of the body, member name or value, any query
// parameter, and a run id header that is not of the form of a run id (the
// call would otherwise run outside its run's limits); a body whose
// Content-Type is not JSON; and a body with a member name given twice or
// invalid UTF-8.
func checkInputText(r *http.Request, body []byte) error {
	if run := r.Header.Get("X-Run-Id"); run != "" && !headerIDPattern.MatchString(run) {
		return errmap.Invalid("X-Run-Id", "must be 1 to 128 letters, digits, '.', '_', ':' or '-'")
	}
	if r.URL.RawQuery != "" {
		q := r.URL.Query()
		for _, k := range slices.Sorted(maps.Keys(q)) {
			vs := q[k]
			field := k
			if !fieldNamePattern.MatchString(k) {
				field = "query"
			}
			for _, v := range vs {
				if hasControl(k) || hasControl(v) {
					return errmap.Invalid(field, problemControl)
				}
			}
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkContentType(r); err != nil {
		return err
	}
	return scanStrings(body)
}
