package sap

import (
	"errors"
	"fmt"

	"github.com/erpgate/erpgate/erp"
)

// otherDocument is an answer about another document than the one asked
// for: a purchase order, invoice, supplier or goods receipt of another id.
// Taken for the one asked for, a match, an approval or a posting would go
// to the wrong document, so the answer is the ERP's fault: a read retries
// it and, if it comes again, the ERP is unavailable.
type otherDocument struct {
	what      string // "invoice", "purchase order", …
	got, want string
}

func (e *otherDocument) Error() string {
	return fmt.Sprintf("the answer is about %s %q, not %q", e.what, e.got, e.want)
}

// asked checks that an answer's id is the one asked for.
func asked(what, got, want string) error {
	if got != want {
		return &otherDocument{what: what, got: got, want: want}
	}
	return nil
}

// askedIfSet checks an id the answer may leave out, such as the purchase
// order of each of its items.
func askedIfSet(what, got, want string) error {
	if got == "" {
		return nil
	}
	return asked(what, got, want)
}

// answerText names a failed decode for the log: an answer about another
// document, or a malformed one.
func answerText(err error) string {
	var other *otherDocument
	if errors.As(err, &other) {
		return "answer about another " + other.what
	}
	return "malformed response"
}

// invoiceOf converts an invoice the ERP gave for id.
func invoiceOf(id string) func(wireInvoice) (erp.Invoice, error) {
	return func(w wireInvoice) (erp.Invoice, error) {
		if err := asked("invoice", w.SupplierInvoice, id); err != nil {
			return erp.Invoice{}, err
		}
		return w.toDomain()
	}
}

// purchaseOrderOf converts a purchase order the ERP gave for id; each of
// its items must be of it too.
func purchaseOrderOf(id string) func(wirePurchaseOrder) (erp.PurchaseOrder, error) {
	return func(w wirePurchaseOrder) (erp.PurchaseOrder, error) {
		if err := asked("purchase order", w.PurchaseOrder, id); err != nil {
			return erp.PurchaseOrder{}, err
		}
		for _, it := range w.Items.Results {
			if err := askedIfSet("purchase order", it.PurchaseOrder, id); err != nil {
				return erp.PurchaseOrder{}, err
			}
		}
		return w.toDomain()
	}
}
