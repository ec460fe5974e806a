package api_test

import "testing"

func TestAllowHeaderNamesTheMethods(t *testing.T) {
	s := newStack(t)
	for path, want := range map[string]string{
		"/invoices/5105600101":                 "GET",
		"/invoices/5105600101/three-way-match": "POST",
		"/suppliers":                           "GET",
	} {
		if got := s.do("DELETE", path, nil).header.Get("Allow"); got != want {
			t.Errorf("DELETE %s: Allow %q, want %q", path, got, want)
		}
	}
}
