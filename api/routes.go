package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// Scopes a client's credentials can carry.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
	// ScopePost is what post_invoice needs instead of write when the
	// server is configured with Options.PostScope.
	ScopePost = "post"
	// ScopeApprove lets a person decide approvals; no agent's key should
	// carry it.
	ScopeApprove = "approve"
	// ScopeReview lets the AP team list handovers.
	ScopeReview = "review"
	// ScopeAudit lets an auditor read the audit log.
	ScopeAudit = "audit"
)

// Scopes lists every scope, in the order the README gives them.
var Scopes = []string{ScopeRead, ScopeWrite, ScopePost, ScopeApprove, ScopeReview, ScopeAudit}

// operation is one tool of the contract: its operationId, the scope it
// needs, and whether it changes ERP state (writes take idempotency keys).
type operation struct {
	name  string
	scope string
	write bool
	// budgetFree operations do not count against the run's tool-call
	// budget: handing over must stay possible once the budget is spent.
	budgetFree bool
	// noRun operations are not part of a run: reading a run's history,
	// and the operations of people.
	noRun bool
}

var (
	opGetInvoice       = operation{name: "get_invoice", scope: ScopeRead}
	opGetPurchaseOrder = operation{name: "get_purchase_order", scope: ScopeRead}
	opGetSupplier      = operation{name: "get_supplier", scope: ScopeRead}
	opSearchSuppliers  = operation{name: "search_suppliers", scope: ScopeRead}
	opGetGoodsReceipt  = operation{name: "get_goods_receipt", scope: ScopeRead}
	opThreeWayMatch    = operation{name: "run_three_way_match", scope: ScopeRead}
	opRequestApproval  = operation{name: "request_approval", scope: ScopeWrite, write: true}
	opGetApproval      = operation{name: "get_approval", scope: ScopeRead}
	opPostInvoice      = operation{name: "post_invoice", scope: ScopeWrite, write: true}
	opHoldInvoice      = operation{name: "hold_invoice", scope: ScopeWrite, write: true}
	opHandOver         = operation{name: "hand_over", scope: ScopeWrite, write: true, budgetFree: true}
	opGetRun           = operation{name: "get_run", scope: ScopeRead, noRun: true}
	opDecideApproval   = operation{name: "decide_approval", scope: ScopeApprove, write: true, noRun: true}
	opListApprovals    = operation{name: "list_approvals", scope: ScopeApprove, noRun: true}
	opListHandovers    = operation{name: "list_handovers", scope: ScopeReview, noRun: true}
	opGetAudit         = operation{name: "get_audit", scope: ScopeAudit, noRun: true}
)

// operations lists every operation, in the contract's order.
var operations = []operation{
	opGetInvoice, opGetPurchaseOrder, opGetSupplier, opSearchSuppliers, opGetGoodsReceipt,
	opThreeWayMatch, opRequestApproval, opGetApproval, opPostInvoice, opHoldInvoice, opHandOver, opGetRun,
	opDecideApproval, opListApprovals, opListHandovers, opGetAudit,
}

// routes is the whole HTTP surface of the gateway.
func (s *Server) routes(r chi.Router) {
	r.Use(s.requestID, s.accessLog, s.recoverPanic)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Method(http.MethodGet, "/healthz", s.ops(http.HandlerFunc(s.handleHealth)))
	r.Method(http.MethodGet, "/readyz", s.ops(http.HandlerFunc(s.handleReady)))
	r.Method(http.MethodGet, "/metrics", s.ops(s.metrics.Handler()))
	r.Get("/openapi.json", s.handleContract("application/json", s.contractJSON))
	r.Get("/openapi.yaml", s.handleContract("application/yaml", s.contractYAML))
	r.Get("/swagger.json", s.handleContract("application/json", s.contractSwagger))

	erp, proc := s.erp, s.process
	r.Method(http.MethodGet, "/invoices/{invoice_id}", s.op(opGetInvoice, handleGetInvoice(erp)))
	r.Method(http.MethodPost, "/invoices/{invoice_id}/three-way-match", s.op(opThreeWayMatch, handleThreeWayMatch(proc)))
	r.Method(http.MethodPost, "/invoices/{invoice_id}/approvals", s.op(opRequestApproval, handleRequestApproval(proc)))
	r.Method(http.MethodPost, "/invoices/{invoice_id}/post", s.op(opPostInvoice, handlePostInvoice(proc, s.records)))
	r.Method(http.MethodPost, "/invoices/{invoice_id}/hold", s.op(opHoldInvoice, handleHoldInvoice(proc, s.metrics, s.now)))
	r.Method(http.MethodGet, "/purchase-orders/{po_id}", s.op(opGetPurchaseOrder, handleGetPurchaseOrder(erp)))
	r.Method(http.MethodGet, "/purchase-orders/{po_id}/items/{item}/goods-receipts", s.op(opGetGoodsReceipt, handleGetGoodsReceipt(proc)))
	r.Method(http.MethodGet, "/suppliers", s.op(opSearchSuppliers, handleSearchSuppliers(erp)))
	r.Method(http.MethodGet, "/suppliers/{supplier_id}", s.op(opGetSupplier, handleGetSupplier(erp)))
	r.Method(http.MethodGet, "/approvals/{approval_id}", s.op(opGetApproval, handleGetApproval(proc)))
	r.Method(http.MethodPost, "/handovers", s.op(opHandOver, handleHandOver(proc, s.runs, s.metrics)))
	r.Method(http.MethodGet, "/runs/{run_id}", s.op(opGetRun, handleGetRun(s.runs)))

	// The operations of people: approvers decide, the AP team works the
	// handovers, auditors read the log.
	rec := s.records
	r.Method(http.MethodGet, "/approvals", s.op(opListApprovals, handleListApprovals(rec)))
	r.Method(http.MethodPost, "/approvals/{approval_id}/decision", s.op(opDecideApproval, handleDecideApproval(proc, len(s.creds) > 0)))
	r.Method(http.MethodGet, "/handovers", s.op(opListHandovers, handleListHandovers(rec)))
	r.Method(http.MethodGet, "/audit", s.op(opGetAudit, handleGetAudit(rec)))
}
