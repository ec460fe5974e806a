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
	// invoiceLease writes hold their invoice's write lease while they run,
	// so that two of them never act on one invoice at once on any replica:
	// each reads the invoice's state before it writes.
	invoiceLease bool
	// create writes make a record that the same arguments in the same run
	// find again: the run's guard answers their repeat with that record
	// instead of refusing it as a loop.
	create bool
}

var (
	opGetInvoice       = operation{name: "get_invoice", scope: ScopeRead}
	opGetPurchaseOrder = operation{name: "get_purchase_order", scope: ScopeRead}
	opGetSupplier      = operation{name: "get_supplier", scope: ScopeRead}
	opSearchSuppliers  = operation{name: "search_suppliers", scope: ScopeRead}
	opGetGoodsReceipt  = operation{name: "get_goods_receipt", scope: ScopeRead}
	opThreeWayMatch    = operation{name: "run_three_way_match", scope: ScopeRead}
	opRequestApproval  = operation{name: "request_approval", scope: ScopeWrite, write: true, create: true}
	opGetApproval      = operation{name: "get_approval", scope: ScopeRead}
	opPostInvoice      = operation{name: "post_invoice", scope: ScopeWrite, write: true, invoiceLease: true}
	opHoldInvoice      = operation{name: "hold_invoice", scope: ScopeWrite, write: true, invoiceLease: true, create: true}
	opGetHold          = operation{name: "get_hold", scope: ScopeRead}
	opGetCase          = operation{name: "get_case", scope: ScopeRead}
	opHandOver         = operation{name: "hand_over", scope: ScopeWrite, write: true, budgetFree: true, create: true}
	opGetRun           = operation{name: "get_run", scope: ScopeRead, noRun: true}
	opDecideApproval   = operation{name: "decide_approval", scope: ScopeApprove, write: true, noRun: true}
	opListApprovals    = operation{name: "list_approvals", scope: ScopeApprove, noRun: true}
	opListHandovers    = operation{name: "list_handovers", scope: ScopeReview, noRun: true}
	opGetAudit         = operation{name: "get_audit", scope: ScopeAudit, noRun: true}
)

// operations lists every operation, in the contract's order.
var operations = []operation{
	opGetInvoice, opGetPurchaseOrder, opGetSupplier, opSearchSuppliers, opGetGoodsReceipt,
	opThreeWayMatch, opRequestApproval, opGetApproval, opPostInvoice, opHoldInvoice, opGetHold, opGetCase, opHandOver, opGetRun,
	opDecideApproval, opListApprovals, opListHandovers, opGetAudit,
}

