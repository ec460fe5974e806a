package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/erpgate/erpgate/erp"
)

type approvalReader interface {
	Approval(ctx context.Context, id string) (erp.Approval, error)
}

func handleGetApproval(approvals approvalReader) operationFunc {
	return func(r *http.Request, _ []byte) (any, error) {
		id := chi.URLParam(r, "approval_id")
		if err := checkID("approval_id", id, approvalIDPattern, "the approval_id returned by request_approval"); err != nil {
			return nil, err
		}
		a, err := approvals.Approval(r.Context(), id)
		if err != nil {
			return nil, err
		}
		// An approval sent back is a question for the agent, not a status
		// to read: APPROVAL_SENT_BACK, with the question in its details.
		if err := a.SentBack(); err != nil {
			return nil, err
		}
		return toApproval(a), nil
	}
}
