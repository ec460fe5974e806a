package api

import "testing"

func TestIDsAsText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"invoice_id":5105600101}`, `{"invoice_id":"5105600101"}`},
		{"{ \"po_id\" :\n 4500018822 , \"item\":10}", "{ \"po_id\" :\n \"4500018822\" , \"item\":\"10\"}"},
		{`{"supplier_id":0,"approval_id":7,"hold_id":1234567,"handover_id":3}`, `{"supplier_id":"0","approval_id":"7","hold_id":"1234567","handover_id":"3"}`},
		// Left as they came: not a plain integer, not an id, not at the
		// top level, in a string, not an object, not JSON.
		{`{"invoice_id":5105600101.0}`, ``},
		{`{"invoice_id":1e3}`, ``},
		{`{"invoice_id":-5105600101}`, ``},
		{`{"invoice_id":"5105600101"}`, ``},
		{`{"run_id":42,"limit":5}`, ``},
		{`{"evidence":[{"invoice_id":5105600101}]}`, ``},
		{`{"summary":"\"invoice_id\": 5105600101"}`, ``},
		{`[{"invoice_id":5105600101}]`, ``},
		{`{"invoice_id":5105600101`, ``},
		{`{"invoice_id":5105600101,}`, ``},
		{``, ``},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := string(idsAsText([]byte(c.in))); got != want {
			t.Errorf("idsAsText(%s) = %s, want %s", c.in, got, want)
		}
	}
}

func TestAlpha(t *testing.T) {
	for in, want := range map[string]string{"00010": "10", "10": "10", "0": "0", "000": "0", "0000100042": "100042", "00A1": "00A1", "": ""} {
		if got := alpha(in); got != want {
			t.Errorf("alpha(%q) = %q, want %q", in, got, want)
		}
	}
}
