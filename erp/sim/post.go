package sim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// functionDecl is a function import as SAP's $metadata declares it: its
// parameters, all of mode In and passed in the query, and the complex type
// it returns. The simulator checks calls against it and publishes it in
// its $metadata.
type functionDecl struct {
	params     []paramDecl
	returnType string      // complex type in the service's namespace
	result     []paramDecl // its properties, none of them nullable
}

// paramDecl is one parameter of a function import, or one property of the
// complex type it returns.
type paramDecl struct {
	name      string
	typ       string // "Edm.String" or "Edm.Boolean"
	maxLength int    // of an Edm.String; 0 when none is declared
}

// successResult is PostInvoiceExportParameters and
// ReleaseInvoiceExportParameters alike: one Success, not nullable.
var successResult = []paramDecl{{name: "Success", typ: "Edm.Boolean"}}

// functionDecls are the function imports the simulator serves, by service,
// as API_SUPPLIERINVOICE_PROCESS_SRV's $metadata declares them (SAP's
// cloud and on-premise variants agree on them): Post posts a parked or
// held invoice; Release releases an invoice blocked for payment. The
// service also declares Cancel (reverse an invoice), which the simulator
// does not serve.
var functionDecls = map[string]map[string]functionDecl{
	"API_SUPPLIERINVOICE_PROCESS_SRV": {
		"Post": {
			params: []paramDecl{
				{name: "SupplierInvoice", typ: "Edm.String", maxLength: 10},
				{name: "FiscalYear", typ: "Edm.String", maxLength: 4},
			},
			returnType: "PostInvoiceExportParameters",
			result:     successResult,
		},
		"Release": {
			params: []paramDecl{
				{name: "SupplierInvoice", typ: "Edm.String", maxLength: 10},
				{name: "FiscalYear", typ: "Edm.String", maxLength: 4},
				{name: "DiscountDaysHaveToBeShifted", typ: "Edm.Boolean"},
			},
			returnType: "ReleaseInvoiceExportParameters",
			result:     successResult,
		},
	},
}

// functionArgs are the parameters of one call, read and checked.
type functionArgs struct {
	strings map[string]string
	bools   map[string]bool
}

// parseArgs reads the parameters fn of service svc declares from the query.
// Every declared parameter is required, as SAP's API description has them;
// a missing one or one that is no literal of its type is a 400. Other query
// options are custom ones and ignored, as OData lets a service do.
func parseArgs(svc, fn string, w writeRequest) (functionArgs, *apiError) {
	d, ok := functionDecls[svc][fn]
	if !ok {
		return functionArgs{}, newError(http.StatusInternalServerError, "/IWBEP/CM_MGW_RT/000",
			fmt.Sprintf("Function import %s has no declaration", fn))
	}
	args := functionArgs{strings: map[string]string{}, bools: map[string]bool{}}
	for _, p := range d.params {
		raw, present := w.query[p.name]
		if !present || len(raw) == 0 || raw[0] == "" {
			return functionArgs{}, newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001",
				fmt.Sprintf("Mandatory parameter '%s' of function import '%s' is missing", p.name, fn))
		}
		if len(raw) > 1 {
			return functionArgs{}, invalidParam(fn, p.name, "given more than once")
		}
		switch p.typ {
		case "Edm.String":
			v, ok := stringLiteral(raw[0])
			if !ok {
				return functionArgs{}, invalidParam(fn, p.name, "not an Edm.String literal in single quotes")
			}
			if p.maxLength > 0 && len([]rune(v)) > p.maxLength {
				return functionArgs{}, invalidParam(fn, p.name, fmt.Sprintf("longer than %d characters", p.maxLength))
			}
			args.strings[p.name] = v
		case "Edm.Boolean":
			switch raw[0] {
			case "true":
				args.bools[p.name] = true
			case "false":
				args.bools[p.name] = false
			default:
				return functionArgs{}, invalidParam(fn, p.name, "not an Edm.Boolean literal (true or false)")
			}
		}
	}
	return args, nil
}

func invalidParam(fn, name, why string) *apiError {
	return newError(http.StatusBadRequest, "/IWBEP/CM_MGW_RT/001",
		fmt.Sprintf("Invalid value for parameter '%s' of function import '%s': %s", name, fn, why))
}

