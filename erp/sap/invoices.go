package sap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

const invoiceExpand = "to_SuplrInvcItemPurOrdRef"

// Invoice returns the supplier invoice with its purchase order references,
// or a *erp.NotFoundError. It filters by id, so the fiscal year need not be
// known; should the id exist in several fiscal years, the latest wins.
func (c *Client) Invoice(ctx context.Context, id string) (erp.Invoice, error) {
	// An answer about another invoice than the one asked for is the ERP's
	// fault, never the invoice (see otherDocument).
	list, err := fetchList(ctx, c, c.invoiceRequest(id), invoiceOf(id))
	return latestInvoice(id, list, err)
}

func (c *Client) invoiceRequest(id string) request {
	return request{
		call:   retry.Call{Service: erp.ServiceSupplierInvoice, Operation: "read invoice"},
		method: http.MethodGet,
		url: c.url(erp.ServiceSupplierInvoice, "A_SupplierInvoice",
			param{"$filter", "SupplierInvoice eq " + literal(id)},
			param{"$expand", invoiceExpand}),
		key: param{"invoice_id", id},
	}
}

// latestInvoice is Invoice's answer from the invoices read under id.
func latestInvoice(id string, list []erp.Invoice, err error) (erp.Invoice, error) {
	if err != nil {
		return erp.Invoice{}, err
	}
	if len(list) == 0 {
		return erp.Invoice{}, &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id}
	}
	return slices.MaxFunc(list, func(a, b erp.Invoice) int { return cmp.Compare(a.FiscalYear, b.FiscalYear) }), nil
}

