package mcp_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/api"
)

// TestSentBackIsAnErrorResult: get_approval of an approval a person sent
// back with a question is a tool result with isError, whose text is the
// REST body: the five fields of APPROVAL_SENT_BACK with the question.
func TestSentBackIsAnErrorResult(t *testing.T) {
	const key = "key-of-m.keller"
	sum := sha256.Sum256([]byte(key))
	keller, err := api.ParseCredential("m.keller:" + hex.EncodeToString(sum[:]) + ":approve")
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, func(o *api.Options) { o.DemoPeople = []api.Credential{keller} })
	cs := s.connect()
	a := call(t, cs, "request_approval", map[string]any{"invoice_id": "5105600102", "proposed_action": "accept_variance",
		"justification": "Unit price 8 % over the PO; the supplier cites a surcharge."})
	if a.IsError {
		t.Fatalf("request_approval: %s", text(t, a))
	}
	id := object(t, a)["approval_id"].(string)

	// The person sends it back, with their key, over REST.
	const question = "Which clause of the contract allows the surcharge?"
	body, _ := json.Marshal(map[string]any{"decision": "send_back", "reason": question})
	req, err := http.NewRequest("POST", s.url+"/approvals/"+id+"/decision", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("send back: %d", resp.StatusCode)
	}

	res := call(t, cs, "get_approval", map[string]any{"approval_id": id})
	if !res.IsError || res.StructuredContent != nil {
		t.Errorf("get_approval of the approval sent back: isError %v, structuredContent %v; want an error result", res.IsError, res.StructuredContent)
	}
	status, rest := s.rest("GET", "/approvals/"+id, nil)
	if got, want := text(t, res), strings.TrimSuffix(string(rest), "\n"); status != http.StatusConflict || got != want {
		t.Errorf("text differs from the REST body (%d)\n got: %s\nwant: %s", status, got, want)
	}
	m := object(t, res)
	d, _ := m["details"].(map[string]any)
	if len(m) != 5 || m["code"] != "APPROVAL_SENT_BACK" || m["next_action"] != "request_approval" || m["retryable"] != false ||
		d["question"] != question || d["approval_id"] != id || d["asked_by"] != "m.keller" {
		t.Errorf("the error result: %v", m)
	}
}
