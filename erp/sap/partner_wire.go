package sap

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"

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
	// bad is why the partner's JSON cannot be read, keeping its key.
	bad *erp.DataError
}

// UnmarshalJSON reads a business partner leniently: JSON that does not fit
// its types leaves it bad, with its key, instead of failing the answer.
func (w *wireBusinessPartner) UnmarshalJSON(data []byte) error {
	type plain wireBusinessPartner
	if err := unmarshal(data, (*plain)(w)); err != nil {
		if !isObject(data) {
			return err
		}
		var k struct{ BusinessPartner, Supplier jsontext.Value }
		_ = unmarshal(data, &k)
		*w = wireBusinessPartner{BusinessPartner: keyText(k.BusinessPartner), Supplier: keyText(k.Supplier)}
		w.bad = w.invalid(err)
	}
	return nil
}

// invalid is the DataError of a partner that cannot be read because of
// err.
func (w *wireBusinessPartner) invalid(err error) *erp.DataError {
	return &erp.DataError{Service: erp.ServiceBusinessPartner, Entity: erp.EntitySupplier,
		Key: recordKey("BusinessPartner", w.BusinessPartner), Err: err}
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
// that cannot be read is an *erp.DataError, and so is one without the
// expanded supplier: the posting block and the deletion flag must never
// be taken as unset because they were not read.
func (w wireBusinessPartner) toDomain(now time.Time) (erp.Supplier, error) {
	if w.bad != nil {
		return erp.Supplier{}, w.bad
	}
	s := w.ToSupplier
	if s == nil || s.Supplier == "" {
		return erp.Supplier{}, w.invalid(missing("to_Supplier"))
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
