package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/records/recordstest"
	"github.com/erpgate/erpgate/erp/sim"
)

// TestReplicasPostOnce starts two gateways as two replicas, over one ERP
// and one PostgreSQL database, and posts one invoice from both at once:
// one Post reaches the ERP, and every call answers that the invoice is
// posted.
func TestReplicasPostOnce(t *testing.T) {
	erpSim := sim.New(sim.Options{Faults: []sim.FaultRule{{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultHang,
		Method: http.MethodPost, Path: "Post", DelayMS: 100, Count: -1}}})
	erpSrv := httptest.NewServer(erpSim)
	defer erpSrv.Close()
	db := recordstest.PostgresURL(t)
	var urls []string
	for range 2 {
		gw, err := New(context.Background(), Config{ERPURL: erpSrv.URL, DatabaseURL: db})
		if err != nil {
			t.Fatal(err)
		}
		defer gw.Close()
		srv := httptest.NewServer(gw.Handler())
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	post := func(url, path string, body any) (int, map[string]any) {
		raw, _ := json.Marshal(body)
		resp, err := http.Post(url+path, "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return resp.StatusCode, m
	}
	status, appr := post(urls[0], "/invoices/5105600101/approvals", map[string]any{"proposed_action": "post_as_invoiced",
		"justification": "Matched against the purchase order and its goods receipt."})
	if status != 200 || appr["status"] != "approved" {
		t.Fatalf("approval: %d %v", status, appr)
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	byThisCall := 0
	for i := range 8 {
		wg.Go(func() {
			status, m := post(urls[i%2], "/invoices/5105600101/post", map[string]any{"approval_id": appr["approval_id"]})
			mu.Lock()
			defer mu.Unlock()
			if status != 200 || m["status"] != "posted" {
				t.Errorf("post %d: %d %v, want 200 posted", i, status, m)
			}
			if m["already_posted"] == false {
				byThisCall++
			}
		})
	}
	wg.Wait()
	var posts int
	for _, st := range erpSim.FaultStats() {
		posts += st.Matched
	}
	if posts != 1 || len(erpSim.Ledger().Postings) != 1 || byThisCall != 1 {
		t.Errorf("%d Posts at the ERP, %d postings, %d answers posted by their call; want 1, 1 and 1",
			posts, len(erpSim.Ledger().Postings), byThisCall)
	}
}
