package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/api"
	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records"
	"github.com/erpgate/erpgate/errmap"
)

// The approvers' side: the queue of approvals, and the page of one
// approval, which is the invoice's case as an approver needs it to decide:
// what the ERP holds of the invoice (api.Evidence, read anew for the
// page), the agent's proposal and the run that made it, the invoice's other
// approvals, holds and handovers, its audit log, and the decision.

var approvalStatuses = []string{records.ApprovalPending, records.ApprovalApproved, records.ApprovalRejected,
	records.ApprovalSentBack, records.ApprovalSuperseded}

// statusAny selects approvals of every status.
const statusAny = "any"

var (
	groupForm    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	supplierForm = regexp.MustCompile(`^[A-Za-z0-9]{1,10}$`)
	amountForm   = regexp.MustCompile(`^[0-9]{1,15}([.,][0-9]{1,2})?$`)
)

// approvalHref is the page of an approval.
func approvalHref(id string) string { return "/console/approvals/" + id }

// withQuery is path with v as its query, if any.
func withQuery(path string, v url.Values) string {
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// queue is a view of the approvers' queue as a query gives it: a status,
// filters, and an order by waiting time. It travels with the approval
// pages opened from it and with their forms, so that after a decision the
// person lands on the next approval of the same queue.
type queue struct {
	Status     string // an approval status, or statusAny
	InvoiceID  string
	Approver   string // the approver group
	SupplierID string
	// AmountFrom and AmountTo bound the amount as the person typed them.
	AmountFrom, AmountTo string
	// Newest lists the newest first; by default the one waiting longest
	// comes first.
	Newest   bool
	min, max *decimal.Decimal
}

// readQueue reads a queue from the parameters of a query or a form, each
// checked: a bad one is INVALID_REQUEST naming it.
func readQueue(v url.Values) (queue, *problem) {
	q := queue{Status: v.Get("status"), InvoiceID: strings.TrimSpace(v.Get("invoice_id")),
		Approver: strings.TrimSpace(v.Get("approver")), SupplierID: strings.TrimSpace(v.Get("supplier_id")),
		AmountFrom: strings.TrimSpace(v.Get("amount_from")), AmountTo: strings.TrimSpace(v.Get("amount_to"))}
	bad := func(field, what string) (queue, *problem) {
		pr := problemOf(errmap.Invalid(field, what))
		return queue{}, &pr
	}
	if q.Status == "" {
		q.Status = records.ApprovalPending
	}
	var ok bool
	switch {
	case q.Status != statusAny && !slices.Contains(approvalStatuses, q.Status):
		return bad("status", "must be "+statusAny+" or one of "+strings.Join(approvalStatuses, ", "))
	case q.InvoiceID != "" && !invoiceForm.MatchString(q.InvoiceID):
		return bad("invoice_id", "must be an invoice id of 10 digits, such as 5105600102")
	case q.Approver != "" && !groupForm.MatchString(q.Approver):
		return bad("approver", "must be an approver group: a lower-case name such as ap_manager")
	case q.SupplierID != "" && !supplierForm.MatchString(q.SupplierID):
		return bad("supplier_id", "must be a supplier id of 1 to 10 letters or digits, such as 100042")
	}
	if q.min, ok = amountOf(q.AmountFrom); !ok {
		return bad("amount_from", "must be an amount such as 10000 or 12500.50, without thousands separators")
	}
	if q.max, ok = amountOf(q.AmountTo); !ok {
		return bad("amount_to", "must be an amount such as 50000 or 12500.50, without thousands separators")
	}
	if q.min != nil && q.max != nil && q.max.LessThan(*q.min) {
		return bad("amount_to", "must not be below amount_from")
	}
	switch v.Get("sort") {
	case "", "oldest":
	case "newest":
		q.Newest = true
	default:
		return bad("sort", "must be oldest (the longest waiting first) or newest")
	}
	return q, nil
}

// amountOf reads an amount bound: nil for none, ok false for one that is
// not an amount. A decimal comma is taken for a point.
func amountOf(s string) (_ *decimal.Decimal, ok bool) {
	if s == "" {
		return nil, true
	}
	if !amountForm.MatchString(s) {
		return nil, false
	}
	d, err := decimal.NewFromString(strings.Replace(s, ",", ".", 1))
	return &d, err == nil
}

// filter is the records' filter of the queue, its page aside.
func (q queue) filter() records.ApprovalFilter {
	f := records.ApprovalFilter{Status: q.Status, InvoiceID: q.InvoiceID, Approver: q.Approver, SupplierID: q.SupplierID,
		MinAmount: q.min, MaxAmount: q.max, OldestFirst: !q.Newest}
	if q.Status == statusAny {
		f.Status = ""
	}
	return f
}

// values are the queue's parameters that differ from the default queue,
// all pending approvals, the longest waiting first.
func (q queue) values() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	if q.Status != records.ApprovalPending {
		v.Set("status", q.Status)
	}
	set("invoice_id", q.InvoiceID)
	set("approver", q.Approver)
	set("supplier_id", q.SupplierID)
	set("amount_from", q.AmountFrom)
	set("amount_to", q.AmountTo)
	if q.Newest {
		v.Set("sort", "newest")
	}
	return v
}

