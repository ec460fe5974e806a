package sap

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// Supplier returns the supplier master record, or a *erp.NotFoundError.
// A partner that cannot be read is an *erp.DataError inside the
// *erp.UpstreamError, never an unknown supplier.
//
// The record is read from the supplier's business partner, filtered on its
// Supplier property and expanded to the supplier role and the addresses:
// the country is on the partner's address, not on A_Supplier, and A_Supplier
// has no navigation to its partner. The filter finds the partner whether or
// not the system numbers partners and suppliers alike; no partner is an
// unknown supplier.
func (c *Client) Supplier(ctx context.Context, id string) (erp.Supplier, error) {
	r := request{
		call:   retry.Call{Service: erp.ServiceBusinessPartner, Operation: "read supplier"},
		method: http.MethodGet,
		url: c.url(erp.ServiceBusinessPartner, "A_BusinessPartner",
			param{"$filter", "Supplier eq " + literal(id)},
			param{"$expand", partnerExpand}),
		keys: map[string]string{"supplier_id": id},
	}
	now := time.Now()
	// A partner of another supplier is the ERP's fault, not an unknown
	// supplier (see otherDocument).
	list, err := fetchList(ctx, c, r, func(w wireBusinessPartner) (erp.Supplier, error) {
		s, err := w.toDomain(now)
		if err == nil {
			err = errors.Join(askedIfSet("supplier", w.Supplier, id), asked("supplier", s.ID, id))
		}
		return s, err
	})
	if err != nil {
		return erp.Supplier{}, err
	}
	if len(list) == 0 {
		return erp.Supplier{}, &erp.NotFoundError{Entity: erp.EntitySupplier, ID: id}
	}
	return list[0], nil
}

// SearchSuppliers returns at most limit suppliers whose business partner's
// search term 1 contains name in upper case (all matches when limit is not
// positive); an empty slice when none match.
//
// SAP Gateway compares substringof case-sensitively, and names are kept as
// entered, so a search over the name would miss "Acme" for "acme". SAP
// keeps SearchTerm1 in upper case (sap:display-format="UpperCase"), so the
// upper-cased text matches whatever case it was typed in. Only partners
// with a supplier role are asked for; customers share A_BusinessPartner.
// A partner that cannot be read, or has no supplier role, is skipped and
// logged with its key, unless no partner of the answer can be read: then
// the answer is an *erp.DataError, never "no match".
func (c *Client) SearchSuppliers(ctx context.Context, name string, limit int) ([]erp.Supplier, error) {
	params := []param{
		{"$filter", "substringof(" + literal(strings.ToUpper(name)) + ",SearchTerm1) eq true and Supplier ne ''"},
		{"$expand", partnerExpand},
	}
	if limit > 0 {
		params = append(params, param{"$top", strconv.Itoa(limit)})
	}
	r := request{
		call:   retry.Call{Service: erp.ServiceBusinessPartner, Operation: "search suppliers"},
		method: http.MethodGet,
		url:    c.url(erp.ServiceBusinessPartner, "A_BusinessPartner", params...),
	}
	now := time.Now()
	odd := skipped{c: c, r: r}
	found, err := fetchList(ctx, c, r, func(w wireBusinessPartner) (*erp.Supplier, error) {
		s, err := w.toDomain(now)
		if de, ok := errors.AsType[*erp.DataError](err); ok {
			odd.skip(ctx, de)
			return nil, nil
		}
		return &s, err
	})
	if err != nil {
		return nil, err
	}
	list := make([]erp.Supplier, 0, len(found))
	for _, s := range found {
		if s != nil {
			list = append(list, *s)
		}
	}
	if err := odd.onlyOdd(len(list)); err != nil {
		return nil, err
	}
	if limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	return list, nil
}