// InvoiceForWrite is Invoice for a caller that writes to the invoice next.
// When no CSRF token of the supplier invoice service is cached, the read
// asks for one (X-CSRF-Token: Fetch, which SAP answers on any GET of the
// service) and caches what comes back, so that the write that follows
// needs no fetch of its own: one ERP round trip fewer. A read that brings
// no token back leaves the write to fetch one, as without this read; once
// a fetch has found that the service hands out none, the read asks no
// more.
func (c *Client) InvoiceForWrite(ctx context.Context, id string) (erp.Invoice, error) {
	e := c.csrfEntry(ctx, erp.ServiceSupplierInvoice)
	if e.get().known() {
		return c.Invoice(ctx, id)
	}
	// Another call fetching a token now is one fetch enough: read plainly.
	select {
	case e.fetching <- struct{}{}:
	default:
		return c.Invoice(ctx, id)
	}
	defer func() { <-e.fetching }()
	if e.get().known() {
		return c.Invoice(ctx, id)
	}
	r := c.invoiceRequest(id)
	r.header = http.Header{"X-Csrf-Token": {"Fetch"}}
	conv := invoiceOf(id)
	var (
		list []erp.Invoice
		next string
		st   csrfState
	)
	_, err := c.do(ctx, r, func(h http.Header, body []byte) error {
		page, link, err := decodePage[wireInvoice](body)
		if err != nil {
			return err
		}
		got := make([]erp.Invoice, 0, len(page))
		for _, w := range page {
			inv, err := conv(w)
			if err != nil {
				return err
			}
			got = append(got, inv)
		}
		list, next = got, link
		st, _ = tokenState(h)
		return nil
	})
	if err != nil {
		return erp.Invoice{}, err
	}
	if st.token != "" {
		e.set(st)
	}
	if next != "" {
		// The rest of a list served in pages is read as Invoice reads it.
		u, err := c.nextPage(r.call.Service, r.url, next)
		if err != nil {
			up := r.malformed(http.StatusOK, err)
			up.Attempts = 1
			return erp.Invoice{}, up
		}
		r.url, r.header = u, nil
		rest, err := fetchList(ctx, c, r, conv)
		if err != nil {
			return erp.Invoice{}, err
		}
		list = append(list, rest...)
	}
	return latestInvoice(id, list, nil)
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

// Messages of SAP's function imports that settle a call rather than fail
// it, as SAP documents them for the invoice verification behind Post and
// Release (BAPI_INCOMINGINVOICE_POST, BAPI_INCOMINGINVOICE_RELEASE).
const (
	msgAlreadyPosted = "M8/255" // Post: "Document & already posted"
	msgNotBlocked    = "M8/382" // Release: "Invoice &1 &2 is not blocked for payment"
)

// PostInvoice posts the parked (or held) invoice with the function import
// Post, then reads the invoice back to confirm it is posted and to learn
// what the posting set: its payment block and posting date. The invoice's
// ID and FiscalYear are used; without a fiscal year the invoice is read
// first to learn it. Warnings from the sap-message header come back in
// Posting.Messages.
//
// idempotencyKey is not sent: SAP's published API descriptions of the
// service declare no repeatability header (SAP Gateway's RequestID and
// RepeatabilityCreation included), so nothing relies on the ERP dropping
// a repeated Post. The runner never sends Post again while an attempt may
// still be running (a posting goes on after the client gives up; its
// attempt has the runner's write timeout), and a caller repeating the
// call reads the invoice first.
//
// An invoice the ERP reports as posted already (M8/255, as when another
// call posted it first) is settled, not a failure: the Posting comes back
// with AlreadyPosted set. A Post whose answer was lost or unreadable is
// settled by reading the invoice, again while the attempt may still be
// running: posted is success, and then the Posting has no Messages, which
// went with the answer; not posted by then is a *retry.Error with
// Unconfirmed set. A Post the ERP answers with Success false is an
// *erp.UpstreamError; one it answers with Success but whose invoice does
// not read back as posted is an *erp.UpstreamError with Unconfirmed set.
// Should only the read back fail, the Posting holds what the call knew,
// and the failure is logged.
func (c *Client) PostInvoice(ctx context.Context, inv erp.Invoice, idempotencyKey string) (erp.Posting, error) {
	// A system whose $metadata lacks Post (an older release) is a
	// configuration fault: nothing else is called in its place.
	if err := c.CanPost(); err != nil {
		return erp.Posting{}, err
	}
	fy, err := c.fiscalYear(ctx, inv.ID, inv.FiscalYear)
	if err != nil {
		return erp.Posting{}, err
	}
	const op = "post invoice"
	var settled *erp.Invoice
	reconcile := func(ctx context.Context) (bool, error) {
		cur, err := c.invoiceHeader(ctx, inv.ID, fy)
		if err != nil {
			return false, err
		}
		if !wasPosted(cur.Status) {
			return false, nil
		}
		settled = &cur
		return true, nil
	}
	r := request{
		call: retry.Call{Service: erp.ServiceSupplierInvoice, Operation: op, Write: true,
			Reconcile: reconcile, Answered: answered},
		method: http.MethodPost,
		url: c.url(erp.ServiceSupplierInvoice, functionPost,
			param{"SupplierInvoice", literal(inv.ID)},
			param{"FiscalYear", literal(fy)}),
		keys:     map[string]string{"invoice_id": inv.ID},
		notFound: &erp.NotFoundError{Entity: erp.EntityInvoice, ID: inv.ID},
	}
	var success bool
	rep, err := c.write(ctx, r, func(_ http.Header, body []byte) error {
		var err error
		success, err = decodeSuccess(body, functionPost)
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
		return postingOf(*settled), nil
	}
	if !success {
		return erp.Posting{}, r.upstream(rep.status, func(up *erp.UpstreamError) {
			up.Text = "Post answered Success false"
			up.Err = errors.New("the ERP did not post the invoice and gave no message")
		})
	}
	msgs, err := ParseMessages(rep.header.Get("sap-message"))
	if err != nil {
		// The invoice is posted; an unreadable warning must not turn that
		// into a failure.
		c.log.WarnContext(ctx, "sap: unreadable sap-message header", "operation", op, "error", err)
	}
	cur, err := c.invoiceHeader(ctx, inv.ID, fy)
	if err != nil {
		c.log.WarnContext(ctx, "sap: posted invoice could not be read back",
			"invoice_id", inv.ID, "fiscal_year", fy, "error", err)
		return erp.Posting{InvoiceID: inv.ID, FiscalYear: fy, Status: erp.InvoicePosted, PostedAt: inv.PostingDate,
			PaymentBlock: inv.PaymentBlock, Messages: msgs}, nil
	}
	if !wasPosted(cur.Status) {
		return erp.Posting{}, r.upstream(rep.status, func(up *erp.UpstreamError) {
			up.Unconfirmed = true
			up.Text = fmt.Sprintf("Post answered Success, but the invoice reads back as %s (SupplierInvoiceStatus %q)",
				cur.Status, cur.SAPStatus)
			up.Err = errors.New("posting not confirmed by the read back")
		})
	}
	p := postingOf(cur)
	p.Messages = msgs
	return p, nil
}

// answered reports whether a write's failed attempt got the ERP's own
// answer, a 2xx that could not be read: the ERP was done with it. Without
// an answer (a timeout, a broken connection, a proxy's 502 or 504) the ERP
// may still be at work on it.
func answered(err error) bool {
	up, ok := errors.AsType[*erp.UpstreamError](err)
	return ok && up.Status >= 200 && up.Status < 300
}

// wasPosted reports whether an invoice in status st has been posted: it is
// posted, or was and has been reversed since.
func wasPosted(st erp.InvoiceStatus) bool {
	return st == erp.InvoicePosted || st == erp.InvoiceReversed
}

// postingOf is the Posting an invoice read back after its posting shows.
func postingOf(inv erp.Invoice) erp.Posting {
	return erp.Posting{InvoiceID: inv.ID, FiscalYear: inv.FiscalYear, Status: inv.Status, PostedAt: inv.PostingDate,
		PaymentBlock: inv.PaymentBlock}
}

// alreadyPosted is the Posting of an invoice the ERP reports as posted
// before the call. The invoice is read back for what the posting set, its
// payment block and posting date; should that read fail, or find the
// invoice not posted, the Posting holds what the call knew, and the
// failure is logged.
func (c *Client) alreadyPosted(ctx context.Context, inv erp.Invoice, fy string) erp.Posting {
	p := erp.Posting{InvoiceID: inv.ID, FiscalYear: fy, Status: erp.InvoicePosted, PostedAt: inv.PostingDate,
		PaymentBlock: inv.PaymentBlock, AlreadyPosted: true}
	cur, err := c.invoiceHeader(ctx, inv.ID, fy)
	switch {
	case err != nil:
		c.log.WarnContext(ctx, "sap: invoice posted before the call could not be read back",
			"invoice_id", inv.ID, "fiscal_year", fy, "error", err)
	case !wasPosted(cur.Status):
		c.log.WarnContext(ctx, "sap: invoice posted before the call reads back as not posted",
			"invoice_id", inv.ID, "fiscal_year", fy, "status", cur.Status, "sap_status", cur.SAPStatus)
	default:
		p.Status, p.PostedAt, p.PaymentBlock = cur.Status, cur.PostingDate, cur.PaymentBlock
	}
	return p
}

// ReleasePaymentBlock lifts the payment block of a posted invoice with the
// function import Release, which SAP describes as releasing a blocked
// supplier invoice. shiftDiscountDays is Release's mandatory
// DiscountDaysHaveToBeShifted: whether the ERP moves the cash discount
// days of the invoice for its payment. The invoice's ID and FiscalYear are
// used as by PostInvoice; idempotencyKey is not sent, as there.
//
// An invoice the ERP reports as not blocked for payment (M8/382) is
// settled: there is no block to lift. A Release whose answer was lost is
// settled by reading the invoice: no payment block is success.
func (c *Client) ReleasePaymentBlock(ctx context.Context, inv erp.Invoice, shiftDiscountDays bool, idempotencyKey string) error {
	fy, err := c.fiscalYear(ctx, inv.ID, inv.FiscalYear)
	if err != nil {
		return err
	}
	const op = "release payment block"
	reconcile := func(ctx context.Context) (bool, error) {
		cur, err := c.invoiceHeader(ctx, inv.ID, fy)
		if err != nil {
			return false, err
		}
		return wasPosted(cur.Status) && cur.PaymentBlock == "", nil
	}
	r := request{
		call: retry.Call{Service: erp.ServiceSupplierInvoice, Operation: op, Write: true,
			Reconcile: reconcile, Answered: answered},
		method: http.MethodPost,
		url: c.url(erp.ServiceSupplierInvoice, functionRelease,
			param{"SupplierInvoice", literal(inv.ID)},
			param{"FiscalYear", literal(fy)},
			param{"DiscountDaysHaveToBeShifted", strconv.FormatBool(shiftDiscountDays)}),
		keys:     map[string]string{"invoice_id": inv.ID},
		notFound: &erp.NotFoundError{Entity: erp.EntityInvoice, ID: inv.ID},
	}
	success := true // a Release settled by reading has no answer to read
	rep, err := c.write(ctx, r, func(_ http.Header, body []byte) error {
		var err error
		success, err = decodeSuccess(body, functionRelease)
		return err
	})
	var up *erp.UpstreamError
	if errors.As(err, &up) && up.HasMessage(msgNotBlocked) {
		return nil
	}
	if err != nil {
		return err
	}
	if !success {
		return r.upstream(rep.status, func(up *erp.UpstreamError) {
			up.Text = "Release answered Success false"
			up.Err = errors.New("the ERP did not release the invoice and gave no message")
		})
	}
	return nil
}

// invoiceHeader reads the header of the invoice id in fiscal year fy by
// its key, without its items, or returns a *erp.NotFoundError.
func (c *Client) invoiceHeader(ctx context.Context, id, fy string) (erp.Invoice, error) {
	r := request{
		call:     retry.Call{Service: erp.ServiceSupplierInvoice, Operation: "read invoice"},
		method:   http.MethodGet,
		url:      c.url(erp.ServiceSupplierInvoice, invoiceKey(id, fy)),
		keys:     map[string]string{"invoice_id": id},
		notFound: &erp.NotFoundError{Entity: erp.EntityInvoice, ID: id},
	}
	return fetchEntity(ctx, c, r, func(w wireInvoice) (erp.Invoice, error) {
		if err := errors.Join(asked("invoice", w.SupplierInvoice, id), askedIfSet("fiscal year", w.FiscalYear, fy)); err != nil {
			return erp.Invoice{}, err
		}
		return w.toDomain()
	})
}

// invoiceKey is the escaped path segment of one A_SupplierInvoice, keyed
// by SupplierInvoice and FiscalYear.
func invoiceKey(id, fy string) string {
	return "A_SupplierInvoice(SupplierInvoice='" + escape(quoteString(id), false) +
		"',FiscalYear='" + escape(quoteString(fy), false) + "')"
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