// stringLiteral reads an OData string literal: the value in single quotes,
// a quote inside doubled.
func stringLiteral(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '\'' || raw[len(raw)-1] != '\'' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
		return "", false
	}
	return strings.ReplaceAll(inner, "''", "'"), true
}

// successBody is the answer of a function import that returns a Success
// complex value, in the v2 form {"d":{"<name>":{...}}}.
func successBody(svc, fn string) map[string]any {
	return map[string]any{"d": map[string]any{fn: obj{
		{"__metadata", map[string]string{"type": svc + "." + functionDecls[svc][fn].returnType}},
		{"Success", true},
	}}}
}

// Price tolerance for Post: a line whose unit price is above the PO price
// by more than either limit is posted with a payment block.
var (
	tolerancePercent  = decimal.NewFromInt(2)
	toleranceAbsolute = decimal.NewFromInt(50)
)

// post is the Post function import: it posts a parked invoice. It checks
// in the order SAP's invoice verification reports problems: existence,
// status, posting period, duplicate, supplier, PO items, goods receipts,
// then price. A price variance above the tolerance posts the invoice with
// payment block R and the warning M8/082 in the sap-message header.
func (s *Server) post(st *state, w writeRequest) (response, *apiError) {
	args, err := parseArgs(w.svc.name, "Post", w)
	if err != nil {
		return response{}, err
	}
	id, fy := args.strings["SupplierInvoice"], args.strings["FiscalYear"]
	inv := st.invoice(id, fy)
	if inv == nil {
		return response{}, newError(http.StatusNotFound, "/IWBEP/CM_MGW_RT/020",
			fmt.Sprintf("Supplier invoice %s %s does not exist", id, fy))
	}
	if inv.status == statusPosted {
		return response{}, newError(http.StatusBadRequest, "M8/255",
			fmt.Sprintf("Document %s %s has already been posted", inv.id, inv.fiscalYear))
	}
	if inv.postingDate.Before(s.opts.ClosedBefore) {
		return response{}, newError(http.StatusBadRequest, "F5/201",
			fmt.Sprintf("Posting period %03d %d is not open", int(inv.postingDate.Month()), inv.postingDate.Year()))
	}
	if orig := st.duplicateOf(inv); orig != nil {
		return response{}, newError(http.StatusBadRequest, "M8/108",
			fmt.Sprintf("Check if invoice already entered under accounting doc. no. %s %s", orig.id, orig.fiscalYear))
	}
	switch sup := st.supplier(inv.supplier); {
	case sup == nil:
		return response{}, newError(http.StatusBadRequest, "06/025",
			fmt.Sprintf("Vendor %s not created (please check your input)", inv.supplier))
	case sup.postingBlocked || sup.deleted:
		return response{}, newError(http.StatusBadRequest, "F5/351",
			fmt.Sprintf("Account %s is blocked for posting in company code %s", sup.id, inv.companyCode))
	}
	for _, l := range inv.lines {
		po := st.order(l.po)
		if po == nil {
			return response{}, newError(http.StatusBadRequest, "06/019", fmt.Sprintf("Purchase order %s does not exist", l.po))
		}
		it := po.item(l.poItem)
		if it == nil {
			return response{}, newError(http.StatusBadRequest, "06/019",
				fmt.Sprintf("Purchase order %s item %s does not exist", l.po, itemNumber(l.poItem)))
		}
		switch {
		case po.deletion != "" || it.deletion != "":
			return response{}, newError(http.StatusBadRequest, "06/020",
				fmt.Sprintf("Purchase order %s item %s is flagged for deletion; no invoice can be posted", po.id, itemNumber(it.item)))
		case it.completelyDelivered && it.finallyInvoiced:
			return response{}, newError(http.StatusBadRequest, "06/020",
				fmt.Sprintf("Purchase order %s item %s is completely delivered and finally invoiced", po.id, itemNumber(it.item)))
		}
	}
	for _, l := range inv.lines {
		it := st.order(l.po).item(l.poItem)
		if it.grBased && len(st.receiptsFor(l.po, l.poItem)) == 0 {
			return response{}, newError(http.StatusBadRequest, "M8/081",
				fmt.Sprintf("No goods receipt for purchase order %s %s", l.po, itemNumber(l.poItem)))
		}
	}
	warning := ""
	for _, l := range inv.lines {
		if msg := priceVariance(l, *st.order(l.po).item(l.poItem), inv.currency); msg != "" {
			warning = msg
			break
		}
	}

	inv.status = statusPosted
	if warning != "" {
		inv.block = blockPriceVariance
	}
	st.postings = append(st.postings, &Posting{
		InvoiceID: inv.id, FiscalYear: inv.fiscalYear, PostedAt: s.opts.Now(),
		PaymentBlock: inv.block,
	})
	resp := jsonResponse(http.StatusOK, successBody(w.svc.name, "Post"))
	if warning != "" {
		resp.header.Set("sap-message", sapMessage("M8/082", warning, "warning"))
	}
	return resp, nil
}

