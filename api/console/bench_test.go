package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp/records"
)

// BenchmarkPages renders each page of the console, server-side (through
// the handler, no network), with 1,000 handovers in the store, each with a
// run history, beside 200 pending approvals and 200 holds. It prints the
// time per page in ms/page; the goal is under 100 ms. The case page is
// that of the first approval's invoice; the approval page is that of an
// agent's approval of 5105600102, with its evidence read from the
// simulated ERP over HTTP.
func BenchmarkPages(b *testing.B) {
	s := newSite(b)
	ctx := context.Background()
	history := runHistory()
	for i := range 1000 {
		if _, _, err := s.records.CreateHandover(ctx, records.Handover{InvoiceID: fmt.Sprintf("51%08d", i), Queue: "ap_queue",
			Code: "PO_NOT_FOUND", Summary: "Invoice references PO 4500019822, which does not exist.",
			Evidence: []string{"PO 4500019822 not found", "4500018822 is the likely PO"}, History: history, CreatedBy: "agent"}, false); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 200 {
		if _, _, err := s.records.CreateApproval(ctx, records.Approval{InvoiceID: fmt.Sprintf("52%08d", i), FiscalYear: "2026",
			CompanyCode: "1010", Status: records.ApprovalPending, Approver: "ap_manager", ProposedAction: "accept_variance",
			Justification: "Surcharge.", Amount: decimal.RequireFromString("13500.00"), Currency: "EUR", RequestedBy: "agent"}, false); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.records.CreateHold(ctx, records.Hold{InvoiceID: fmt.Sprintf("53%08d", i), FiscalYear: "2026",
			Reason: "Waiting for the goods receipt.", RecheckAt: time.Now().Add(time.Hour),
			Awaiting: []records.POItemRef{{POID: "4500018822", Item: "20"}}, CreatedBy: "agent"}); err != nil {
			b.Fatal(err)
		}
	}
	// The approval of 5105600102, whose page reads its evidence from the
	// simulated ERP.
	approval := s.requestApproval("accept_variance")
	list, err := s.records.ListHandovers(ctx, records.HandoverFilter{Page: records.Page{Limit: 1}})
	if err != nil {
		b.Fatal(err)
	}
	br := s.browser()
	br.signIn(kellerKey)
	cookies := br.c.Jar.Cookies(mustParse(s.url + "/console/"))
	handler := s.handler
	for _, path := range []string{"/", "/docs", "/console/handovers", "/console/handovers?queue=ap_queue&status=queued",
		"/console/handovers/" + list[0].ID, "/console/approvals", "/console/approvals?approver=ap_manager&amount_from=10000&sort=newest",
		"/console/approvals/" + approval, "/console/holds", "/console/cases/5200000000", "/console/runs?run_id=run-0042", "/console/health"} {
		name := strings.TrimPrefix(path, "/")
		if name == "" {
			name = "landing"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				for _, c := range cookies {
					req.AddCookie(c)
				}
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
				}
				_, _ = io.Copy(io.Discard, rec.Body)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}

// runHistory is the run history of the README's run-0042: two matches of
// 5105600103 and the handover.
func runHistory() string {
	return `{"run_id":"run-0042","started_at":"2026-12-01T10:00:00Z","updated_at":"2026-12-01T10:00:02Z","budget_per_invoice":12,` +
		`"invoices":[{"invoice_id":"5105600103","calls":3,"remaining":9}],` +
		`"calls":[{"seq":1,"at":"2026-12-01T10:00:00Z","operation":"run_three_way_match","invoice_id":"5105600103","code":"PO_NOT_FOUND","refused":false},` +
		`{"seq":2,"at":"2026-12-01T10:00:01Z","operation":"run_three_way_match","invoice_id":"5105600103","code":"LOOP_DETECTED","refused":true}],` +
		`"errors":[{"seq":1,"operation":"run_three_way_match","code":"PO_NOT_FOUND","message":"PO 4500019822 is not in the ERP.","retryable":false,"next_action":"fix_input_and_retry","details":{"po_id":"4500019822","queue":"ap_queue"}},` +
		`{"seq":2,"operation":"run_three_way_match","code":"LOOP_DETECTED","message":"run_three_way_match already ran with these arguments in this run.","retryable":false,"next_action":"route_to_person","details":{"limit":"identical_repeat"}}]}`
}
