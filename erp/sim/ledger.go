package sim

import (
	"time"

	"github.com/shopspring/decimal"
)

// Ledger is a snapshot of the writes the simulator has applied since New, in
// the order they happened.
type Ledger struct {
	Postings  []Posting  `json:"postings"`
	Holds     []Hold     `json:"holds"`
	Handovers []Handover `json:"handovers"`
	Approvals []Approval `json:"approvals"`
}

// Posting records one Release that posted an invoice.
type Posting struct {
	InvoiceID       string    `json:"invoice_id"`
	FiscalYear      string    `json:"fiscal_year"`
	PostedAt        time.Time `json:"posted_at"`
	PaymentBlock    string    `json:"payment_block"`
	RepeatabilityID string    `json:"repeatability_id"`
}

// Hold records one hold placed on an invoice and, once it ended, when.
type Hold struct {
	HoldID          string    `json:"hold_id"`
	InvoiceID       string    `json:"invoice_id"`
	FiscalYear      string    `json:"fiscal_year"`
	Reason          string    `json:"reason"`
	Status          string    `json:"status"` // HoldHeld or HoldReleased
	RecheckAt       time.Time `json:"recheck_at"`
	CreatedAt       time.Time `json:"created_at"`
	ReleasedAt      time.Time `json:"released_at,omitzero"`
	RepeatabilityID string    `json:"repeatability_id"`
}

// Hold statuses as ZERPGATE_PROCESS_SRV reports them.
const (
	HoldHeld     = "HELD"
	HoldReleased = "RELEASED"
)

// Handover records one handover delivered to a queue, with its evidence.
type Handover struct {
	HandoverID      string    `json:"handover_id"`
	InvoiceID       string    `json:"invoice_id"`
	Queue           string    `json:"queue"`
	Code            string    `json:"code"`
	Summary         string    `json:"summary"`
	Evidence        []string  `json:"evidence"`
	History         string    `json:"history,omitempty"` // the run's history the gateway attached, as JSON
	Status          string    `json:"status"`
	CreatedAt       time.Time `json:"created_at"`
	RepeatabilityID string    `json:"repeatability_id"`
}

// Approval is the approval routing's record of one request and its decision.
type Approval struct {
	ApprovalID      string          `json:"approval_id"`
	InvoiceID       string          `json:"invoice_id"`
	FiscalYear      string          `json:"fiscal_year"`
	Status          string          `json:"status"`   // APPROVED, PENDING or REJECTED
	Approver        string          `json:"approver"` // the role the routing chose
	DecidedBy       string          `json:"decided_by"`
	ProposedAction  string          `json:"proposed_action"`
	Justification   string          `json:"justification"`
	Amount          decimal.Decimal `json:"amount"`
	Currency        string          `json:"currency"`
	RequestedAt     time.Time       `json:"requested_at"`
	DecidedAt       time.Time       `json:"decided_at,omitzero"`
	RepeatabilityID string          `json:"repeatability_id"`
}

// Ledger returns a copy of the postings, holds, handovers and approvals made
// since New.
func (s *Server) Ledger() Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledgerLocked()
}

func (s *Server) ledgerLocked() Ledger {
	l := Ledger{
		Postings:  make([]Posting, 0, len(s.st.postings)),
		Holds:     make([]Hold, 0, len(s.st.holds)),
		Handovers: make([]Handover, 0, len(s.st.handovers)),
		Approvals: make([]Approval, 0, len(s.st.approvals)),
	}
	for _, p := range s.st.postings {
		l.Postings = append(l.Postings, *p)
	}
	for _, h := range s.st.holds {
		l.Holds = append(l.Holds, *h)
	}
	for _, h := range s.st.handovers {
		c := *h
		c.Evidence = append([]string{}, h.Evidence...)
		l.Handovers = append(l.Handovers, c)
	}
	for _, a := range s.st.approvals {
		l.Approvals = append(l.Approvals, *a)
	}
	return l
}
