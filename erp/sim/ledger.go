package sim

import "time"

// Ledger is a snapshot of the writes the simulator has applied since New, in
// the order they happened: what SAP itself records, the postings.
type Ledger struct {
	Postings []Posting `json:"postings"`
}

// Posting records one Post that posted an invoice.
type Posting struct {
	InvoiceID    string    `json:"invoice_id"`
	FiscalYear   string    `json:"fiscal_year"`
	PostedAt     time.Time `json:"posted_at"`
	PaymentBlock string    `json:"payment_block"`
}

// Ledger returns a copy of the postings made since New.
func (s *Server) Ledger() Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ledgerLocked()
}

func (s *Server) ledgerLocked() Ledger {
	l := Ledger{Postings: make([]Posting, 0, len(s.st.postings))}
	for _, p := range s.st.postings {
		l.Postings = append(l.Postings, *p)
	}
	return l
}
