package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestDemoPeople starts a gateway without -api-keys on its simulated ERP:
// it prints its demonstration people's keys before its start line; a call
// without a key is the agent, which cannot decide; m.keller's key decides
// on REST and signs in at the console; a.auditor's reads the audit log.
func TestDemoPeople(t *testing.T) {
	base, logs := startGatewayLogged(t, nil)
	keys := map[string]string{}
	for _, m := range readmeExport.FindAllStringSubmatch(logs.String(), -1) {
		keys[m[1]] = m[2]
	}
	if len(keys) != 3 || keys["KELLER_KEY"] == "" || keys["NOVAK_KEY"] == "" || keys["AUDITOR_KEY"] == "" {
		t.Fatalf("the start printed the keys %v, want KELLER_KEY, NOVAK_KEY and AUDITOR_KEY:\n%s", keys, logs)
	}
	for _, name := range []string{"m.keller", "j.novak", "a.auditor"} {
		if !strings.Contains(logs.String(), "name="+name+" ") {
			t.Errorf("the log has no line for %s", name)
		}
	}

	post := func(path, body string, headers ...string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ": ")
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, m
	}
	status, appr := post("/invoices/5105600102/approvals", `{"proposed_action":"accept_variance","justification":"Unit price 8 % over the PO."}`)
	if status != http.StatusOK || appr["status"] != "pending" {
		t.Fatalf("request_approval without a key: %d %v", status, appr)
	}
	decision := "/approvals/" + appr["approval_id"].(string) + "/decision"
	body := `{"decision":"approve","reason":"Surcharge confirmed with the supplier."}`
	if status, m := post(decision, body); status != http.StatusConflict || m["code"] != "SCOPE_MISSING" {
		t.Errorf("a decision without a key: %d %v, want SCOPE_MISSING", status, m)
	}
	if status, m := post(decision, body, "X-API-Key: "+keys["NOVAK_KEY"]); status != http.StatusConflict || m["code"] != "SCOPE_MISSING" {
		t.Errorf("a decision with j.novak's key (review): %d %v, want SCOPE_MISSING", status, m)
	}
	if status, m := post(decision, body, "X-API-Key: "+keys["KELLER_KEY"]); status != http.StatusOK || m["decided_by"] != "m.keller" {
		t.Errorf("m.keller's decision: %d %v", status, m)
	}
	if code, b := call(t, http.MethodGet, base+"/audit?invoice_id=5105600102", "X-API-Key: "+keys["AUDITOR_KEY"]); code != http.StatusOK ||
		!strings.Contains(string(b), `"client":"m.keller","operation":"decide_approval"`) {
		t.Errorf("the audit log as a.auditor: %d %s", code, b)
	}
	if code, b := call(t, http.MethodGet, base+"/audit", "X-API-Key: 0123456789abcdef0123456789abcdef"); code != http.StatusUnauthorized {
		t.Errorf("a key of no one: %d %s, want 401", code, b)
	}

	// The console signs m.keller in with the same key.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(base + "/console/sign-in")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf_token" value="([^"]*)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("the sign-in page has no CSRF token:\n%s", page)
	}
	form := url.Values{"key": {keys["KELLER_KEY"]}, "csrf_token": {html.UnescapeString(string(m[1]))}}
	resp, err = browser.PostForm(base+"/console/sign-in", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in with m.keller's key: %d", resp.StatusCode)
	}
	resp, err = browser.Get(base + "/console/approvals")
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("m.keller")) {
		t.Errorf("the approvals page signed in as m.keller: %d", resp.StatusCode)
	}
}

// TestNewDemoPeople: three people with keys of 32 hex digits, new at each
// start; none beside keys, OAuth or a real ERP.
func TestNewDemoPeople(t *testing.T) {
	a, err := newDemoPeople(config{}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newDemoPeople(config{}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("%d and %d people, want 3", len(a), len(b))
	}
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for i := range a {
		if !hex32.MatchString(a[i].key) || a[i].key == b[i].key || a[i].name != b[i].name {
			t.Errorf("%s: keys %q and %q, want 32 hex digits, new at each start", a[i].name, a[i].key, b[i].key)
		}
	}
	creds := a.credentials()
	if len(creds) != 3 || creds[0].Name != "m.keller" || strings.Join(creds[0].Scopes, "+") != "approve+review" {
		t.Errorf("credentials %+v", creds)
	}
	var withKeys config
	if err := parseAPIKeys("agent:"+strings.Repeat("ab", 32)+":read", &withKeys); err != nil {
		t.Fatal(err)
	}
	withOAuth, realERP := config{}, config{erpURL: "https://s4.example.net"}
	withOAuth.oauth.issuer = "https://issuer.example.net"
	for name, cfg := range map[string]config{"-api-keys": withKeys, "-oauth-issuer": withOAuth, "-erp-url": realERP} {
		if p, err := newDemoPeople(cfg, rand.Reader); err != nil || len(p) != 0 {
			t.Errorf("with %s: %d people, %v; want none", name, len(p), err)
		}
	}
	if _, err := newDemoPeople(config{}, strings.NewReader("short")); err == nil {
		t.Error("keys from a reader that runs dry: no error")
	}
}
