package sapspec

import (
	"net/http"
	"net/http/cookiejar"
	"slices"
	"testing"
)

// CheckedTransport returns a Transport over base (nil: a clone of
// http.DefaultTransport) for a test's SAP client. When tb's test ends it
// fails the test for every mismatch the requests had that is not in
// KnownMismatches. It fails the test at once when SAP's metadata cannot be
// loaded (shared/sapspecs beside the repository is missing).
func CheckedTransport(tb testing.TB, base http.RoundTripper) *Transport {
	tb.Helper()
	spec, err := Default()
	if err != nil {
		tb.Fatalf("checking the SAP client's requests against SAP's published $metadata: %v", err)
	}
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	t := &Transport{Base: base, Spec: spec}
	tb.Cleanup(func() {
		for _, m := range t.Mismatches() {
			if !slices.Contains(KnownMismatches, m) {
				tb.Errorf("SAP client request off SAP's published $metadata (%d times): %s", t.Count(m), m)
			}
		}
	})
	return t
}

// CheckedHTTPClient returns an *http.Client for sap.Options.HTTPClient in a
// test: like the SAP client's default, it keeps the session cookie the
// CSRF token is bound to and does not follow redirects, and it sends
// through CheckedTransport.
func CheckedHTTPClient(tb testing.TB) *http.Client {
	tb.Helper()
	jar, _ := cookiejar.New(nil) // never fails without options
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 128
	tr.MaxIdleConnsPerHost = 128
	return &http.Client{
		Jar:           jar,
		Transport:     CheckedTransport(tb, tr),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
