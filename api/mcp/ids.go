package mcp

import "encoding/json"

// idAsText returns the path argument v as the text of its digits when v is
// a JSON integer in its plain form (digits, no sign, fraction or exponent),
// as models and clients such as the MCP Inspector send SAP's all-digit ids:
// {"invoice_id": 5105600101} is the call with "5105600101". Every path
// argument is an id, text in the contract; the text then meets the id's
// pattern in the REST handler as any string does. Body fields go to REST as
// they came, which reads an integer id the same way (api/idtext.go). Any
// other value comes back as it came.
func idAsText(a *argument, v any) any {
	n, ok := v.(json.Number)
	if !ok || a.in != inPath || !digits(string(n)) {
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
