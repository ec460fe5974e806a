package sap

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

const invoiceExpand = "to_SuplrInvcItemPurOrdRef"

// Invoice returns the supplier invoice with its purchase order references,
// or a *erp.NotFoundError. It filters by id, so the fiscal year need not be
// known; should the id exist in several fiscal years, the latest wins.
func (c *Client) Invoice(ctx context.Context, id string) (erp.Invoice, error) {
	r := request{
		call:   retry.Call{Service: erp.ServiceSupplierInvoice, Operation: "read invoice"},
		method: http.MethodGet,
		url: c.url(erp.ServiceSupplierInvoice, "A_SupplierInvoice",
			param{"$filter", "SupplierInvoice eq " + literal(id)},
			param{"$expand", invoiceExpand}),
		keys: map[string]string{"invoice_id": id},
	}
	list, err := fetchList(ctx, c, r, wireInvoice.toDomain)
	if err != nil {
		return erp.Invoice{}, err
	}
	if len(list) == 0 {
		return erp.Invoice{}, &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id}
	}
	return slices.MaxFunc(list, func(a, b erp.Invoice) int { return cmp.Compare(a.FiscalYear, b.FiscalYear) }), nil
}

// InvoicesBySupplierRef returns the invoices the supplier sent under its own
// invoice number supplierRef; an empty slice when there are none.
func (c *Client) InvoicesBySupplierRef(ctx context.Context, supplierID, supplierRef string) ([]erp.Invoice, error) {
	r := request{
		call:   retry.Call{Service: erp.ServiceSupplierInvoice, Operation: "read invoices by supplier reference"},
		method: http.MethodGet,
		url: c.url(erp.ServiceSupplierInvoice, "A_SupplierInvoice",
			param{"$filter", "InvoicingParty eq " + literal(supplierID) +
				" and SupplierInvoiceIDByInvcgParty eq " + literal(supplierRef)},
			param{"$expand", invoiceExpand}),
		keys: map[string]string{"supplier_id": supplierID},
	}
	return fetchList(ctx, c, r, wireInvoice.toDomain)
}

// msgAlreadyPosted is SAP's answer to a Release of an invoice that is
// posted already.
const msgAlreadyPosted = "M8/255"

// PostInvoice releases the parked invoice with the Release function import.
// The invoice's ID and FiscalYear are used; without a fiscal year the
// invoice is read first to learn it. A non-empty idempotencyKey is sent as
// a Repeatability-Request-ID derived from it, so that a repeated call is
// answered with the first call's result. Warnings from the sap-message
// header come back in Posting.Messages.
//
// An invoice the ERP reports as posted already (M8/255, as when another
// call posted it first) is settled, not a failure: the Posting comes back
// with AlreadyPosted set.
func (c *Client) PostInvoice(ctx context.Context, inv erp.Invoice, idempotencyKey string) (erp.Posting, error) {
	fy, err := c.fiscalYear(ctx, inv.ID, inv.FiscalYear)
	if err != nil {
		return erp.Posting{}, err
	}
	const op = "release invoice"
	// A Release whose answer was lost is settled by reading the invoice
	// before anything is repeated.
	var settled *erp.Invoice
	reconcile := func(ctx context.Context) (bool, error) {
		cur, err := c.Invoice(ctx, inv.ID)
		if err != nil {
			return false, err
		}
		if cur.Status == erp.InvoicePosted {
			settled = &cur
			return true, nil
		}
		return false, nil
	}
	r := request{
		call: retry.Call{Service: erp.ServiceSupplierInvoice, Operation: op, Write: true,
			Idempotent: true, Reconcile: reconcile},
		method: http.MethodPost,
		url: c.url(erp.ServiceSupplierInvoice, "Release",
			param{"SupplierInvoice", literal(inv.ID)},
			param{"FiscalYear", literal(fy)}),
		header:   repeatabilityHeader(op, idempotencyKey),
		keys:     map[string]string{"invoice_id": inv.ID},
		notFound: &erp.NotFoundError{Entity: erp.EntityInvoice, ID: inv.ID},
	}
	var w wireRelease
	rep, err := c.write(ctx, r, func(_ http.Header, body []byte) error {
		var err error
		w, err = decodeRelease(body)
		return err
	})
	var up *erp.UpstreamError
	if errors.As(err, &up) && up.HasMessage(msgAlreadyPosted) {
		return c.alreadyPosted(ctx, inv, fy), nil
	}
	if err != nil {
		return erp.Posting{}, err
	}
	if settled != nil {
		return erp.Posting{InvoiceID: settled.ID, FiscalYear: settled.FiscalYear, Status: erp.InvoicePosted,
			PaymentBlock: settled.PaymentBlock}, nil
	}
	msgs, err := ParseMessages(rep.header.Get("sap-message"))
	if err != nil {
		// The invoice is posted; an unreadable warning must not turn that
		// into a failure.
		c.log.WarnContext(ctx, "sap: unreadable sap-message header", "operation", op, "error", err)
	}
	st, _ := invoiceStatus(w.SupplierInvoiceStatus) // checked by decodeRelease
	p := erp.Posting{
		InvoiceID:    cmp.Or(w.SupplierInvoice, inv.ID),
		FiscalYear:   cmp.Or(w.FiscalYear, fy),
		Status:       st,
		PostedAt:     w.PostingDate.Time,
		PaymentBlock: w.PaymentBlockingReason,
		Messages:     msgs,
	}
	return p, nil
}

