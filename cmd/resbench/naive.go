package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/erpgate/erpgate/retry"
)

// poPath is the OData request the gateway makes to read the purchase order.
const poPath = odataPrefix + "sap/API_PURCHASEORDER_PROCESS_SRV/A_PurchaseOrder('" + poID + "')?$expand=to_PurchaseOrderItem"

// naive reads the purchase order straight from the ERP with
// go-retryablehttp at its defaults: the agent as its own retry engine.
type naive struct {
	url string
	rc  *retryablehttp.Client
}

// startNaive returns a fresh default retryablehttp client for the ERP at
// erpURL, without its logger.
func startNaive(erpURL string, _ int, _ retry.QuotaSettings) (client, error) {
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	return &naive{url: erpURL + poPath, rc: rc}, nil
}

// get reads the purchase order from the ERP.
func (n *naive) get(ctx context.Context) answer {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, n.url, nil)
	if err != nil {
		return answer{outcome: failure, code: "BAD_REQUEST"}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := n.rc.Do(req)
	if err != nil {
		return unanswered(ctx)
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	switch {
	case err != nil:
		return unanswered(ctx)
	case resp.StatusCode == http.StatusOK:
		return answer{outcome: success}
	}
	return answer{outcome: failure, code: fmt.Sprintf("HTTP_%d", resp.StatusCode)}
}

// openings reports that the naive client has no breaker.
func (n *naive) openings() ([]time.Time, bool) { return nil, false }

// close drops the client's connections.
func (n *naive) close() { n.rc.HTTPClient.CloseIdleConnections() }