// Fields are the queue's parameters as the hidden fields of a form.
func (q queue) Fields() []detail {
	v := q.values()
	out := make([]detail, 0, len(v))
	for k := range v {
		out = append(out, detail{k, v.Get(k)})
	}
	slices.SortFunc(out, func(a, b detail) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Href is the queue's list.
func (q queue) Href() string { return withQuery("/console/approvals", q.values()) }

// Narrowed says the queue is narrowed by more than its status.
func (q queue) Narrowed() bool {
	return q.InvoiceID != "" || q.Approver != "" || q.SupplierID != "" || q.min != nil || q.max != nil
}

// actionWords say what each proposed action does, for a list.
var actionWords = map[string]string{
	"post_as_invoiced": "post as invoiced",
	"accept_variance":  "accept the variance",
	"correct_amount":   "correct the amount",
}

func actionOf(code string) string {
	if w, ok := actionWords[code]; ok {
		return w
	}
	return strings.ReplaceAll(code, "_", " ")
}

// proposalWords say in a sentence what the agent proposes, at amount (the
// approval's: the corrected amount when it corrects one).
func proposalWords(a records.Approval, amount string) string {
	switch a.ProposedAction {
	case "post_as_invoiced":
		return "Post the invoice as the supplier invoiced it, at " + amount + "."
	case "accept_variance":
		return "Accept the variance over the purchase order and post the invoice as invoiced, at " + amount + "."
	case "correct_amount":
		return "Correct the invoice to " + amount + " and post it at that amount."
	}
	return "Proposed action “" + actionOf(a.ProposedAction) + "”, at " + amount + "."
}

// decisionWords say where an approval stands: waiting since when, or who
// decided what, when and why.
func (c *Console) decisionWords(a records.Approval) string {
	at := func() string { return a.DecidedAt.UTC().Format("2006-01-02 15:04:05Z") }
	switch a.Status {
	case records.ApprovalPending:
		return "Waiting for a decision for " + waited(a.RequestedAt, c.now()) + "."
	case records.ApprovalApproved:
		if a.DecidedBy == erp.AutoApprover {
			return "Approved at once by the approval routing on " + at() + ": " + a.DecisionReason + "."
		}
		return "Approved by " + a.DecidedBy + " on " + at() + ": " + a.DecisionReason
	case records.ApprovalRejected:
		return "Rejected by " + a.DecidedBy + " on " + at() + ": " + a.DecisionReason
	case records.ApprovalSentBack:
		return "Sent back to the agent with the question: " + a.DecisionReason + " (" + a.DecidedBy + ", " + at() + ")"
	case records.ApprovalSuperseded:
		return "Superseded: a newer approval of the invoice took its place, so it can no longer be decided."
	}
	return a.Status
}

// approvalRow is an approval in a list.
type approvalRow struct {
	records.Approval
	Href    string // its page, within the queue
	Amount  string
	Action  string
	Waiting string // how long it has waited, while pending
	Words   string // where it stands
	Own     bool   // the person requested it
}

func (c *Console) row(a records.Approval, q queue, me string, n numbers) approvalRow {
	r := approvalRow{Approval: a, Href: withQuery(approvalHref(a.ID), q.values()), Amount: n.amount(a.Amount, a.Currency),
		Action: actionOf(a.ProposedAction), Words: c.decisionWords(a), Own: a.RequestedBy == me}
	if a.Status == records.ApprovalPending {
		r.Waiting = waited(a.RequestedAt, c.now())
	}
	return r
}

type approvalsData struct {
	Q        queue
	Statuses []string
	Rows     []approvalRow
	// Total is how many approvals the queue holds, on every page.
	Total int
	Next  string
}

// approvals lists the queue: pending approvals by default, the one
// waiting longest first, narrowed by status, invoice, approver group,
// supplier and amount; each leads to its page.
func (c *Console) approvals(w http.ResponseWriter, r *http.Request, p person) {
	q, pr := readQueue(r.URL.Query())
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	pg, pr := c.listPage(r, approvalForm)
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	f := q.filter()
	total, err := c.records.CountApprovals(r.Context(), f)
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	f.Page = pg
	list, err := c.records.ListApprovals(r.Context(), f)
	if err != nil {
		c.internal(w, r, p, err)
		return
	}
	n := numbersFor(r.Header.Get("Accept-Language"))
	d := approvalsData{Q: q, Statuses: approvalStatuses, Total: total, Rows: make([]approvalRow, len(list))}
	for i, a := range list {
		d.Rows[i] = c.row(a, q, p.Name, n)
	}
	if len(list) > 0 {
		d.Next = nextLink(r, len(list), pg.Limit, list[len(list)-1].ID)
	}
	c.render(w, r, http.StatusOK, "approvals", page{Title: "Approvals", Nav: "approvals", Person: &p,
		Flash: decisionFlash(r, true), Data: d})
}

// decisionFlash says what the decision before did, from the redirect's
// query, on the next approval of the queue or, when none was left, on the
// queue.
func decisionFlash(r *http.Request, queueDone bool) string {
	q := r.URL.Query()
	id := q.Get("approval_id")
	if !approvalForm.MatchString(id) {
		return ""
	}
	var did string
	switch q.Get("done") {
	case records.ApprovalApproved, records.ApprovalRejected:
		did = q.Get("done")
	case records.ApprovalSentBack:
		did = "sent back to the agent"
	default:
		return ""
	}
	if queueDone {
		return "Approval " + id + " " + did + ". No other approval in this queue waits for your decision."
	}
	return "Approval " + id + " " + did + ". This is the next approval in your queue."
}

// waiting counts the pending approvals p may decide, for the navigation:
// those p did not request, for a person with the approve scope; none for
// anyone else, and none when the count fails.
func (c *Console) waiting(ctx context.Context, p *person) int {
	if p == nil || !p.Has(api.ScopeApprove) {
		return 0
	}
	n, err := c.records.CountApprovals(ctx, records.ApprovalFilter{Status: records.ApprovalPending, NotRequestedBy: p.Name})
	if err != nil {
		c.log.ErrorContext(ctx, "console: approvals waiting not counted", "client", p.Name, "error", err)
		return 0
	}
	return n
}

// decisionForm is the decision form as the person sent it, shown again
// with the refusal it met.
type decisionForm struct {
	Reason  string
	Problem *problem
}

type approvalData struct {
	A records.Approval
	// Href is the page's own address, within its queue Q.
	Href     string
	Q        queue
	Amount   string
	Proposal string
	Words    string
	Own      bool
	Form     decisionForm
	CaseHref string
	// Evidence is what the ERP holds of the invoice, unless ERPProblem
	// says why it could not be read.
	Evidence   *evidenceView
	ERPProblem *problem
	// RunID is the run that requested the approval, empty when the
	// request named none; Run its history, when the run store still holds
	// it, else RunAbsent, or RunProblem when it could not be read.
	RunID      string
	Run        *run
	RunAbsent  bool
	RunProblem *problem
	Others     []approvalRow
	Holds      []records.Hold
	Handovers  []records.Handover
	Audit      []records.AuditEntry
}

// recordsLimit bounds each list of the invoice's records on the approval
// page.
const recordsLimit = 50

// approval shows one approval with the evidence to decide it on.
func (c *Console) approval(w http.ResponseWriter, r *http.Request, p person) {
	id := r.PathValue("id")
	if !approvalForm.MatchString(id) {
		c.failAs(w, r, p, problemOf(errmap.InvalidPage(http.StatusNotFound, "approval_id", "must be an approval id such as A0000001")))
		return
	}
	q, pr := readQueue(r.URL.Query())
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	c.showApproval(w, r, p, id, q, decisionForm{}, http.StatusOK)
}

// showApproval renders the approval page of id with status, the queue q
// it belongs to, and the form as the person left it.
func (c *Console) showApproval(w http.ResponseWriter, r *http.Request, p person, id string, q queue, form decisionForm, status int) {
	ctx := r.Context()
	a, err := c.records.Approval(ctx, id)
	if err != nil {
		c.recordErr(w, r, p, "approval", err)
		return
	}
	n := numbersFor(r.Header.Get("Accept-Language"))
	d := approvalData{A: a, Href: withQuery(approvalHref(a.ID), q.values()), Q: q, Amount: n.amount(a.Amount, a.Currency), Words: c.decisionWords(a),
		Own: a.RequestedBy == p.Name, Form: form, CaseHref: "/console/cases/" + a.InvoiceID}
	d.Proposal = proposalWords(a, d.Amount)
	if ev, err := c.gw.InvoiceEvidence(ctx, a.InvoiceID); err != nil {
		c.log.WarnContext(ctx, "console: the evidence of an invoice not read", "invoice_id", a.InvoiceID, "error", err)
		pr := problemOf(errmap.Map(err))
		d.ERPProblem = &pr
	} else {
		d.Evidence = evidenceOf(ev, n)
	}
	if err := c.invoiceRecords(ctx, &d, q, p.Name, n); err != nil {
		c.internal(w, r, p, err)
		return
	}
	c.render(w, r, status, "approval", page{Title: "Approval " + a.ID + " of invoice " + a.InvoiceID, Nav: "approvals",
		Person: &p, Flash: decisionFlash(r, false), Data: d})
}

// invoiceRecords fills in what the records hold of the approval's invoice:
// the run that requested the approval (named by the case's
// approval.requested event), the other approvals, holds and handovers,
// and the audit log.
func (c *Console) invoiceRecords(ctx context.Context, d *approvalData, q queue, me string, n numbers) error {
	inv := d.A.InvoiceID
	evs, err := c.records.CaseEvents(ctx, inv, caseEventLimit)
	if err != nil {
		return err
	}
	var handovers []string
	for _, ev := range evs {
		switch {
		case ev.Kind == "approval.requested" && ev.Ref == d.A.ID:
			d.RunID = ev.RunID
		case ev.Kind == "handover.created" && !slices.Contains(handovers, ev.Ref):
			handovers = append(handovers, ev.Ref)
		}
	}
	if d.RunID != "" {
		b, found, err := c.gw.RunJSON(ctx, d.RunID)
		if err == nil && found {
			d.Run, err = decodeRun(b)
		}
		if err != nil {
			c.log.ErrorContext(ctx, "console: run not read", "run_id", d.RunID, "error", err)
			pr := problemOf(errmap.Map(err))
			d.RunProblem = &pr
		}
		d.RunAbsent = !found && err == nil
	}
	others, err := c.records.ListApprovals(ctx, records.ApprovalFilter{InvoiceID: inv, Page: records.Page{Limit: recordsLimit}})
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID != d.A.ID {
			d.Others = append(d.Others, c.row(o, q, me, n))
		}
	}
	if d.Holds, err = c.records.ListHolds(ctx, records.HoldFilter{InvoiceID: inv, Page: records.Page{Limit: recordsLimit}}); err != nil {
		return err
	}
	// Newest first, as the other lists.
	slices.Reverse(handovers)
	for _, id := range handovers[:min(len(handovers), recordsLimit)] {
		h, err := c.records.Handover(ctx, id)
		switch {
		case errors.Is(err, records.ErrNotFound):
		case err != nil:
			return err
		default:
			d.Handovers = append(d.Handovers, h)
		}
	}
	d.Audit, err = c.records.Audit(ctx, records.AuditFilter{InvoiceID: inv, Limit: recordsLimit})
	return err
}

// evidenceView is the evidence as the approval page shows it, its figures
// written for the reader's locale.
type evidenceView struct {
	Supplier        string // the supplier's name
	SupplierID      string
	SupplierProblem *problem
	SupplierRef     string
	DocumentDate    string
	PostingDate     string
	DueDate         string // the net due date; empty when the ERP gives no baseline date
	PaymentTerms    string // the key of the terms of payment; empty when none
	CompanyCode     string
	FiscalYear      string
	Gross           string
	InERP           string // the invoice's status in the ERP, in words
	PaymentBlock    string
	Lines           []matchRow
	// Result says what the three-way match found, and ResultCode names it
	// as the agent got it: MATCHED, TOLERANCE_EXCEEDED, or the code of
	// MatchProblem, what the match found instead of a result.
	Result, ResultCode string
	MatchProblem       *problem
	Exceeding          []varianceRow
	Tolerance          string
}

// matchRow is one invoice line set against its PO item and goods
// receipts.
type matchRow struct {
	Item, POID, POItem string
	Material           string
	Invoiced           string // quantity
	InvoicedPrice      string
	Ordered            string
	OrderPrice         string
	Received           string
	Receipts           []string
	Verdict            string // within or over the tolerance; empty without a match
	Over               bool
	// Problem is a read of the line's order or receipts that failed.
	Problem *problem
}

// varianceRow is one variance over the tolerance.
type varianceRow struct {
	Item, POID, POItem string
	What               string // "unit price" or "quantity"
	Invoiced, Against  string
	Percent, Amount    string
	Tolerance          string
}

func mapped(err error) *problem {
	pr := problemOf(errmap.Map(err))
	return &pr
}

func evidenceOf(ev api.Evidence, n numbers) *evidenceView {
	inv := ev.Invoice
	cur := inv.Currency
	v := &evidenceView{SupplierID: inv.SupplierID, SupplierRef: inv.SupplierRef, DocumentDate: day(inv.DocumentDate),
		PostingDate: day(inv.PostingDate), DueDate: day(inv.NetDueDate()), PaymentTerms: inv.PaymentTerms,
		CompanyCode: inv.CompanyCode, FiscalYear: inv.FiscalYear,
		Gross: n.amount(inv.GrossAmount, cur), InERP: string(inv.Status), PaymentBlock: inv.PaymentBlock}
	if inv.SAPStatus != "" {
		v.InERP += " (SAP status " + inv.SAPStatus + ")"
	}
	if ev.SupplierErr != nil {
		v.SupplierProblem = mapped(ev.SupplierErr)
	} else {
		v.Supplier = ev.Supplier.Name
	}
	tol := ev.Tolerance
	lines := map[string]erp.MatchLine{}
	if ev.MatchErr != nil {
		v.MatchProblem = mapped(ev.MatchErr)
		v.ResultCode = v.MatchProblem.Code
		v.Result = "No match result: the match found this instead."
	} else {
		tol = ev.Match.Tolerance
		for _, l := range ev.Match.Lines {
			lines[l.InvoiceItem] = l
		}
		v.ResultCode, _ = errmap.Match(ev.Match.Status)
		v.Result = overWords(ev.Match)
	}
	v.Tolerance = n.percent(tol.Percent) + " / " + n.amount(tol.Absolute, cur)
	qty := func(d decimal.Decimal, unit string) string { return strings.TrimSpace(n.number(d) + " " + unit) }
	for _, le := range ev.Lines {
		row := matchRow{Item: le.Line.Item, POID: le.Line.POID, POItem: le.Line.POItem,
			Invoiced: qty(le.Line.Quantity, le.Line.Unit), InvoicedPrice: n.price(le.Line.UnitPrice(), cur)}
		if le.OrderErr != nil {
			row.Problem = mapped(le.OrderErr)
		} else if it, ok := le.Order.Item(le.Line.POItem); !ok {
			row.Problem = mapped(&erp.NotFoundError{Entity: erp.EntityPOItem, ID: le.Line.POID, Item: le.Line.POItem})
		} else {
			row.Material = strings.TrimSpace(it.Text + " " + parenthesized(it.Material))
			row.Ordered = qty(it.Quantity, it.Unit)
			row.OrderPrice = n.price(it.UnitPrice(), cmp.Or(it.Currency, le.Order.Currency))
			switch {
			case !it.GoodsReceiptBased:
				row.Received = "not receipt-based"
			case le.ReceiptsErr != nil:
				row.Problem = mapped(le.ReceiptsErr)
			default:
				sum := decimal.Zero
				for _, gr := range le.Receipts {
					sum = sum.Add(gr.Quantity)
					row.Receipts = append(row.Receipts, gr.MaterialDocument+" of "+day(gr.PostingDate))
				}
				row.Received = qty(sum, it.Unit)
			}
		}
		if ml, ok := lines[le.Line.Item]; ok {
			row.Over = !ml.WithinTolerance
			row.Verdict = "within the tolerance"
			if row.Over {
				row.Verdict = "over the tolerance"
			}
		}
		v.Lines = append(v.Lines, row)
	}
	if ev.MatchErr == nil {
		for _, va := range ev.Match.Exceeding {
			ml := lines[va.InvoiceItem]
			row := varianceRow{Item: va.InvoiceItem, POID: ml.POID, POItem: ml.POItem, Percent: n.percent(va.Percent),
				Amount: n.amount(va.Amount, cur), Tolerance: v.Tolerance}
			switch va.Kind {
			case erp.PriceVariance:
				row.What, row.Invoiced, row.Against = "unit price", n.price(ml.InvoicedUnitPrice, cur), n.price(ml.POUnitPrice, cur)+" on the PO"
			default:
				row.What, row.Invoiced = "quantity", n.number(ml.InvoicedQuantity)
				row.Against = n.number(ml.OrderedQuantity) + " ordered"
				if ml.GoodsReceiptBased {
					row.Against = n.number(ml.ReceivedQuantity) + " received"
				}
			}
			v.Exceeding = append(v.Exceeding, row)
		}
	}
	return v
}

// overWords says how many of the match's lines are over the tolerance.
func overWords(m erp.MatchResult) string {
	over := 0
	for _, l := range m.Lines {
		if !l.WithinTolerance {
			over++
		}
	}
	switch {
	case over == 0 && len(m.Lines) == 1:
		return "Its line is within the tolerance."
	case over == 0:
		return fmt.Sprintf("All its %d lines are within the tolerance.", len(m.Lines))
	case len(m.Lines) == 1:
		return "Its line is over the tolerance."
	case over == 1:
		return fmt.Sprintf("1 of its %d lines is over the tolerance.", len(m.Lines))
	}
	return fmt.Sprintf("%d of its %d lines are over the tolerance.", over, len(m.Lines))
}

func parenthesized(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// decide sends the person's decision (approve, reject, or send back to
// the agent with a question) to the API's decide_approval
// (POST /approvals/{id}/decision) as that person, so that its checks, the
// segregation of duties among them, and its audit row are the ones every
// decision gets. The person then lands on the next approval of the queue
// they decided from, or on the queue when none is left. A refusal shows
// the approval page again with its five fields and the reason as typed.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, p person) {
	id := r.PathValue("id")
	if !approvalForm.MatchString(id) {
		c.failAs(w, r, p, problemOf(errmap.InvalidPage(http.StatusNotFound, "approval_id", "must be an approval id such as A0000001")))
		return
	}
	q, pr := readQueue(r.PostForm)
	if pr != nil {
		c.failAs(w, r, p, *pr)
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	body, _ := json.Marshal(map[string]string{"decision": r.PostFormValue("decision"), "reason": reason})
	req := httptest.NewRequestWithContext(r.Context(), http.MethodPost, "/approvals/"+id+"/decision", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if rid := r.Header.Get("X-Request-Id"); rid != "" {
		req.Header.Set("X-Request-Id", rid)
	}
	rec := httptest.NewRecorder()
	c.gw.ServeAs(rec, req, p.Name)
	if rec.Code != http.StatusOK {
		pr := problemFromAPI(rec.Code, rec.Body.Bytes())
		explain(&pr, r.URL.Path)
		c.showApproval(w, r, p, id, q, decisionForm{Reason: reason, Problem: &pr}, pr.Status)
		return
	}
	var a struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &a)
	v := q.values()
	v.Set("done", a.Status)
	v.Set("approval_id", id)
	next, err := c.nextInQueue(r.Context(), q, p.Name, id)
	if err != nil {
		// The decision stands; the queue shows what is left.
		c.log.ErrorContext(r.Context(), "console: next approval not found", "error", err)
	}
	if next == "" {
		http.Redirect(w, r, withQuery("/console/approvals", v), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, withQuery(approvalHref(next), v), http.StatusSeeOther)
}

// nextInQueue is the pending approval of the queue that me may decide and
// that comes after the approval decided in the queue's order, or, when none
// comes after it, the first from the start; empty when none is left.
func (c *Console) nextInQueue(ctx context.Context, q queue, me, decided string) (string, error) {
	f := q.filter()
	f.Status, f.NotRequestedBy = records.ApprovalPending, me
	f.Limit, f.After = 1, decided
	for range 2 {
		list, err := c.records.ListApprovals(ctx, f)
		if err != nil || len(list) > 0 {
			if len(list) > 0 {
				return list[0].ID, nil
			}
			return "", err
		}
		f.After = ""
	}
	return "", nil
}
