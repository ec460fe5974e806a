package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
)

func handleGetSupplier(suppliers erp.Suppliers) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id := chi.URLParam(r, "supplier_id")
		if err := checkID("supplier_id", id, supplierIDPattern, "1 to 10 letters or digits, e.g. 100042"); err != nil {
			return nil, err
		}
		s, err := suppliers.Supplier(r.Context(), alpha(id))
		if err != nil {
			return nil, err
		}
		return toSupplier(s), nil
	}
}

// Search limits.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 50
)

func handleSearchSuppliers(suppliers erp.Suppliers) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		q := r.URL.Query()
		for k := range q {
			if k != "name" && k != "limit" && k != "run_id" {
				if fieldNamePattern.MatchString(k) {
					return nil, errmap.Invalid(k, "is not a parameter of search_suppliers")
				}
				return nil, errmap.Invalid("query", "holds a parameter search_suppliers does not know")
			}
		}
		name := strings.TrimSpace(q.Get("name"))
		if err := checkText("name", name, 2, 80); err != nil {
			return nil, err
		}
		limit := defaultSearchLimit
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 || n > maxSearchLimit {
				return nil, errmap.Invalid("limit", "must be a whole number from 1 to 50")
			}
			limit = n
		}
		found, err := suppliers.SearchSuppliers(r.Context(), name, limit)
		if err != nil {
			return nil, err
		}
		out := supplierSearchResponse{Found: len(found) > 0, Query: name, Suppliers: make([]supplierResponse, 0, len(found))}
		for _, s := range found {
			out.Suppliers = append(out.Suppliers, toSupplier(s))
		}
		return out, nil
	}
}
