package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBodyMayRepeatThePathParameter sends what bridges that put every tool
// argument in the body send: the path's invoice_id again in the body. The
// same value, as text or as a JSON integer of its digits, is the call
// without it; another value, or null, is INVALID_REQUEST naming the field,
// and nothing is written. The contract
// does not declare the field (a client that follows it never sends one), so
// the calls go around the contract-checking transport.
func TestBodyMayRepeatThePathParameter(t *testing.T) {
	s := newStack(t)
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest("POST", s.gw.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, raw)
		}
		return resp.StatusCode, m
	}

	if st, m := post("/invoices/5105600102/three-way-match", `{"invoice_id":"5105600102"}`); st != 200 || m["result"] != "TOLERANCE_EXCEEDED" {
		t.Errorf("match with the path's invoice_id in the body: %d %v, want 200 TOLERANCE_EXCEEDED", st, m)
	}
	if st, m := post("/invoices/5105600102/three-way-match", `{"invoice_id":5105600102}`); st != 200 || m["result"] != "TOLERANCE_EXCEEDED" {
		t.Errorf("match with the path's invoice_id as an integer in the body: %d %v, want 200 TOLERANCE_EXCEEDED", st, m)
	}
	for _, body := range []string{`{"invoice_id":"5105600101"}`, `{"invoice_id":5105600101}`, `{"invoice_id":5105600102.0}`, `{"invoice_id":null}`} {
		st, m := post("/invoices/5105600102/three-way-match", body)
		d, _ := m["details"].(map[string]any)
		if st != 400 || m["code"] != "INVALID_REQUEST" || d["field"] != "invoice_id" {
			t.Errorf("match with body %s: %d %v, want 400 INVALID_REQUEST naming invoice_id", body, st, m)
		}
	}

	// A write with the echo is the write without it: it applies once, and
	// the same key replays it.
	hold := `{"invoice_id":"5105600105","reason":"Goods receipt for PO 4500018822 item 20 missing.","idempotency_key":"echo-hold-1"}`
	st, first := post("/invoices/5105600105/hold", hold)
	if st != 200 || first["status"] != "held" {
		t.Fatalf("hold with the echo: %d %v", st, first)
	}
	st, again := post("/invoices/5105600105/hold", `{"reason":"Goods receipt for PO 4500018822 item 20 missing.","idempotency_key":"echo-hold-1"}`)
	if st != 200 || again["hold_id"] != first["hold_id"] {
		t.Errorf("the same hold without the echo, same key: %d %v, want the replay of %v", st, again, first["hold_id"])
	}
	if st, m := post("/invoices/5105600105/hold", `{"invoice_id":"5105600101","reason":"x","idempotency_key":"echo-hold-2"}`); st != 400 || m["code"] != "INVALID_REQUEST" {
		t.Errorf("hold naming another invoice in the body: %d %v, want 400 INVALID_REQUEST", st, m)
	}
}
