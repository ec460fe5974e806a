package retry

import (
	"sync"
)

// BudgetSettings configures the retry budget: a token bucket per ERP
// service, in the style of the AWS SDK's retry quota. Every call deposits
// Deposit tokens, every retry costs Cost, and a retry without the tokens is
// not made. So n calls make at most n*(1+Deposit/Cost)+Initial/Cost
// attempts, whatever the failure rate: at the defaults at most 1.25 per
// call once 250 calls were made, and a brown-out never multiplies the
// ERP's load.
type BudgetSettings struct {
	// Disabled turns the budget off: every retry the policy allows is made.
	Disabled bool
	// Capacity is the bucket's size: the retries saved up for a burst of
	// failures, such as many concurrent callers failing at once. Default
	// 100.
	Capacity float64
	// Initial is the bucket's fill when the service is first called, at
	// most Capacity. Default 5: a gateway that just started saves up the
	// rest before it may retry more than Deposit of its calls.
	Initial float64
	// Deposit is what each call adds. Default 0.23: nearly every retry of
	// a 20 % brown-out (0.2 per call, and 0.04 for the second retries),
	// and with Initial at most 1.25 attempts per call after 250 calls.
	Deposit float64
	// Cost is what each retry takes. Default 1.
	Cost float64
}

func (s BudgetSettings) withDefaults() BudgetSettings {
	if s.Capacity <= 0 {
		s.Capacity = 100
	}
	if s.Initial <= 0 {
		s.Initial = 5
	}
	s.Initial = min(s.Initial, s.Capacity)
	if s.Deposit <= 0 {
		s.Deposit = 0.23
	}
	if s.Cost <= 0 {
		s.Cost = 1
	}
	return s
}

type bucket struct {
	s      BudgetSettings
	mu     sync.Mutex
	tokens float64
}

func (b *bucket) deposit() {
	b.mu.Lock()
	b.tokens = min(b.s.Capacity, b.tokens+b.s.Deposit)
	b.mu.Unlock()
}

func (b *bucket) withdraw() bool {
	if b.s.Disabled {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < b.s.Cost {
		return false
	}
	b.tokens -= b.s.Cost
	return true
}

type budgets struct {
	s BudgetSettings
	m sync.Map // Service -> *bucket
}

func newBudgets(s BudgetSettings) *budgets {
	return &budgets{s: s}
}

func (bs *budgets) get(svc Service) *bucket {
	if b, ok := bs.m.Load(svc); ok {
		return b.(*bucket)
	}
	b, _ := bs.m.LoadOrStore(svc, &bucket{s: bs.s, tokens: bs.s.Initial})
	return b.(*bucket)
}
