package sim_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/erpgate/erpgate/erp/sim"
)

func approvalBody(invoice, fy, amt string) map[string]string {
	return map[string]string{"SupplierInvoice": invoice, "FiscalYear": fy, "ProposedAction": "post",
		"Justification": "price variance accepted", "Amount": amt, "Currency": "EUR"}
}

func TestApprovalRouting(t *testing.T) {
	tests := []struct {
		name, invoice, amount string
		opts                  sim.Options
		status                int
		code                  string
		wantStatus, approver  string
	}{
		{name: "auto", invoice: "5105600101", amount: "1000.00", status: 201, wantStatus: "APPROVED", approver: "auto"},
		{name: "at the limit", invoice: "5105600101", amount: "10000.00", status: 201, wantStatus: "APPROVED", approver: "auto"},
		{name: "ap manager", invoice: "5105600102", amount: "13500.00", status: 201, wantStatus: "PENDING", approver: "ap_manager"},
		{name: "finance director", invoice: "5105600102", amount: "150000.00", status: 201, wantStatus: "PENDING", approver: "finance_director"},
		{name: "no approver", invoice: "5105600108", amount: "250000.00", status: 400, code: "ZERPGATE/010"},
		{name: "unknown invoice", invoice: "5105600199", amount: "100.00", status: 404, code: "/IWBEP/CM_MGW_RT/020"},
		{name: "bad amount", invoice: "5105600101", amount: "lots", status: 400, code: "ZERPGATE/002"},
		{name: "no invoice", invoice: "", amount: "1.00", status: 400, code: "ZERPGATE/001"},
		{name: "higher limit", invoice: "5105600102", amount: "13500.00", opts: sim.Options{AutoApproveLimit: decimal.NewFromInt(20000)}, status: 201, wantStatus: "APPROVED", approver: "auto"},
		{name: "negative limit", invoice: "5105600101", amount: "1.00", opts: sim.Options{AutoApproveLimit: decimal.NewFromInt(-1)}, status: 201, wantStatus: "PENDING", approver: "ap_manager"},
		{name: "custom band", invoice: "5105600108", amount: "250000.00", opts: sim.Options{Bands: []sim.Band{{Limit: decimal.NewFromInt(1000000), Approver: "cfo"}}}, status: 201, wantStatus: "PENDING", approver: "cfo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.opts)
			r := e.post(procSrv, "/ApprovalSet", approvalBody(tt.invoice, "2026", tt.amount), "")
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
				if n := len(e.sim.Ledger().Approvals); n != 0 {
					t.Errorf("approvals: got %d, want 0", n)
				}
				return
			}
			if r.status != tt.status {
				t.Fatalf("status: got %d, want %d: %s", r.status, tt.status, r.body)
			}
			a := entity(t, r)
			if a["ApprovalID"] != "A0000001" || a["Status"] != tt.wantStatus || a["Approver"] != tt.approver {
				t.Errorf("approval: got %v %v %v, want A0000001 %s %s", a["ApprovalID"], a["Status"], a["Approver"], tt.wantStatus, tt.approver)
			}
			if decided := a["DecidedAt"] != nil; decided != (tt.wantStatus == "APPROVED") {
				t.Errorf("DecidedAt: got %v for status %s", a["DecidedAt"], tt.wantStatus)
			}
			if loc := r.header.Get("Location"); loc != e.url+procSrv+"/ApprovalSet('A0000001')" {
				t.Errorf("Location: got %q", loc)
			}
			read := entity(t, e.get(procSrv+"/ApprovalSet('A0000001')"))
			if read["Status"] != tt.wantStatus || read["Amount"] != decimal.RequireFromString(tt.amount).StringFixed(2) {
				t.Errorf("read back: got %v", read)
			}
		})
	}
}

