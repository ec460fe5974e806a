package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/shopspring/decimal"
)

// Approval statuses as ZERPGATE_PROCESS_SRV reports them.
const (
	ApprovalApproved = "APPROVED"
	ApprovalPending  = "PENDING"
	ApprovalRejected = "REJECTED"
)

// Errors Decide returns.
var (
	// ErrNotFound says there is no approval with the given id.
	ErrNotFound = errors.New("sim: approval not found")
	// ErrNotPending says the approval was decided already.
	ErrNotPending = errors.New("sim: approval is not pending")
	// ErrInvalidDecision says the decision is neither "approve" nor "reject".
	ErrInvalidDecision = errors.New(`sim: decision must be "approve" or "reject"`)
)

type approvalBody struct {
	SupplierInvoice string
	FiscalYear      string
	ProposedAction  string
	Justification   string
	Amount          json.RawMessage // "13500.00", or a JSON number
	Currency        string
}

// createApproval is POST ApprovalSet: it routes the request by amount.
func (s *Server) createApproval(st *state, w writeRequest) (response, *apiError) {
	var b approvalBody
	if e := decodeBody(w.body, &b); e != nil {
		return response{}, e
	}
	if b.SupplierInvoice == "" {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/001", "Enter a supplier invoice")
	}
	amt, ok := parseAmount(b.Amount)
	if !ok {
		return response{}, newError(http.StatusBadRequest, "ZERPGATE/002",
			fmt.Sprintf("Amount %s is not a valid amount", b.Amount))
	}
	inv := st.invoice(b.SupplierInvoice, b.FiscalYear)
	if inv == nil {
		return response{}, newError(http.StatusNotFound, "/IWBEP/CM_MGW_RT/020",
			fmt.Sprintf("Supplier invoice %s %s does not exist", b.SupplierInvoice, b.FiscalYear))
	}
	currency := b.Currency
	if currency == "" {
		currency = inv.currency
	}
	now := s.opts.Now()
	a := &Approval{
		InvoiceID: inv.id, FiscalYear: inv.fiscalYear, ProposedAction: b.ProposedAction,
		Justification: b.Justification, Amount: amt, Currency: currency, RequestedAt: now,
		RepeatabilityID: w.repeatabilityID,
	}
	switch limit := s.opts.AutoApproveLimit; {
	case !limit.IsNegative() && amt.LessThanOrEqual(limit):
		a.Status, a.Approver, a.DecidedBy, a.DecidedAt = ApprovalApproved, "auto", "auto", now
	default:
		for _, band := range s.opts.Bands {
			if amt.LessThanOrEqual(band.Limit) {
				a.Status, a.Approver = ApprovalPending, band.Approver
				break
			}
		}
		if a.Status == "" {
			return response{}, newError(http.StatusBadRequest, "ZERPGATE/010",
				fmt.Sprintf("No approver for amount %s %s", amount(amt), currency))
		}
	}
	s.seq.approval++
	a.ApprovalID = fmt.Sprintf("A%07d", s.seq.approval)
	st.approvals = append(st.approvals, a)
	return s.created(w, "ApprovalSet", approvalRow(a)), nil
}

// parseAmount reads a non-negative amount sent as a JSON string, the
// OData v2 form for Edm.Decimal, or as a JSON number.
func parseAmount(raw json.RawMessage) (decimal.Decimal, bool) {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		text = string(raw)
	}
	d, err := decimal.NewFromString(strings.TrimSpace(text))
	if err != nil || d.IsNegative() {
		return decimal.Decimal{}, false
	}
	return d, true
}

// Decide approves or rejects a pending approval, as a person in the
// approval routing would. decision is "approve" or "reject"; approver
// names who decided and defaults to the routed role.
func (s *Server) Decide(approvalID, decision, approver string) error {
	_, err := s.decide(approvalID, decision, approver)
	return err
}

func (s *Server) decide(approvalID, decision, approver string) (Approval, error) {
	var status string
	switch strings.ToLower(decision) {
	case "approve", "approved":
		status = ApprovalApproved
	case "reject", "rejected":
		status = ApprovalRejected
	default:
		return Approval{}, ErrInvalidDecision
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.st.approval(approvalID)
	if a == nil {
		return Approval{}, ErrNotFound
	}
	if a.Status != ApprovalPending {
		return *a, ErrNotPending
	}
	if approver == "" {
		approver = a.Approver
	}
	a.Status, a.DecidedBy, a.DecidedAt = status, approver, s.opts.Now()
	return *a, nil
}

// created is a 201 answer with the new entity and its Location.
func (s *Server) created(w writeRequest, setName string, row obj) response {
	set := w.svc.sets[setName]
	e := s.render(w.svc, set, row, nil, w.base)
	resp := jsonResponse(http.StatusCreated, map[string]any{"d": e})
	resp.header.Set("Location", w.base+set.name+keyPredicate(set, row))
	return resp
}

// decodeBody reads a JSON request body into v.
func decodeBody(body []byte, v any) *apiError {
	if err := json.Unmarshal(body, v); err != nil {
		return newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/004",
			fmt.Sprintf("Malformed request body: %v", err))
	}
	return nil
}
