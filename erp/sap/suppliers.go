package sap

import (
	"context"
	"net/http"
	"strconv"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// Supplier returns the supplier master record, or a *erp.NotFoundError.
func (c *Client) Supplier(ctx context.Context, id string) (erp.Supplier, error) {
	r := request{
		call:     retry.Call{Service: erp.ServiceBusinessPartner, Operation: "read supplier"},
		method:   http.MethodGet,
		url:      c.url(erp.ServiceBusinessPartner, entityKey("A_Supplier", id)),
		keys:     map[string]string{"supplier_id": id},
		notFound: &erp.NotFoundError{Entity: erp.EntitySupplier, ID: id},
	}
	return fetchEntity(ctx, c, r, wireSupplier.toDomain)
}

// SearchSuppliers returns at most limit suppliers whose name contains name
// (all matches when limit is not positive); an empty slice when none match.
func (c *Client) SearchSuppliers(ctx context.Context, name string, limit int) ([]erp.Supplier, error) {
	params := []param{{"$filter", "substringof(" + literal(name) + ",SupplierName) eq true"}}
	if limit > 0 {
		params = append(params, param{"$top", strconv.Itoa(limit)})
	}
	r := request{
		call:   retry.Call{Service: erp.ServiceBusinessPartner, Operation: "search suppliers"},
		method: http.MethodGet,
		url:    c.url(erp.ServiceBusinessPartner, "A_Supplier", params...),
	}
	list, err := fetchList(ctx, c, r, wireSupplier.toDomain)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	return list, nil
}
