package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type holdBody struct {
	SupplierInvoice string
	FiscalYear      string
	Reason          string
	RecheckAt       string
}

// createHold is POST HoldSet: it blocks the parked invoice for payment
// until a person re-checks it.
func (s *Server) createHold(st *state, w writeRequest) (response, *apiError) {
	var b holdBody
	if e := decodeBody(w.body, &b); e != nil {
		return response{}, e
	}
	if b.SupplierInvoice == "" {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/001", "Enter a supplier invoice")
	}
	recheck, err := parseWireDate(b.RecheckAt)
	if err != nil {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/003",
			fmt.Sprintf("Re-check time '%s' is not a valid date", b.RecheckAt))
	}
	inv := st.invoice(b.SupplierInvoice, b.FiscalYear)
	if inv == nil {
		return response{}, newError(http.StatusNotFound, "/IWBEP/CM_MGW_RT/020",
			fmt.Sprintf("Supplier invoice %s %s does not exist", b.SupplierInvoice, b.FiscalYear))
	}
	if inv.status == statusPosted {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/030",
			fmt.Sprintf("Invoice %s %s is not parked; it has already been posted", inv.id, inv.fiscalYear))
	}
	inv.status, inv.block = statusHeld, blockHold
	s.seq.hold++
	h := &Hold{
		HoldID: fmt.Sprintf("H%07d", s.seq.hold), InvoiceID: inv.id, FiscalYear: inv.fiscalYear,
		Reason: b.Reason, Status: HoldHeld, RecheckAt: recheck, CreatedAt: s.opts.Now(), RepeatabilityID: w.repeatabilityID,
	}
	st.holds = append(st.holds, h)
	return s.created(w, "HoldSet", holdRow(h)), nil
}

// releaseHold is the ReleaseHold function import: it ends the hold and,
// when no other hold on the invoice is still in force, puts a held invoice
// back to parked and lifts the hold's payment block. A hold released before
// is answered as if released now, so repeating the call is harmless.
func (s *Server) releaseHold(st *state, w writeRequest) (response, *apiError) {
	id, e := functionParam(w, "HoldID")
	if e != nil {
		return response{}, e
	}
	h := st.hold(id)
	if h == nil {
		return response{}, newError(http.StatusNotFound, "/IWBEP/CM_MGW_RT/020",
			fmt.Sprintf("Hold %s does not exist", id))
	}
	inv := st.invoice(h.InvoiceID, h.FiscalYear)
	if h.Status != HoldReleased {
		h.Status, h.ReleasedAt = HoldReleased, s.opts.Now()
		if inv != nil && !st.heldByOther(h) {
			if inv.status == statusHeld {
				inv.status = statusParked
			}
			if inv.block == blockHold {
				inv.block = ""
			}
		}
	}
	invStatus := statusParked
	if inv != nil {
		invStatus = inv.status
	}
	return jsonResponse(http.StatusOK, map[string]any{"d": map[string]any{"ReleaseHold": obj{
		{"HoldID", h.HoldID},
		{"SupplierInvoice", h.InvoiceID},
		{"FiscalYear", h.FiscalYear},
		{"Status", h.Status},
		{"SupplierInvoiceStatus", invStatus},
	}}}), nil
}

func (st *state) hold(id string) *Hold {
	for _, h := range st.holds {
		if h.HoldID == id {
			return h
		}
	}
	return nil
}

// heldByOther reports whether another hold on h's invoice is in force.
func (st *state) heldByOther(h *Hold) bool {
	for _, o := range st.holds {
		if o != h && o.Status == HoldHeld && o.InvoiceID == h.InvoiceID && o.FiscalYear == h.FiscalYear {
			return true
		}
	}
	return false
}

type handoverBody struct {
	SupplierInvoice string
	Queue           string
	Code            string
	Summary         string
	Evidence        json.RawMessage
	History         string
}

// createHandover is POST HandoverSet: it queues the invoice for a person
// with the evidence gathered so far.
func (s *Server) createHandover(st *state, w writeRequest) (response, *apiError) {
	var b handoverBody
	if e := decodeBody(w.body, &b); e != nil {
		return response{}, e
	}
	if b.SupplierInvoice == "" {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/001", "Enter a supplier invoice")
	}
	if strings.TrimSpace(b.Queue) == "" {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/004", "Enter a queue for the handover")
	}
	evidence, err := parseEvidence(b.Evidence)
	if err != nil {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/005",
			fmt.Sprintf("Evidence must be a JSON array of strings: %v", err))
	}
	s.seq.handover++
	h := &Handover{
		HandoverID: fmt.Sprintf("HO%07d", s.seq.handover), InvoiceID: b.SupplierInvoice, Queue: b.Queue,
		Code: b.Code, Summary: b.Summary, Evidence: evidence, History: b.History, Status: "QUEUED",
		CreatedAt: s.opts.Now(), RepeatabilityID: w.repeatabilityID,
	}
	st.handovers = append(st.handovers, h)
	return s.created(w, "HandoverSet", handoverRow(h)), nil
}

// parseEvidence accepts the evidence as a JSON array of strings or, as an
// OData v2 string property can only carry it, as a string holding that
// array.
func parseEvidence(raw json.RawMessage) ([]string, error) {
	out := []string{}
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err == nil {
		return out, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, err
	}
	if strings.TrimSpace(text) == "" {
		return []string{}, nil
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, err
	}
	return out, nil
}
