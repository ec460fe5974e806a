package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return errors.New("empty body")
	}
	return json.Unmarshal(body, v)
}

// adminDecision is POST /sim/admin/approvals/{id}/decision.
func (s *Server) adminDecision(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Decision string `json:"decision"`
		Approver string `json:"approver"`
	}
	if err := readAdminBody(r, &b); err != nil {
		adminError(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	a, err := s.decide(r.PathValue("id"), b.Decision, b.Approver)
	switch {
	case errors.Is(err, ErrInvalidDecision):
		adminError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrNotFound):
		adminError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, ErrNotPending):
		adminJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "approval": a})
	case err != nil:
		adminError(w, http.StatusInternalServerError, err.Error())
	default:
		adminJSON(w, http.StatusOK, a)
	}
}

// adminListFaults is GET /sim/admin/faults.
func (s *Server) adminListFaults(w http.ResponseWriter, _ *http.Request) {
	adminJSON(w, http.StatusOK, map[string]any{"faults": s.Faults()})
}

// adminAddFault is POST /sim/admin/faults.
func (s *Server) adminAddFault(w http.ResponseWriter, r *http.Request) {
	var rule FaultRule
	if err := readAdminBody(r, &rule); err != nil {
		adminError(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	if err := s.InjectFault(rule); err != nil {
		adminError(w, http.StatusBadRequest, err.Error())
		return
	}
	adminJSON(w, http.StatusOK, map[string]any{"faults": s.Faults()})
}

// adminClearFaults is DELETE /sim/admin/faults.
func (s *Server) adminClearFaults(w http.ResponseWriter, _ *http.Request) {
	s.ClearFaults()
	adminJSON(w, http.StatusOK, map[string]any{"faults": []FaultRule{}})
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
