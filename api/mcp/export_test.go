package mcp

import (
	"github.com/go-json-experiment/json/jsontext"
)

// SetSDKOnly sends every request of s to the SDK (on) or lets the direct
// path answer the calls it can (off).
func (s *Server) SetSDKOnly(on bool) { s.sdkOnly.Store(on) }

// FailEncode makes the direct path's encoding of a tool result fail (on)
// or work (off).
func (s *Server) FailEncode(on bool) { s.failEncode.Store(on) }

// AppendResponse appends the direct path's answer of a REST answer to out.
func AppendResponse(out []byte, id string, status int, body, serverInfo []byte) []byte {
	return appendResponse(out, jsontext.Value(id), status, body, serverInfo)
}

// DirectAnswers is the number of calls the direct path has answered.
func (s *Server) DirectAnswers() int64 { return s.directAnswers.Load() }
