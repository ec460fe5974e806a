package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestIntegerIDsInBodies sends the ids of request bodies as JSON integers,
// as models send SAP's all-digit ids: each is the call with the digits as
// text, to the idempotency store too (the same key with the id as text
// replays the write). A number that is not a plain integer, or whose
// digits are not an id of the field's form, is the five-field
// INVALID_REQUEST naming the field, and nothing is written. The contract
// keeps the ids' type string, so the calls go around the contract-checking
// transport.
func TestIntegerIDsInBodies(t *testing.T) {
	s := newStack(t)
	post := func(path, body string, header ...string) (int, http.Header, map[string]any) {
		t.Helper()
		req, err := http.NewRequest("POST", s.gw.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %v\n%s", path, body, err, raw)
		}
		return resp.StatusCode, resp.Header, m
	}

	// An unknown invoice is the ERP's answer, not a wrong type.
	st, _, m := post("/handovers", `{"invoice_id": 5105600999, "summary": "Invoice 5105600999 is not in the ERP."}`)
	if d, _ := m["details"].(map[string]any); st != 404 || m["code"] != "INVOICE_NOT_FOUND" || d["invoice_id"] != "5105600999" {
		t.Errorf("hand_over of 5105600999 as an integer: %d %v, want 404 INVOICE_NOT_FOUND", st, m)
	}

	first := `{"invoice_id":5105600103,"code":"PO_NOT_FOUND","summary":"PO 4500019822 does not exist.","idempotency_key":"int-ho-1"}`
	st, _, ho := post("/handovers", first)
	if st != 200 || ho["invoice_id"] != "5105600103" || ho["status"] != "queued" {
		t.Fatalf("hand_over of 5105600103 as an integer: %d %v", st, ho)
	}
	again := strings.Replace(first, "5105600103", `"5105600103"`, 1)
	st, h, replay := post("/handovers", again)
	if st != 200 || replay["handover_id"] != ho["handover_id"] || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same hand_over with the id as text, same key: %d %v, want the replay of %v", st, replay, ho["handover_id"])
	}

	for _, c := range []struct{ path, body, field string }{
		{"/handovers", `{"invoice_id":5105600103.5,"code":"PO_NOT_FOUND"}`, "invoice_id"},
		{"/handovers", `{"invoice_id":5105600103.0,"code":"PO_NOT_FOUND"}`, "invoice_id"},
		{"/handovers", `{"invoice_id":1e3,"code":"PO_NOT_FOUND"}`, "invoice_id"},
		{"/handovers", `{"invoice_id":-5105600103,"code":"PO_NOT_FOUND"}`, "invoice_id"},
		{"/handovers", `{"invoice_id":12,"code":"PO_NOT_FOUND"}`, "invoice_id"},
		{"/handovers", `{"invoice_id":"5105600103","code":"PO_NOT_FOUND","summary":42}`, "summary"},
		{"/invoices/5105600101/post", `{"approval_id":1.5}`, "approval_id"},
	} {
		st, _, m := post(c.path, c.body)
		d, _ := m["details"].(map[string]any)
		if st != 400 || len(m) != 5 || m["code"] != "INVALID_REQUEST" || d["field"] != c.field {
			t.Errorf("%s %s: %d %v, want 400 INVALID_REQUEST naming %s", c.path, c.body, st, m, c.field)
		}
	}
	if n := s.counts().handovers; n != 1 {
		t.Errorf("records hold %d handovers, want the one", n)
	}
}

// TestIDsWithSAPsLeadingZeros sends item numbers and supplier ids as SAP
// stores them, with the leading zeros of its ALPHA conversion: each is the
// id without them, as SAP's own screens and services show it. An id with a
// letter keeps its zeros.
func TestIDsWithSAPsLeadingZeros(t *testing.T) {
	s := newStack(t)
	for _, c := range []struct{ padded, plain string }{
		{"/purchase-orders/4500018822/items/00010/goods-receipts", "/purchase-orders/4500018822/items/10/goods-receipts"},
		{"/purchase-orders/4500018822/items/010/goods-receipts", "/purchase-orders/4500018822/items/10/goods-receipts"},
		{"/suppliers/0000100042", "/suppliers/100042"},
	} {
		padded, plain := s.do("GET", c.padded, nil), s.do("GET", c.plain, nil)
		if plain.status != http.StatusOK {
			t.Fatalf("%s: %d %s", c.plain, plain.status, plain.body)
		}
		if padded.status != http.StatusOK || string(padded.body) != string(plain.body) {
			t.Errorf("%s: %d %s\nwant the answer of %s: %s", c.padded, padded.status, padded.body, c.plain, plain.body)
		}
	}
	// Letters and digits: no ALPHA conversion, the id as sent.
	r := s.do("GET", "/suppliers/00A10042", nil)
	if d := wantError(t, r, http.StatusNotFound, "SUPPLIER_NOT_FOUND", "fix_input_and_retry"); d["supplier_id"] != "00A10042" {
		t.Errorf("supplier 00A10042: details %v", d)
	}
}