func TestApprovalDecisions(t *testing.T) {
	e := newEnv(t, sim.Options{})
	for i, amt := range []string{"13500.00", "150000.00", "500.00"} {
		if r := e.post(procSrv, "/ApprovalSet", approvalBody("5105600102", "2026", amt), ""); r.status != http.StatusCreated {
			t.Fatalf("approval %d: got %d: %s", i, r.status, r.body)
		}
	}
	r := e.admin(http.MethodPost, "/sim/admin/approvals/A0000001/decision", map[string]string{"decision": "approve", "approver": "jane.doe"})
	var a sim.Approval
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatal(err)
	}
	if a.Status != sim.ApprovalApproved || a.DecidedBy != "jane.doe" || a.Approver != "ap_manager" || !a.DecidedAt.Equal(clock) {
		t.Errorf("decided: got %+v", a)
	}
	got := entity(t, e.get(procSrv+"/ApprovalSet('A0000001')"))
	if got["Status"] != "APPROVED" || got["DecidedAt"] == nil {
		t.Errorf("read after decision: got %v", got)
	}

	tests := []struct {
		id, decision string
		status       int
	}{
		{"A0000001", "reject", http.StatusConflict},
		{"A0000003", "approve", http.StatusConflict},
		{"A0000009", "approve", http.StatusNotFound},
		{"A0000002", "maybe", http.StatusBadRequest},
		{"A0000002", "reject", http.StatusOK},
	}
	for _, tt := range tests {
		r := e.do(http.MethodPost, "/sim/admin/approvals/"+tt.id+"/decision", map[string]string{"decision": tt.decision}, nil)
		if r.status != tt.status {
			t.Errorf("%s %s: got %d, want %d: %s", tt.decision, tt.id, r.status, tt.status, r.body)
		}
	}
	if got := entity(t, e.get(procSrv+"/ApprovalSet('A0000002')")); got["Status"] != "REJECTED" || got["Approver"] != "finance_director" {
		t.Errorf("rejected: got %v", got)
	}

	if r := e.post(procSrv, "/ApprovalSet", approvalBody("5105600102", "2026", "20000.00"), ""); r.status != http.StatusCreated {
		t.Fatalf("approval: got %d", r.status)
	}
	goErrs := []struct {
		id, decision string
		want         error
	}{
		{"A0000004", "approve", nil},
		{"A0000004", "approve", sim.ErrNotPending},
		{"A0000042", "approve", sim.ErrNotFound},
		{"A0000004", "", sim.ErrInvalidDecision},
	}
	for _, tt := range goErrs {
		if err := e.sim.Decide(tt.id, tt.decision, ""); !errors.Is(err, tt.want) {
			t.Errorf("Decide(%s, %q): got %v, want %v", tt.id, tt.decision, err, tt.want)
		}
	}
	l := e.sim.Ledger().Approvals
	if len(l) != 4 || l[3].DecidedBy != "ap_manager" || l[3].Status != sim.ApprovalApproved {
		t.Errorf("ledger approvals: got %+v", l)
	}
}

