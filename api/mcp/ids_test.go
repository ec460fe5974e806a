package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectAs opens an MCP session in the given protocol revision and lists
// the tools, as a client does before calling one.
func (s *stack) connectAs(version string) *sdk.ClientSession {
	s.t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "erpgate-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{}},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		s.t.Fatalf("the session speaks %s, want %s", got, version)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		s.t.Fatal(err)
	}
	return cs
}

// revisions are the protocol revisions the tests call in: the last one
// with an initialize, and the one with per-request _meta and the standard
// headers.
var revisions = []string{"2025-11-25", "2026-07-28"}

// paths are the two ways a tools/call is answered: the direct path, and
// the SDK's handler, its reference.
var paths = []struct {
	name    string
	sdkOnly bool
}{{"direct", false}, {"sdk", true}}

// TestIntegerIDsAreTheirDigits sends ids as JSON integers, as models and
// the MCP Inspector send SAP's all-digit ids, in a path argument, a path
// and query pair, and a body field, on both paths and in both revisions:
// each is the call with the digits as text. A number that is not a plain
// integer (a fraction, an exponent, a sign), or whose digits are not an id
// of the field's form, is the five-field INVALID_REQUEST naming the field,
// as a tool result; so is an integer in a field that holds no id.
func TestIntegerIDsAreTheirDigits(t *testing.T) {
	for _, p := range paths {
		for _, version := range revisions {
			t.Run(p.name+"/"+version, func(t *testing.T) {
				s := newStack(t)
				s.mcp.SetSDKOnly(p.sdkOnly)
				cs := s.connectAs(version)
				before := s.mcp.DirectAnswers()

				m := object(t, call(t, cs, "get_invoice", json.RawMessage(`{"invoice_id": 5105600999}`)))
				if d, _ := m["details"].(map[string]any); m["code"] != "INVOICE_NOT_FOUND" || d["invoice_id"] != "5105600999" {
					t.Errorf("get_invoice 5105600999 as an integer: %v, want INVOICE_NOT_FOUND for 5105600999", m)
				}
				res := call(t, cs, "get_invoice", json.RawMessage(`{"invoice_id":5105600101}`))
				if res.IsError || object(t, res)["invoice_id"] != "5105600101" {
					t.Errorf("get_invoice 5105600101 as an integer: %s", text(t, res))
				}
				// An item number is written without SAP's leading zeros, the
				// form an integer has.
				asText := call(t, cs, "get_goods_receipt", map[string]any{"po_id": "4500018822", "item": "10"})
				asInt := call(t, cs, "get_goods_receipt", json.RawMessage(`{"po_id":4500018822,"item":10}`))
				if asInt.IsError || text(t, asInt) != text(t, asText) {
					t.Errorf("get_goods_receipt 4500018822 item 10 as integers:\n%s\nwant as for text:\n%s", text(t, asInt), text(t, asText))
				}
				h := object(t, call(t, cs, "hand_over", json.RawMessage(`{"invoice_id":5105600103,"code":"PO_NOT_FOUND",`+
					`"summary":"Invoice references PO 4500019822, which does not exist."}`)))
				if h["invoice_id"] != "5105600103" || h["status"] != "queued" {
					t.Errorf("hand_over with invoice_id an integer: %v", h)
				}

				for _, c := range []struct{ tool, args, field string }{
					{"get_invoice", `{"invoice_id":5105600999.5}`, "invoice_id"},
					{"get_invoice", `{"invoice_id":5105600999.0}`, "invoice_id"},
					{"get_invoice", `{"invoice_id":1e3}`, "invoice_id"},
					{"get_invoice", `{"invoice_id":-5105600999}`, "invoice_id"},
					{"get_invoice", `{"invoice_id":12}`, "invoice_id"},
					{"get_hold", `{"hold_id":1234567}`, "hold_id"},
					{"get_goods_receipt", `{"po_id":"4500018822","item":123456}`, "item"},
					{"hand_over", `{"invoice_id":5105600103.5,"code":"PO_NOT_FOUND"}`, "invoice_id"},
					{"hand_over", `{"invoice_id":12,"code":"PO_NOT_FOUND"}`, "invoice_id"},
					{"search_suppliers", `{"name":42}`, "name"},
				} {
					res := call(t, cs, c.tool, json.RawMessage(c.args))
					m := object(t, res)
					d, _ := m["details"].(map[string]any)
					if !res.IsError || len(m) != 5 || m["code"] != "INVALID_REQUEST" || d["field"] != c.field {
						t.Errorf("%s %s: %s, want the five-field INVALID_REQUEST naming %s", c.tool, c.args, text(t, res), c.field)
					}
				}
				direct := s.mcp.DirectAnswers() - before
				if want := map[bool]int64{true: 0, false: 15}[p.sdkOnly]; direct != want {
					t.Errorf("the direct path answered %d calls, want %d", direct, want)
				}
			})
		}
	}
}