// routes is the whole HTTP surface of the gateway.
func (s *Server) routes(r chi.Router) {
	// The MCP endpoint (MountMCP) serves the operations as MCP tools. Each
	// tool call comes back to this router as a REST request, which the
	// middleware below gives its id, access-log line and panic recovery.
	r.Handle("/mcp", http.HandlerFunc(s.serveMCP))

	r.Group(func(r chi.Router) {
		r.Use(s.requestID, s.accessLog, s.recoverPanic) // middleware.go
		r.NotFound(s.notFound)
		r.MethodNotAllowed(s.methodNotAllowed)

		r.Method(http.MethodGet, "/healthz", s.monitoringEndpoint(http.HandlerFunc(s.handleHealth)))
		r.Method(http.MethodGet, "/readyz", s.monitoringEndpoint(http.HandlerFunc(s.handleReady)))
		r.Method(http.MethodGet, "/metrics", s.monitoringEndpoint(s.metrics.Handler()))
		r.Get("/openapi.json", s.handleContract("application/json", s.contractJSON, s.flatContract()))
		r.Get("/openapi.yaml", s.handleContract("application/yaml", s.contractYAML, nil))
		r.Get("/swagger.json", s.handleContract("application/json", s.contractSwagger, nil))
		r.Get("/people/openapi.json", s.handleContract("application/json", s.peopleJSON, nil))
		r.Get("/people/openapi.yaml", s.handleContract("application/yaml", s.peopleYAML, nil))
		r.Get(resourceMetadataPath, s.handleResourceMetadata) // oauth.go: RFC 9728, only with Options.OAuth

		// Every operation is these steps, each in its own file, around the
		// operation's function. A step acts on the way in (it may answer
		// the call itself, as a refusal or a replay), on the way back, or
		// both; on the way back the order is the reverse.
		serve := s.pipeline(
			s.respond,        // step_respond.go: write the answer, X-Run-Id, metrics, the access log's operation and code
			s.identifyCaller, // step_identify.go: the client, by its API key or access token: UNAUTHENTICATED
			s.checkScope,     // step_authorize.go: the operation's scope: SCOPE_MISSING
			s.limitRate,      // step_ratelimit.go: the client's calls per window: RATE_LIMITED
			s.readArgs,       // step_body.go: the body, bounded, and its arguments: INVALID_REQUEST
			s.idempotency,    // step_idempotency.go: writes: replay, or claim key and lease; back: settle them with the audit row
			s.auditWrite,     // step_audit.go: writes, back: compose the audit log's row
			s.guardRun,       // step_run.go: the run's loop limits; back: the run's history
		)

		erp, ap := s.invoices, s.ap
		r.Method(http.MethodGet, "/invoices/{invoice_id}", serve(opGetInvoice, handleGetInvoice(erp)))
		r.Method(http.MethodPost, "/invoices/{invoice_id}/three-way-match", serve(opThreeWayMatch, handleThreeWayMatch(ap)))
		r.Method(http.MethodPost, "/invoices/{invoice_id}/approvals", serve(opRequestApproval, handleRequestApproval(ap)))
		r.Method(http.MethodPost, "/invoices/{invoice_id}/post", serve(opPostInvoice, handlePostInvoice(ap, s.records)))
		r.Method(http.MethodPost, "/invoices/{invoice_id}/hold", serve(opHoldInvoice, handleHoldInvoice(ap, s.metrics, s.now)))
		r.Method(http.MethodGet, "/invoices/{invoice_id}/case", serve(opGetCase, handleGetCase(ap)))
		r.Method(http.MethodGet, "/holds/{hold_id}", serve(opGetHold, handleGetHold(ap)))
		r.Method(http.MethodGet, "/purchase-orders/{po_id}", serve(opGetPurchaseOrder, handleGetPurchaseOrder(erp)))
		r.Method(http.MethodGet, "/purchase-orders/{po_id}/items/{item}/goods-receipts", serve(opGetGoodsReceipt, handleGetGoodsReceipt(ap)))
		r.Method(http.MethodGet, "/suppliers", serve(opSearchSuppliers, handleSearchSuppliers(erp)))
		r.Method(http.MethodGet, "/suppliers/{supplier_id}", serve(opGetSupplier, handleGetSupplier(erp)))
		r.Method(http.MethodGet, "/approvals/{approval_id}", serve(opGetApproval, handleGetApproval(ap)))
		r.Method(http.MethodPost, "/handovers", serve(opHandOver, handleHandOver(ap, s.runs, s.records, s.metrics)))
		r.Method(http.MethodGet, "/runs/{run_id}", serve(opGetRun, handleGetRun(s.runs)))

		// The operations of people: approvers decide, the AP team works the
		// handovers, auditors read the log.
		records := s.records
		r.Method(http.MethodGet, "/approvals", serve(opListApprovals, handleListApprovals(records)))
		r.Method(http.MethodPost, "/approvals/{approval_id}/decision", serve(opDecideApproval, handleDecideApproval(ap, s.kick)))
		r.Method(http.MethodGet, "/handovers", serve(opListHandovers, handleListHandovers(records)))
		r.Method(http.MethodGet, "/audit", serve(opGetAudit, handleGetAudit(records)))
	})
}