// duplicateOf returns another posted invoice with the same supplier,
// supplier reference, document date and gross amount.
func (st *state) duplicateOf(inv *invoice) *invoice {
	for _, o := range st.invoices {
		if o == inv || o.status != statusPosted {
			continue
		}
		if o.supplier == inv.supplier && o.supplierRef == inv.supplierRef &&
			o.documentDate.Equal(inv.documentDate) && o.gross.Equal(inv.gross) {
			return o
		}
	}
	return nil
}

// priceVariance describes the line's price variance when it is above the
// tolerance, or returns "".
func priceVariance(l invoiceLine, it poItem, currency string) string {
	if l.qty.IsZero() {
		return ""
	}
	invPrice := l.amount.DivRound(l.qty, 4)
	poPrice := it.unitPrice()
	diff := invPrice.Sub(poPrice)
	if !diff.IsPositive() || poPrice.IsZero() {
		return ""
	}
	pct := diff.Mul(decimal.NewFromInt(100)).DivRound(poPrice, 2)
	abs := diff.Mul(l.qty).Round(2)
	if !pct.GreaterThan(tolerancePercent) && !abs.GreaterThan(toleranceAbsolute) {
		return ""
	}
	return fmt.Sprintf("Price variance for purchase order %s %s: invoice price %s %s exceeds order price %s %s by %s %%; invoice blocked for payment",
		l.po, itemNumber(l.poItem), amount(invPrice), currency, amount(poPrice), currency, pct.StringFixed(2))
}

// writeComplexTypes writes the complex types the function imports of svc
// return, for its $metadata.
func writeComplexTypes(b *strings.Builder, svc *service) {
	seen := map[string]bool{}
	for _, name := range functionNames(svc) {
		d, ok := functionDecls[svc.name][name]
		if !ok || seen[d.returnType] {
			continue
		}
		seen[d.returnType] = true
		fmt.Fprintf(b, `<ComplexType Name="%s">`, d.returnType)
		for _, p := range d.result {
			fmt.Fprintf(b, `<Property Name="%s" Type="%s" Nullable="false"/>`, p.name, p.typ)
		}
		b.WriteString(`</ComplexType>`)
	}
}

// writeFunctionImports writes the function imports of svc with their
// parameters and return types, for its $metadata.
func writeFunctionImports(b *strings.Builder, svc *service) {
	for _, name := range functionNames(svc) {
		d, ok := functionDecls[svc.name][name]
		if !ok {
			fmt.Fprintf(b, `<FunctionImport Name="%s" m:HttpMethod="POST"/>`, name)
			continue
		}
		fmt.Fprintf(b, `<FunctionImport Name="%s" ReturnType="%s.%s" m:HttpMethod="POST">`, name, svc.name, d.returnType)
		for _, p := range d.params {
			fmt.Fprintf(b, `<Parameter Name="%s" Type="%s" Mode="In"`, p.name, p.typ)
			if p.maxLength > 0 {
				fmt.Fprintf(b, ` MaxLength="%d"`, p.maxLength)
			}
			b.WriteString(`/>`)
		}
		b.WriteString(`</FunctionImport>`)
	}
}

// functionNames are the names of the function imports of svc, sorted.
func functionNames(svc *service) []string {
	return slices.Sorted(maps.Keys(svc.functions))
}
