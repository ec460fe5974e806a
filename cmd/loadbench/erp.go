package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	erpgate "github.com/erpgate/erpgate/cmd/internal/gateway"
	"github.com/erpgate/erpgate/erp"
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
func erpCalls(ctx context.Context, erpURL string, op func(context.Context, *erpgate.Gateway) error) (_ []string, err error) {
	rec := &recorder{base: http.DefaultTransport}
	gw, err := erpgate.New(ctx, erpgate.Config{ERPURL: erpURL, ERPHTTPClient: &http.Client{Transport: rec}, SkipMetadata: true})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, gw.Close()) }()
	if err := op(ctx, gw); err != nil {
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

func readInvoice(id string) func(context.Context, *erpgate.Gateway) error {
	return func(ctx context.Context, gw *erpgate.Gateway) error {
		_, err := gw.ERP().Invoice(ctx, id)
		return err
	}
}

// threeWayMatch matches the invoice as the gateway does, with the
// gateway's ERP client and records.
func threeWayMatch(ctx context.Context, gw *erpgate.Gateway) error {
	res, err := erp.NewProcess(gw.ERP(), erp.ProcessOptions{Records: gw.Records()}).ThreeWayMatch(ctx, invoiceID)
	if err != nil {
		return err
	}
	if res.Status != erp.Matched {
		return fmt.Errorf("invoice %s: three-way match %s, want %s", invoiceID, res.Status, erp.Matched)
	}
	return nil
}

// readMissing reads the unknown invoice and expects not found.
func readMissing(ctx context.Context, gw *erpgate.Gateway) error {
	_, err := gw.ERP().Invoice(ctx, missingInvoiceID)
	if _, ok := err.(*erp.NotFoundError); !ok {
		return fmt.Errorf("invoice %s: got %v, want not found", missingInvoiceID, err)
	}
	return nil
}
