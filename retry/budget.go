package retry

import (
	"sync"
)

// BudgetSettings configures the retry budget: a token bucket per ERP
// service, in the style of the AWS SDK's retry quota. Every call deposits
// Deposit tokens, every retry costs Cost, and a retry without the tokens is
// not made. At the defaults retries stay under a tenth of calls once the
// initial Capacity is spent, so a brown-out never multiplies the ERP's load.
type BudgetSettings struct {
	// Disabled turns the budget off: every retry the policy allows is made.
	Disabled bool
	// Capacity is the bucket's size and its initial fill. Default 10.
	Capacity float64
	// Deposit is what each call adds. Default 0.1.
	Deposit float64
	// Cost is what each retry takes. Default 1.
	Cost float64
}

func (s BudgetSettings) withDefaults() BudgetSettings {
	if s.Capacity <= 0 {
		s.Capacity = 10
	}
	if s.Deposit <= 0 {
		s.Deposit = 0.1
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
	s  BudgetSettings
	mu sync.Mutex
	m  map[Service]*bucket
}

func newBudgets(s BudgetSettings) *budgets {
	return &budgets{s: s, m: map[Service]*bucket{}}
}

func (bs *budgets) get(svc Service) *bucket {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.m[svc]
	if !ok {
		b = &bucket{s: bs.s, tokens: bs.s.Capacity}
		bs.m[svc] = b
	}
	return b
}
