package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/erp/sap"
)

// The documents every hit is about: a parked invoice that matches its
// purchase order and goods receipt, and an invoice id the ERP does not
// know.
const (
	invoiceID        = "5105600101"
	missingInvoiceID = "5105600999"
)

// recorder is a RoundTripper that notes the requests it forwards.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []string // "METHOD path?query"
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.RequestURI())
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

// erpCalls returns the OData requests (paths with their query) the gateway's
// SAP client makes for op against the ERP at erpURL: the reads a client
// without the gateway would have to make itself.
func erpCalls(ctx context.Context, erpURL string, op func(context.Context, *sap.Client) error) ([]string, error) {
	rec := &recorder{base: http.DefaultTransport}
	client, err := sap.New(erpURL, sap.Options{HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		return nil, err
	}
	if err := op(ctx, client); err != nil {
		return nil, err
	}
	var paths []string
	for _, r := range rec.reqs {
		method, path, _ := strings.Cut(r, " ")
		if method != http.MethodGet {
			return nil, fmt.Errorf("the operation sends %s; only reads can be replayed", r)
		}
		paths = append(paths, path)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("the operation sent no request")
	}
	return paths, nil
}

func readInvoice(id string) func(context.Context, *sap.Client) error {
	return func(ctx context.Context, c *sap.Client) error {
		_, err := c.Invoice(ctx, id)
		return err
	}
}

// threeWayMatch matches the invoice as the gateway does. The match reads
// only the ERP; the process still needs a records store, so a temporary one
// is opened for the call.
func threeWayMatch(ctx context.Context, c *sap.Client) (err error) {
	store, err := records.OpenTemp(ctx, records.Options{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	res, err := erp.NewProcess(c, erp.ProcessOptions{Records: store}).ThreeWayMatch(ctx, invoiceID)
	if err != nil {
		return err
	}
	if res.Status != erp.Matched {
		return fmt.Errorf("invoice %s: three-way match %s, want %s", invoiceID, res.Status, erp.Matched)
	}
	return nil
}

// readMissing reads the unknown invoice and expects not found.
func readMissing(ctx context.Context, c *sap.Client) error {
	_, err := c.Invoice(ctx, missingInvoiceID)
	if _, ok := err.(*erp.NotFoundError); !ok {
		return fmt.Errorf("invoice %s: got %v, want not found", missingInvoiceID, err)
	}
	return nil
}