// alreadyPosted is the Posting of an invoice the ERP reports as posted
// before the call. The invoice is read back for what the posting set, its
// payment block and posting date; should that read fail, or find another
// fiscal year's document, the Posting holds what the call knew, and the
// failure is logged.
func (c *Client) alreadyPosted(ctx context.Context, inv erp.Invoice, fy string) erp.Posting {
	p := erp.Posting{InvoiceID: inv.ID, FiscalYear: fy, Status: erp.InvoicePosted, PostedAt: inv.PostingDate,
		PaymentBlock: inv.PaymentBlock, AlreadyPosted: true}
	cur, err := c.Invoice(ctx, inv.ID)
	switch {
	case err != nil:
		c.log.WarnContext(ctx, "sap: invoice posted before the call could not be read back",
			"invoice_id", inv.ID, "fiscal_year", fy, "error", err)
	case cur.FiscalYear != fy:
		c.log.WarnContext(ctx, "sap: invoice posted before the call read back in another fiscal year",
			"invoice_id", inv.ID, "fiscal_year", fy, "read_fiscal_year", cur.FiscalYear)
	default:
		p.PostedAt, p.PaymentBlock = cur.PostingDate, cur.PaymentBlock
	}
	return p
}

// fiscalYear returns fy, or reads the invoice to learn it when empty.
func (c *Client) fiscalYear(ctx context.Context, invoiceID, fy string) (string, error) {
	if fy != "" {
		return fy, nil
	}
	inv, err := c.Invoice(ctx, invoiceID)
	if err != nil {
		return "", err
	}
	return inv.FiscalYear, nil
}

// repeatabilityHeader carries the idempotency key as SAP's
// Repeatability-Request-ID. SAP limits the id's length and the key is the
// caller's, so the id is a digest of the operation and the key: 32 hex
// characters, the same for every repetition of the same call. Without a key
// the write still gets an id of its own, fixed for all its attempts, so the
// ERP drops a repeat the retry layer makes after a lost answer.
func repeatabilityHeader(op, key string) http.Header {
	if key == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		return http.Header{"Repeatability-Request-Id": {hex.EncodeToString(b[:])}}
	}
	return http.Header{"Repeatability-Request-Id": {repeatabilityID(op, key)}}
}

func repeatabilityID(op, key string) string {
	sum := sha256.Sum256([]byte(op + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}
