package sap

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// The function imports of API_SUPPLIERINVOICE_PROCESS_SRV the client calls,
// as SAP's $metadata declares them: each a POST whose parameters go in the
// query as literals of their declared types.
//
//	Post(SupplierInvoice Edm.String(10), FiscalYear Edm.String(4))
//	    returns PostInvoiceExportParameters
//	Release(SupplierInvoice Edm.String(10), FiscalYear Edm.String(4),
//	        DiscountDaysHaveToBeShifted Edm.Boolean)
//	    returns ReleaseInvoiceExportParameters
const (
	functionPost    = "Post"
	functionRelease = "Release"
)

// wireSuccess is PostInvoiceExportParameters and
// ReleaseInvoiceExportParameters alike: the one property Success, an
// Edm.Boolean declared not nullable.
type wireSuccess struct {
	Success *bool `json:"Success"`
}

// decodeSuccess reads the result of the function import name:
// {"d":{"<name>":{"Success":true}}}, the form SAP's API description gives
// for it, or the complex value directly in "d". A result without Success
// is malformed.
func decodeSuccess(body []byte, name string) (bool, error) {
	var d map[string]jsontext.Value
	if err := decodeEntity(body, &d); err != nil {
		return false, err
	}
	var w wireSuccess
	var err error
	if inner, ok := d[name]; ok {
		if inner = bytes.TrimSpace(inner); len(inner) == 0 || inner[0] != '{' {
			return false, missing(name)
		}
		err = unmarshal(inner, &w)
	} else {
		err = decodeEntity(body, &w)
	}
	if err != nil {
		return false, err
	}
	if w.Success == nil {
		return false, missing("Success")
	}
	return *w.Success, nil
}
