package mcp

import "encoding/json"

// idArguments are the arguments that hold an id: the ERP's (an invoice, a
// purchase order, its item, a supplier) or the gateway's (an approval, a
// hold, a handover), text in the contract. They are the body fields REST
// takes as text when sent as integers (api/idtext.go), so that an
// argument reads the same wherever the REST request carries it.
var idArguments = map[string]bool{
	"invoice_id": true, "po_id": true, "item": true, "supplier_id": true,
	"approval_id": true, "hold_id": true, "handover_id": true,
}

// idAsText returns the argument v of name as the text of its digits when
// name holds an id and v is a JSON integer in its plain form (digits, no
// sign, fraction or exponent), as models and clients such as the MCP
// Inspector send SAP's all-digit ids: {"invoice_id": 5105600101} is the
// call with "5105600101". The text then meets the id's pattern in the
// REST handler as any string does. Any other value comes back as it came.
func idAsText(name string, v any) any {
	n, ok := v.(json.Number)
	if !ok || !idArguments[name] || !digits(string(n)) {
		return v
	}
	return string(n)
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
