package sap

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// A redirect from the ERP is an answer, never followed, even through a
// caller's client whose CheckRedirect would follow it; the caller's client
// is left as it was.
func TestRedirectNeverFollowed(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/sap/bc/login")
		w.WriteHeader(http.StatusFound)
	})
	hc := &http.Client{}
	_, err := f.client(Options{HTTPClient: hc}).Invoice(context.Background(), "5105600101")
	up, ok := errors.AsType[*erp.UpstreamError](err)
	if !ok || up.Status != http.StatusFound {
		t.Fatalf("got %v, want an UpstreamError with status 302", err)
	}
	if n := len(f.odata()); n != 1 {
		t.Errorf("requests: got %d, want 1 (the redirect not followed)", n)
	}
	if hc.CheckRedirect != nil {
		t.Error("the caller's client was changed")
	}
}

// A client's Timeout bounds each request, besides the attempt timeout.
func TestClientTimeoutBoundsRequest(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	_, err := f.client(Options{HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}}).Invoice(context.Background(), "5105600101")
	up, ok := errors.AsType[*erp.UpstreamError](err)
	if !ok || !up.Timeout {
		t.Fatalf("got %v, want an UpstreamError that timed out", err)
	}
}

// failingTransport fails every request without sending it.
type failingTransport struct{ err error }

func (t failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	return nil, t.err
}

// A transport's failure comes back as http.Client would return it: a
// *url.Error with the method and URL around the transport's own error.
func TestTransportErrorAsURLError(t *testing.T) {
	cause := errors.New("connection reset by peer")
	c, err := New("http://sap.invalid", Options{Runner: retry.New(oneAttempt(2*time.Second), nil),
		HTTPClient: &http.Client{Transport: failingTransport{cause}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Invoice(context.Background(), "5105600101")
	ue, ok := errors.AsType[*url.Error](err)
	if !ok || ue.Op != "Get" || !strings.HasPrefix(ue.URL, "http://sap.invalid/sap/opu/odata/sap/") || !errors.Is(err, cause) {
		t.Fatalf("got %v, want a *url.Error of a Get around the transport's error", err)
	}
}

// The jar's cookies go with every request, and the ERP's cookies go into
// the jar, as http.Client.Do does it.
func TestJarCookiesBothWays(t *testing.T) {
	var got []string
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Cookie"))
		http.SetCookie(w, &http.Cookie{Name: "sap-usercontext", Value: "sap-client=100", Path: "/"})
		writeJSON(w, 200, list(invoiceJSON("5105600101", "2026", "A", "")))
	})
	jar, _ := cookiejar.New(nil)
	c := f.client(Options{HTTPClient: &http.Client{Jar: jar}})
	for range 2 {
		if _, err := c.Invoice(context.Background(), "5105600101"); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got[0] != "" || got[1] != "sap-usercontext=sap-client=100" {
		t.Errorf("Cookie headers: got %q, want none, then the cookie the first answer set", got)
	}
	if _, ok := c.readHeader["Cookie"]; ok {
		t.Error("the reads' shared header got the cookie")
	}
	u, _ := url.Parse(f.srv.URL)
	if n := len(jar.Cookies(u)); n != 1 {
		t.Errorf("jar: got %d cookies, want 1", n)
	}
}