func TestHoldsAndHandovers(t *testing.T) {
	e := newEnv(t, sim.Options{})
	hold := map[string]string{"SupplierInvoice": "5105600105", "FiscalYear": "2026", "Reason": "GR_MISSING", "RecheckAt": "/Date(1796083200000)/"}
	r := e.post(procSrv, "/HoldSet", hold, "hold-1")
	if r.status != http.StatusCreated {
		t.Fatalf("hold: got %d: %s", r.status, r.body)
	}
	h := entity(t, r)
	if h["HoldID"] != "H0000001" || h["SupplierInvoiceStatus"] != "C" || h["RecheckAt"] != "/Date(1796083200000)/" {
		t.Errorf("hold: got %v", h)
	}
	inv := entity(t, e.get(invSrv+"/A_SupplierInvoice(SupplierInvoice='5105600105',FiscalYear='2026')"))
	if inv["SupplierInvoiceStatus"] != "C" || inv["PaymentBlockingReason"] != "H" {
		t.Errorf("held invoice: got status %v block %v", inv["SupplierInvoiceStatus"], inv["PaymentBlockingReason"])
	}
	if again := entity(t, e.post(procSrv, "/HoldSet", hold, "hold-1")); again["HoldID"] != "H0000001" {
		t.Errorf("hold replay: got %v", again["HoldID"])
	}
	badHolds := []struct {
		body   map[string]string
		status int
		code   string
	}{
		{map[string]string{"SupplierInvoice": "5105600199", "FiscalYear": "2026", "RecheckAt": "/Date(0)/"}, 404, "/IWBEP/CM_MGW_RT/020"},
		{map[string]string{"SupplierInvoice": "5105600100", "FiscalYear": "2026", "RecheckAt": "/Date(0)/"}, 400, "ZERPGATE/030"},
		{map[string]string{"SupplierInvoice": "5105600101", "FiscalYear": "2026", "RecheckAt": "soon"}, 400, "ZERPGATE/003"},
	}
	for _, b := range badHolds {
		wantError(t, e.post(procSrv, "/HoldSet", b.body, ""), b.status, b.code)
	}
	wantError(t, e.post(procSrv, "/HoldSet", "{not json", ""), http.StatusBadRequest, "/IWBEP/CM_MGW_RT/004")

	ho := map[string]any{"SupplierInvoice": "5105600105", "Queue": "ap_clerks", "Code": "GR_MISSING",
		"Summary": "No goods receipt for PO 4500018822 item 20", "Evidence": []string{"PO 4500018822/20: no receipt", "receipt 4900000107 cancelled"}}
	r = e.post(procSrv, "/HandoverSet", ho, "")
	if r.status != http.StatusCreated {
		t.Fatalf("handover: got %d: %s", r.status, r.body)
	}
	if got := entity(t, r); got["HandoverID"] != "HO0000001" || got["Status"] != "QUEUED" || got["Queue"] != "ap_clerks" {
		t.Errorf("handover: got %v", got)
	}
	ho["Evidence"] = `["as a string"]`
	ho["SupplierInvoice"] = "5105600199"
	if got := entity(t, e.post(procSrv, "/HandoverSet", ho, "")); got["HandoverID"] != "HO0000002" {
		t.Errorf("second handover: got %v", got["HandoverID"])
	}
	wantError(t, e.post(procSrv, "/HandoverSet", map[string]any{"SupplierInvoice": "5105600105"}, ""), http.StatusBadRequest, "ZERPGATE/004")
	wantError(t, e.post(procSrv, "/HandoverSet", map[string]any{"SupplierInvoice": "5105600105", "Queue": "q", "Evidence": 7}, ""), http.StatusBadRequest, "ZERPGATE/005")

	l := e.sim.Ledger()
	if len(l.Holds) != 1 || l.Holds[0].Reason != "GR_MISSING" || l.Holds[0].RepeatabilityID != "hold-1" {
		t.Errorf("ledger holds: got %+v", l.Holds)
	}
	if len(l.Handovers) != 2 || len(l.Handovers[0].Evidence) != 2 || l.Handovers[1].Evidence[0] != "as a string" || l.Handovers[0].Code != "GR_MISSING" {
		t.Errorf("ledger handovers: got %+v", l.Handovers)
	}
	l.Handovers[0].Evidence[0] = "changed"
	if got := e.sim.Ledger().Handovers[0].Evidence[0]; got == "changed" {
		t.Errorf("Ledger returned shared evidence slice")
	}

	// A held invoice is still parked: it can be released and keeps its
	// payment block.
	e.post(procSrv, "/HoldSet", map[string]string{"SupplierInvoice": "5105600101", "FiscalYear": "2026", "RecheckAt": "/Date(1796083200000)/"}, "")
	r = e.release("5105600101", "2026", "")
	if r.status != http.StatusOK {
		t.Fatalf("release of held invoice: got %d: %s", r.status, r.body)
	}
	if rel := entity(t, r)["Release"].(map[string]any); rel["SupplierInvoiceStatus"] != "5" || rel["PaymentBlockingReason"] != "H" {
		t.Errorf("release of held invoice: got %v, want status 5 block H", rel)
	}
}
