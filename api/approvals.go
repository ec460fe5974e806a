package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp"
)

func handleGetApproval(approvals erp.Approvals) opFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id := chi.URLParam(r, "approval_id")
		if err := checkID("approval_id", id, approvalIDPattern, "the approval_id returned by request_approval"); err != nil {
			return nil, err
		}
		a, err := approvals.Approval(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return toApproval(a), nil
	}
}
