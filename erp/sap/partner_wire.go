package sap

import (
	"time"

	"github.com/erpgate/erpgate/erp"
)

// partnerExpand are the navigations a supplier is read with from
// A_BusinessPartner: to_Supplier has the supplier number, name, posting
// block and deletion flag (A_SupplierType), to_BusinessPartnerAddress the
// country (A_BusinessPartnerAddressType). A_Supplier itself has neither a
// country nor a navigation to its business partner.
const partnerExpand = "to_Supplier,to_BusinessPartnerAddress"

// wireBusinessPartner is an A_BusinessPartner read with
// $expand=to_Supplier,to_BusinessPartnerAddress.
type wireBusinessPartner struct {
	BusinessPartner         string                  `json:"BusinessPartner"`
	Supplier                string                  `json:"Supplier"`
	BusinessPartnerFullName string                  `json:"BusinessPartnerFullName"`
	ToSupplier              *wireSupplier           `json:"to_Supplier"`
	Addresses               *results[wireBPAddress] `json:"to_BusinessPartnerAddress"`
}

// wireSupplier is an A_Supplier, expanded into its business partner as a
// single entity (the navigation has multiplicity 0..1).
type wireSupplier struct {
	Supplier          string `json:"Supplier"`
	SupplierName      string `json:"SupplierName"`
	PostingIsBlocked  bool   `json:"PostingIsBlocked"`
	DeletionIndicator bool   `json:"DeletionIndicator"`
}

// wireBPAddress is an A_BusinessPartnerAddress.
type wireBPAddress struct {
	AddressID         string  `json:"AddressID"`
	Country           string  `json:"Country"`
	ValidityStartDate sapDate `json:"ValidityStartDate"`
	ValidityEndDate   sapDate `json:"ValidityEndDate"`
}

// toDomain converts a business partner with its supplier role. A partner
// without the expanded supplier is malformed: the posting block and the
// deletion flag must never be taken as unset because they were not read.
func (w wireBusinessPartner) toDomain(now time.Time) (erp.Supplier, error) {
	s := w.ToSupplier
	if s == nil || s.Supplier == "" {
		return erp.Supplier{}, missing("to_Supplier")
	}
	name := s.SupplierName
	if name == "" {
		name = w.BusinessPartnerFullName
	}
	return erp.Supplier{
		ID:             s.Supplier,
		Name:           name,
		Country:        w.country(now),
		PostingBlocked: s.PostingIsBlocked,
		Deleted:        s.DeletionIndicator,
	}, nil
}

// country is the country of the partner's address valid at now, else of
// its first address with a country; "" when no address has one.
func (w wireBusinessPartner) country(now time.Time) string {
	if w.Addresses == nil {
		return ""
	}
	first := ""
	for _, a := range w.Addresses.Results {
		if a.Country == "" {
			continue
		}
		if a.validAt(now) {
			return a.Country
		}
		if first == "" {
			first = a.Country
		}
	}
	return first
}

// validAt reports whether now falls within the address's validity; an
// empty bound is open.
func (a wireBPAddress) validAt(now time.Time) bool {
	if !a.ValidityStartDate.IsZero() && now.Before(a.ValidityStartDate.Time) {
		return false
	}
	return a.ValidityEndDate.IsZero() || !now.After(a.ValidityEndDate.Time)
}
