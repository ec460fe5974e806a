package main

import (
	"net/http"
	"testing"
)

// TestConsoleCookiesSecureBehindAProxy checks that the gateway gives the
// console what makes its cookies Secure on plain HTTP behind a proxy that
// terminates TLS: an https -public-url, or -trusted-proxies whose
// X-Forwarded-Proto says https.
func TestConsoleCookiesSecureBehindAProxy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		proto  string
		secure bool
	}{
		{"default public URL", nil, "", false},
		{"https public URL", []string{"-public-url", "https://gateway.example.com"}, "", true},
		{"a trusted proxy says https", []string{"-trusted-proxies", "127.0.0.0/8"}, "https", true},
		{"an untrusted peer says https", []string{"-trusted-proxies", "10.0.0.0/8"}, "https", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := startGateway(t, nil, tc.args...)
			req, _ := http.NewRequest(http.MethodGet, base+"/console/sign-in", nil)
			if tc.proto != "" {
				req.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			cookies := resp.Cookies()
			if resp.StatusCode != http.StatusOK || len(cookies) != 1 {
				t.Fatalf("sign-in page: %d with cookies %v", resp.StatusCode, cookies)
			}
			if cookies[0].Secure != tc.secure {
				t.Errorf("the console's cookie Secure %v, want %v", cookies[0].Secure, tc.secure)
			}
		})
	}
}
