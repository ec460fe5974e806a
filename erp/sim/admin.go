package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

func adminJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func adminError(w http.ResponseWriter, status int, msg string) {
	adminJSON(w, status, map[string]string{"error": msg})
}

func readAdminBody(r *http.Request, v any) error {
	body, err := readAdminBytes(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

func readAdminBytes(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("empty body")
	}
	return body, nil
}

// adminListFaults is GET /sim/admin/faults; it answers
// {"faults": FaultStats()}.
func (s *Server) adminListFaults(w http.ResponseWriter, _ *http.Request) {
	adminJSON(w, http.StatusOK, map[string]any{"faults": s.FaultStats()})
}

// adminAddFault is POST /sim/admin/faults. The body is one rule object, an
// array of them, or with Content-Type text/plain the text form ParseFaults
// reads. The rules are added all or none, and the answer lists the rules
// in force as GET does.
func (s *Server) adminAddFault(w http.ResponseWriter, r *http.Request) {
	body, err := readAdminBytes(r)
	if err != nil {
		adminError(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	var rules []FaultRule
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "text/plain" {
		rules, err = ParseFaults(string(body))
	} else {
		rules, err = decodeFaultRules(body)
	}
	if err != nil {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.InjectFaults(rules...); err != nil {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	adminJSON(w, http.StatusOK, map[string]any{"faults": s.FaultStats()})
}

// decodeFaultRules reads one JSON rule or an array of them. Unknown fields
// are errors, so a misspelt field does not silently widen a rule; the
// counters GET answers with are accepted and ignored, so a listed rule can
// be posted back.
func decodeFaultRules(body []byte) ([]FaultRule, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var stats []FaultStat
	var err error
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		err = dec.Decode(&stats)
	} else {
		var one FaultStat
		err = dec.Decode(&one)
		stats = []FaultStat{one}
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("data after the rules")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("invalid body: %w", err)
	}
	rules := make([]FaultRule, len(stats))
	for i, st := range stats {
		rules[i] = st.FaultRule
	}
	return rules, nil
}

// adminClearFaults is DELETE /sim/admin/faults.
func (s *Server) adminClearFaults(w http.ResponseWriter, _ *http.Request) {
	s.ClearFaults()
	adminJSON(w, http.StatusOK, map[string]any{"faults": []FaultStat{}})
}

// adminExpireTokens is POST /sim/admin/csrf/expire.
func (s *Server) adminExpireTokens(w http.ResponseWriter, _ *http.Request) {
	s.ExpireTokens()
	adminJSON(w, http.StatusOK, map[string]bool{"expired": true})
}

// adminLedger is GET /sim/admin/ledger.
func (s *Server) adminLedger(w http.ResponseWriter, _ *http.Request) {
	adminJSON(w, http.StatusOK, s.Ledger())
}

// adminEnvelope is GET /sim/admin/envelope[?form=v4] and POST
// /sim/admin/envelope {"form":"v4"}; both answer the form in force.
func (s *Server) adminEnvelope(w http.ResponseWriter, r *http.Request) {
	form := r.URL.Query().Get("form")
	if r.Method == http.MethodPost {
		var b struct {
			Form string `json:"form"`
		}
		if err := readAdminBody(r, &b); err != nil {
			adminError(w, http.StatusBadRequest, "invalid body: "+err.Error())
			return
		}
		form = b.Form
		if form == "" {
			adminError(w, http.StatusBadRequest, "form is required")
			return
		}
	}
	if form != "" {
		if err := s.SetEnvelope(form); err != nil {
			adminError(w, http.StatusBadRequest, fmt.Sprintf("%v; use %q, %q or %q", err, EnvelopeV2, EnvelopeV2Detail, EnvelopeV4))
			return
		}
	}
	adminJSON(w, http.StatusOK, map[string]string{"form": s.Envelope()})
}
