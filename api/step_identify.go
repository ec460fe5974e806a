package api

import (
	"net/http"
	"strings"

	"github.com/erpgate/erpgate/erp"
)

// identifyCaller finds the client by its API key or OAuth access token
// (identify) and names it in the access log; a call without valid
// credentials is UNAUTHENTICATED, with the WWW-Authenticate of OAuth when
// the server takes access tokens, and RATE_LIMITED once its source address
// has failed more often than Options.AuthFailLimit allows. The ERP calls
// of the operation are made for the caller: its API key's name, or the
// name its access token gives; an anonymous caller has no name of its own
// there. The ERP's requests name the caller (erp.Caller), never with the
// caller's own credentials. With Options.SubjectTokens, a caller's
// verified access token goes on only as the subject of a token exchange
// (erp.WithSubjectToken), with the operation the exchanged token is
// narrowed to; the adapter sends the ERP a token of its own.
func (s *Server) identifyCaller(o operation, next callHandler) callHandler {
	return func(c *operationCall) *response {
		client, err := s.authenticate(c.r)
		if err != nil {
			resp := s.failure(c.r, err, c.record)
			if ch := s.challenge(err); ch != "" {
				resp.setHeader("WWW-Authenticate", ch)
			}
			return resp
		}
		c.client = client
		c.record.client = client.Name
		if client != &anonymous {
			ctx := erp.WithCaller(c.r.Context(), erp.Caller{Name: strings.TrimPrefix(client.Name, oauthPrefix),
				Client: client.Client, Subject: client.Subject})
			if s.subjectTokens {
				if tok := accessToken(c.r, client); tok != "" {
					ctx = erp.WithSubjectToken(ctx, erp.SubjectToken{Token: tok, Operation: o.name})
				}
			}
			c.r = c.r.WithContext(ctx)
		}
		return next(c)
	}
}

// accessToken is the access token the call of client, known by it, came
// with: "" for a client known by its API key.
func accessToken(r *http.Request, client *Credential) string {
	if client.Client == "" && client.Subject == "" {
		return ""
	}
	auth := r.Header.Get("Authorization")
	if len(auth) <= 7 || !strings.EqualFold(auth[:7], "bearer ") || r.Header.Get("X-API-Key") != "" {
		return ""
	}
	return strings.TrimSpace(auth[7:])
}
