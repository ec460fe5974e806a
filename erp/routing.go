package erp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/shopspring/decimal"
)

// Routing decides who approves an invoice: per company code, amounts up to
// an auto-approve limit are approved at once, and larger ones go to the
// approver group of the first band whose limit they do not exceed. Above
// every band there is no approver.
type Routing struct {
	// Default applies to every company code without rules of its own.
	Default RoutingRules `json:"default"`
	// CompanyCodes holds the rules of company codes that differ.
	CompanyCodes map[string]RoutingRules `json:"company_codes,omitempty"`
}

// RoutingRules are the rules of one company code.
type RoutingRules struct {
	// AutoApproveLimit: amounts up to it are approved at once. Zero
	// approves nothing at once.
	AutoApproveLimit decimal.Decimal `json:"auto_approve_limit"`
	// Bands in ascending order of UpTo.
	Bands []Band `json:"bands"`
}

// Band sends amounts up to UpTo to an approver group.
type Band struct {
	UpTo  decimal.Decimal `json:"up_to"`
	Group string          `json:"group"`
}

// DefaultRouting approves up to 10,000 at once, sends up to 50,000 to
// ap_manager and up to 200,000 to finance_director, in every company code.
var DefaultRouting = Routing{Default: RoutingRules{
	AutoApproveLimit: decimal.NewFromInt(10000),
	Bands: []Band{
		{UpTo: decimal.NewFromInt(50000), Group: "ap_manager"},
		{UpTo: decimal.NewFromInt(200000), Group: "finance_director"},
	},
}}

// Route returns the approver group for amount in companyCode: AutoApprover
// when it is within the auto-approve limit, and ok false when no band
// covers it.
func (r Routing) Route(companyCode string, amount decimal.Decimal) (group string, ok bool) {
	rules, found := r.CompanyCodes[companyCode]
	if !found {
		rules = r.Default
	}
	if !amount.GreaterThan(rules.AutoApproveLimit) {
		return AutoApprover, true
	}
	for _, b := range rules.Bands {
		if !amount.GreaterThan(b.UpTo) {
			return b.Group, true
		}
	}
	return "", false
}

var groupPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// Validate reports the first rule that makes no sense: a negative limit,
// bands out of order or below the auto-approve limit, a group that is not
// a lower-case name, or a company code that is not 1 to 4 letters or digits.
func (r Routing) Validate() error {
	check := func(where string, rules RoutingRules) error {
		if rules.AutoApproveLimit.IsNegative() {
			return fmt.Errorf("%s: auto_approve_limit must not be negative", where)
		}
		last := rules.AutoApproveLimit
		for i, b := range rules.Bands {
			if !b.UpTo.GreaterThan(last) {
				return fmt.Errorf("%s: band %d: up_to must be above the auto-approve limit and the band before", where, i+1)
			}
			if !groupPattern.MatchString(b.Group) || b.Group == AutoApprover {
				return fmt.Errorf("%s: band %d: group must be a lower-case name such as ap_manager", where, i+1)
			}
			last = b.UpTo
		}
		return nil
	}
	if err := check("default", r.Default); err != nil {
		return err
	}
	codes := make([]string, 0, len(r.CompanyCodes))
	for cc := range r.CompanyCodes {
		codes = append(codes, cc)
	}
	slices.Sort(codes)
	for _, cc := range codes {
		if !companyCodePattern.MatchString(cc) {
			return fmt.Errorf("company code %q must be 1 to 4 letters or digits", cc)
		}
		if err := check("company code "+cc, r.CompanyCodes[cc]); err != nil {
			return err
		}
	}
	return nil
}

var companyCodePattern = regexp.MustCompile(`^[A-Z0-9]{1,4}$`)

// ParseRouting reads routing rules from JSON, refusing unknown fields, and
// validates them.
func ParseRouting(data []byte) (Routing, error) {
	var r Routing
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Routing{}, fmt.Errorf("routing rules: %w", err)
	}
	if dec.More() {
		return Routing{}, errors.New("routing rules: more than one JSON value")
	}
	if err := r.Validate(); err != nil {
		return Routing{}, fmt.Errorf("routing rules: %w", err)
	}
	return r, nil
}
