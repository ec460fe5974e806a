package sim

import (
	"fmt"
	"net/http"
)

// release is the Release function import: it releases a posted invoice
// blocked for payment, lifting its payment block. Its parameter
// DiscountDaysHaveToBeShifted is required and checked; it changes nothing
// here, as the simulator keeps no payment terms. An invoice that is not
// posted or has no payment block is refused with M8/382, the message SAP
// documents for releasing an invoice not blocked for payment.
func (s *Server) release(st *state, w writeRequest) (response, *apiError) {
	args, err := parseArgs(w.svc.name, "Release", w)
	if err != nil {
		return response{}, err
	}
	id, fy := args.strings["SupplierInvoice"], args.strings["FiscalYear"]
	inv := st.invoice(id, fy)
	if inv == nil {
		return response{}, newError(http.StatusNotFound, "/IWBEP/CM_MGW_RT/020",
			fmt.Sprintf("Supplier invoice %s %s does not exist", id, fy))
	}
	if inv.status != statusPosted || inv.block == "" {
		return response{}, newError(http.StatusBadRequest, "M8/382",
			fmt.Sprintf("Invoice %s %s is not blocked for payment", inv.id, inv.fiscalYear))
	}
	inv.block = ""
	return jsonResponse(http.StatusOK, successBody(w.svc.name, "Release")), nil
}
