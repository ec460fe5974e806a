package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEverySettingParses runs each setting's parser on a good and a bad
// value: a setting added to the table without a case here fails.
func TestEverySettingParses(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	missing := filepath.Join(dir, "missing.pem")
	rules, badRules := filepath.Join(dir, "rules.json"), filepath.Join(dir, "bad-rules.json")
	writeFile(t, rules, `{"default": {"auto_approve_limit": "5", "bands": [{"up_to": "50", "group": "ap_manager"}]}}`)
	writeFile(t, badRules, `{"default": {"auto_approve_limit": "-5"}}`)
	const key = "bot:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + ":read+write"

	// why is the bad value's message after "-name (ENV): "; ending in "…",
	// its start. A setting that takes any value has no bad one (bad and why
	// empty). asGiven settings keep the white space around their value.
	cases := map[string]struct {
		good, bad, why string
		asGiven        bool
	}{
		"config":              {good: "erpgate.env"}, // read before the others, by loadConfigFile (TestConfigFile)
		"addr":                {good: "127.0.0.1:0", bad: "8080", why: "must be host:port with a port from 0 to 65535, such as :8080 or 127.0.0.1:0"},
		"tls-cert":            {good: certFile, bad: missing, why: "cannot read the file"},
		"tls-key":             {good: keyFile, bad: missing, why: "cannot read the file"},
		"shutdown-timeout":    {good: "1ns", bad: "-1s", why: "must be a duration such as 20s"},
		"public-url":          {good: "https://erpgate.example.com", bad: "erpgate.example.com", why: "must be an absolute http(s) URL"},
		"erp-url":             {good: "https://s4.example.com/", bad: "ftp://s4.example.com", why: "must be an absolute http(s) URL"},
		"erp-user":            {good: "ERPGATE_SVC"},
		"erp-password":        {good: "pass word", asGiven: true},
		"erp-auth":            {good: "mtls", bad: "kerberos", why: "must be basic, mtls, oauth2, saml-bearer, token-exchange or none"},
		"erp-client-cert":     {good: certFile}, // read with -erp-client-key: checkERPTLS
		"erp-client-key":      {good: keyFile},
		"erp-ca":              {good: certFile, bad: keyFile, why: "CA bundle " + keyFile + " holds no PEM certificate"},
		"erp-token-url":       {good: "https://t.example.com/oauth/token"}, // checked for -erp-auth oauth2: checkERPAuth
		"erp-client-id":       {good: "sb-erpgate"},
		"erp-client-secret":   {good: "s3cret", asGiven: true},
		"erp-scopes":          {good: "API_A, API_B"},
		"erp-saml-issuer":     {good: "erpgate-idp"}, // checked for -erp-auth saml-bearer: checkERPAuth
		"erp-saml-audience":   {good: "SAP_OAUTH_SP_100"},
		"erp-saml-cert":       {good: certFile}, // read with -erp-saml-key: checkERPAuth
		"erp-saml-key":        {good: keyFile},
		"erp-saml-user":       {good: "ERPGATE_TECH"},
		"sap-client":          {good: "100", bad: "10", why: "must be three digits, such as 100"},
		"erp-timeout":         {good: "1ms", bad: "0s", why: "must be a positive duration such as 3s"},
		"erp-attempts":        {good: "10", bad: "11", why: "must be a whole number from 1 to 10"},
		"erp-call-timeout":    {good: "1ms", bad: "soon", why: "must be a positive duration such as 2s"},
		"post-timeout":        {good: "2m", bad: "-45s", why: "must be a positive duration such as 2s"},
		"erp-backoff":         {good: "1ms", bad: "-1ms", why: "must be a positive duration such as 2s"},
		"erp-backoff-max":     {good: "1ms", bad: "0", why: "must be a positive duration such as 2s"},
		"breaker-open-for":    {good: "1ms", bad: "5", why: "must be a positive duration such as 2s"},
		"retry-budget":        {good: "0", bad: "1.5", why: "must be a number from 0 to 1"},
		"erp-rate":            {good: "12.5", bad: "-1", why: "must be a number of calls per second, 0 for no ceiling"},
		"erp-in-flight":       {good: "8", bad: "eight", why: "must be a whole number, 0 for no ceiling"},
		"sim-addr":            {good: "[::1]:0", bad: ":65536", why: "must be host:port with a port from 0 to 65535, such as 127.0.0.1:8090 or 127.0.0.1:0"},
		"sim-faults":          {good: "purchase_order:status=503,p=0.3", bad: "po:colour=red", why: `sim: fault rule 1 "po:colour=red": unknown key "colour" …`},
		"sim-seed":            {good: "18446744073709551615", bad: "-1", why: "must be a whole number"},
		"auto-approve-limit":  {good: "0", bad: "-0.01", why: "must be a non-negative amount"},
		"approval-rules":      {good: rules, bad: badRules, why: "routing rules: default: auto_approve_limit must not be negative"},
		"approval-webhook":    {good: "http://hooks.internal/approvals", bad: "/approvals", why: "must be an absolute http(s) URL"},
		"console-secret":      {good: "0123456789abcdef0123456789abcdef", bad: "too-short", why: "must be at least 32 characters"},
		"data-dir":            {good: "/var/lib/erpgate"}, // needed without -database-url: checkRecordsStore
		"database-url":        {good: "postgresql://erpgate@db:5432/erpgate", bad: "mysql://db/erpgate", why: "must be a postgres:// URL"},
		"max-keys-per-client": {good: "1", bad: "-1", why: "must be a whole number, 0 for no cap"},
		"tolerance-percent":   {good: "2.5", bad: "two", why: "must be a non-negative number"},
		"tolerance-absolute":  {good: "0", bad: "-50", why: "must be a non-negative amount"},
		"max-body-bytes":      {good: "16777216", bad: "1023", why: "must be a whole number from 1024 to 16777216"},
		"run-limits":          {good: "false", bad: "no", why: "must be true or false"},
		"run-budget":          {good: "1", bad: "0", why: "must be a whole number of at least 1"},
		"invoice-calls":       {good: "50", bad: "0", why: "must be a whole number of at least 1"},
		"invoice-runs":        {good: "3", bad: "-1", why: "must be a whole number of at least 1"},
		"run-ttl":             {good: "1m", bad: "59s", why: "must be a duration of at least 1m"},
		"run-strict":          {good: "true", bad: "yes", why: "must be true or false"},
		"max-runs":            {good: "10", bad: "0", why: "must be a whole number of at least 1"},
		"run-read-ttl":        {good: "1m", bad: "-1s", why: "must be a duration such as 30s, or 0"},
		"run-fail-open":       {good: "1", bad: "on", why: "must be true or false"},
		"recheck-every":       {good: "1s", bad: "999ms", why: "must be a duration of at least 1s"},
		"recheck-interval":    {good: "1h", bad: "1", why: "must be a duration of at least 1s"},
		"handover-webhook":    {good: "https://hooks.example.com/x", bad: "hooks.example.com", why: "must be an absolute http(s) URL"},
		"hold-webhook":        {good: "http://agents.internal/resume", bad: "/resume", why: "must be an absolute http(s) URL"},
		"redis-url":           {good: "rediss://redis:6380/1", bad: "redis://redis:port", why: "must be a redis:// or rediss:// URL"},
		"api-keys":            {good: key, bad: "bot:abc:read", why: `credential "bot": the key hash must be 64 hex digits (sha256 of the key)`},
		"oauth-issuer":        {good: "https://login.example.com/tenant/v2.0", bad: "login.example.com", why: "must be an absolute http(s) URL"},
		"oauth-jwks-url":      {good: "https://login.example.com/keys", bad: "/keys", why: "must be an absolute http(s) URL"},
		"oauth-audience":      {good: "api://erpgate"},
		"oauth-scope-claim":   {good: "scp"},
		"oauth-token-types":   {good: "at+jwt,JWT"},
		"open":                {good: "true", bad: "open", why: "must be true or false"},
		"post-scope":          {good: "true", bad: "maybe", why: "must be true or false"},
		"protect-ops":         {good: "true", bad: "", why: "must be true or false"},
		"rate-limit":          {good: "1", bad: "-1", why: "must be a whole number, 0 for no limit"},
		"rate-window":         {good: "1s", bad: "1ms", why: "must be a duration of at least 1s"},
		"auth-fail-limit":     {good: "5", bad: "many", why: "must be a whole number, 0 for no limit"},
		"trusted-proxies":     {good: "10.0.0.0/8, 192.168.1.7,fd00::/8", bad: "10.0.0.0/33", why: "must be networks in CIDR notation, comma separated, such as 10.0.0.0/8,192.168.1.7"},
		"log-level":           {good: "warn", bad: "loud", why: "must be debug, info, warn or error"},
		"log-format":          {good: "text", bad: "JSON", why: "must be json or text"},
		"debug-addr":          {good: "localhost:6060", bad: "0.0.0.0:6060", why: "must be a loopback address with a port from 0 to 65535, such as 127.0.0.1:6060"},

		// checked for -erp-auth token-exchange: checkERPAuth
		"erp-exchange-audience":     {good: "s4-prod"},
		"erp-exchange-scope":        {good: "s4:{operation}"},
		"erp-exchange-subject-type": {good: "jwt", bad: "id_token", why: "must be access_token or jwt"},
		"erp-exchange-key-callers":  {good: "gateway", bad: "allow", why: "must be refuse or gateway"},
	}
	for _, s := range settings {
		tt, ok := cases[s.name]
		if !ok {
			t.Errorf("-%s has no case here", s.name)
			continue
		}
		delete(cases, s.name)
		t.Run(s.name, func(t *testing.T) {
			var def config
			if errs := s.apply(s.def, &def); errs != nil {
				t.Errorf("default %q: %v", s.def, errs)
			}
			var good config
			if errs := s.apply(tt.good, &good); errs != nil {
				t.Errorf("%q: %v", tt.good, errs)
			}
			if s.name != "config" && reflect.DeepEqual(good, config{}) {
				t.Errorf("%q left the config as it was", tt.good)
			}
			var padded config
			if errs := s.apply(" "+tt.good+"\t", &padded); errs != nil {
				t.Errorf("%q with white space: %v", tt.good, errs)
			}
			if reflect.DeepEqual(padded, good) == tt.asGiven {
				t.Errorf("%q with white space: kept %v, want %v", tt.good, !tt.asGiven, tt.asGiven)
			}
			if tt.why == "" {
				if errs := s.apply("any thing, at all", &config{}); errs != nil {
					t.Errorf("a setting without a bad value refused one: %v", errs)
				}
				return
			}
			errs := s.apply(tt.bad, &config{})
			if len(errs) != 1 {
				t.Fatalf("%q: %d errors %v, want one", tt.bad, len(errs), errs)
			}
			prefix := "-" + s.name + " (" + s.env + "): "
			got, want := errs[0].Error(), prefix+tt.why
			if before, ok := strings.CutSuffix(want, "…"); ok {
				want = before
				got = got[:min(len(got), len(want))]
			}
			if got != want {
				t.Errorf("%q:\n got %s\nwant %s", tt.bad, errs[0], want)
			}
		})
	}
	for name := range cases {
		t.Errorf("case for %s, which is no setting", name)
	}
}

// TestAPIKeysReportsEachWrongKey: every wrong key of -api-keys has its own
// message.
func TestAPIKeysReportsEachWrongKey(t *testing.T) {
	var c config
	errs := settingNamed(t, "api-keys").apply("bot:abc:read,nameonly", &c)
	want := []string{
		`-api-keys (ERPGATE_API_KEYS): credential "bot": the key hash must be 64 hex digits (sha256 of the key)`,
		`-api-keys (ERPGATE_API_KEYS): credential "nameonly:…": want name:sha256hex:scope+scope`,
	}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d", errs, len(want))
	}
	for i := range want {
		if errs[i].Error() != want[i] {
			t.Errorf("error %d:\n got %s\nwant %s", i, errs[i], want[i])
		}
	}
}

// TestEveryCheckRefuses runs each check between settings on settings it
// refuses: a check added without a case here fails.
func TestEveryCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	certFile, _ := writeSelfSigned(t, dir)
	cases := map[string]struct {
		args []string
		want []string
	}{
		"tls-pair":         {[]string{"-tls-cert", certFile}, []string{"-tls-cert (ERPGATE_TLS_CERT): needs -tls-key, and -tls-key needs -tls-cert"}},
		"erp-call-timeout": {[]string{"-erp-timeout", "5s", "-erp-call-timeout", "4s"}, []string{"-erp-call-timeout (ERPGATE_ERP_CALL_TIMEOUT): must not be shorter than -erp-timeout"}},
		"erp-auth": {[]string{"-erp-auth", "oauth2", "-erp-user", "u", "-erp-token-url", "/token"}, []string{
			"-erp-user (ERPGATE_ERP_USER): is for -erp-auth basic, not oauth2",
			"-erp-client-id (ERPGATE_ERP_CLIENT_ID): must be set for -erp-auth oauth2",
			"-erp-client-secret (ERPGATE_ERP_CLIENT_SECRET): must be set for -erp-auth oauth2",
			"-erp-token-url (ERPGATE_ERP_TOKEN_URL): must be an absolute http(s) URL",
		}},
		"erp-tls": {[]string{"-addr", "127.0.0.1:0", "-erp-url", "https://s4.example.com", "-erp-auth", "mtls", "-erp-client-cert", certFile, "-erp-client-key", certFile},
			[]string{"-erp-client-cert (ERPGATE_ERP_CLIENT_CERT): with -erp-client-key: client certificate: tls: found a certificate rather than a key in the PEM for the private key"}},
		"erp-rate": {[]string{"-erp-rate", "5"}, []string{"-rate-limit (ERPGATE_RATE_LIMIT): 600 calls per 1m0s is 10 a second for one client, " +
			"above -erp-rate 5, the ERP's quota for all of them: lower it to at most 300 per 1m0s, or raise -erp-rate"}},
		"records-store": {[]string{"-data-dir", ""}, []string{"-data-dir (ERPGATE_DATA_DIR): must name a directory when -database-url is empty"}},
		"oauth": {[]string{"-oauth-jwks-url", "https://login.example.com/keys", "-oauth-audience", "api://erpgate"}, []string{
			"-oauth-jwks-url (ERPGATE_OAUTH_JWKS_URL): needs -oauth-issuer",
			"-oauth-audience (ERPGATE_OAUTH_AUDIENCE): needs -oauth-issuer",
		}},
		"routing": {[]string{"-auto-approve-limit", "50000"}, []string{"-auto-approve-limit (ERPGATE_AUTO_APPROVE_LIMIT): must be below the first band (50000)"}},
		"client-auth": {[]string{"-erp-url", "https://s4.example.com", "-addr", "0.0.0.0:9000"}, []string{"-api-keys (ERPGATE_API_KEYS): must be set, " +
			"or -oauth-issuer (ERPGATE_OAUTH_ISSUER), when the gateway fronts a real ERP (-erp-url) and listens beyond loopback (-addr 0.0.0.0:9000); " +
			"without either, anyone who reaches it could post invoices. Set -api-keys to the clients as name:sha256hex:scope+scope, " +
			"or -oauth-issuer to the issuer of their access tokens (cmd/erpgate/README.md, \"Closed by default\"); " +
			"else listen on loopback only (-addr 127.0.0.1:9000), or pass -open true (ERPGATE_OPEN=true) to serve every caller without credentials on purpose"}},
	}
	for _, k := range checks {
		tt, ok := cases[k.name]
		if !ok {
			t.Errorf("check %s has no case here", k.name)
			continue
		}
		delete(cases, k.name)
		_, err := parseConfig(append([]string{"-data-dir", dir}, tt.args...), func(string) string { return "" }, io.Discard)
		if err == nil {
			t.Errorf("%s: %q accepted", k.name, tt.args)
			continue
		}
		if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
			t.Errorf("%s: %q:\n got %s\nwant %s", k.name, tt.args, got, want)
		}
	}
	for name := range cases {
		t.Errorf("case for %s, which is no check", name)
	}
}

func settingNamed(t *testing.T, name string) setting {
	t.Helper()
	for _, s := range settings {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no setting %s", name)
	return setting{}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConfigSAMLBearer: -erp-auth saml-bearer takes the OAuth client and
// the SAML settings, and names each one that is missing or does not fit.
func TestConfigSAMLBearer(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeRSASelfSigned(t, dir)
	ecCert, ecKey := writeSelfSigned(t, dir)
	secret := map[string]string{"ERPGATE_ERP_CLIENT_SECRET": "s3cret"}
	full := []string{"-erp-auth", "saml-bearer", "-erp-token-url", "https://s4.example.com/sap/bc/sec/oauth2/token",
		"-erp-client-id", "ERPGATE_CLIENT", "-erp-scopes", "API_A,API_B", "-erp-saml-issuer", "erpgate-idp",
		"-erp-saml-audience", "SAP_OAUTH_SP_100", "-erp-saml-cert", certFile, "-erp-saml-key", keyFile, "-erp-saml-user", "ERPGATE_TECH"}
	c, err := parseEnv(secret, full...)
	if err != nil {
		t.Fatal(err)
	}
	s := c.erpSAML
	if c.erpAuth != "saml-bearer" || s == nil || s.TokenURL != "https://s4.example.com/sap/bc/sec/oauth2/token" ||
		s.ClientID != "ERPGATE_CLIENT" || s.ClientSecret != "s3cret" || strings.Join(s.Scopes, " ") != "API_A API_B" ||
		s.Issuer != "erpgate-idp" || s.Audience != "SAP_OAUTH_SP_100" || s.User != "ERPGATE_TECH" || len(s.Certificate.Certificate) != 1 ||
		c.erpOAuth2 != nil {
		t.Fatalf("saml-bearer: %q %+v", c.erpAuth, s)
	}

	bad := []refusedSettings{
		{"nothing but the way", nil, []string{"-erp-auth", "saml-bearer"}, []string{
			"-erp-token-url (ERPGATE_ERP_TOKEN_URL): must be set for -erp-auth saml-bearer",
			"-erp-client-id (ERPGATE_ERP_CLIENT_ID): must be set for -erp-auth saml-bearer",
			"-erp-client-secret (ERPGATE_ERP_CLIENT_SECRET): must be set for -erp-auth saml-bearer",
			"-erp-saml-issuer (ERPGATE_ERP_SAML_ISSUER): must be set for -erp-auth saml-bearer",
			"-erp-saml-audience (ERPGATE_ERP_SAML_AUDIENCE): must be set for -erp-auth saml-bearer",
			"-erp-saml-cert (ERPGATE_ERP_SAML_CERT): must be set for -erp-auth saml-bearer",
			"-erp-saml-key (ERPGATE_ERP_SAML_KEY): must be set for -erp-auth saml-bearer",
			"-erp-saml-user (ERPGATE_ERP_SAML_USER): must be set for -erp-auth saml-bearer",
		}},
		{"an ECDSA key", secret, replaced(full, certFile, ecCert, keyFile, ecKey), []string{
			"-erp-saml-cert (ERPGATE_ERP_SAML_CERT): with -erp-saml-key: SAML signing certificate: the key must be RSA"}},
		{"a key that is not the certificate's", secret, replaced(full, keyFile, ecKey), []string{
			"-erp-saml-cert (ERPGATE_ERP_SAML_CERT): with -erp-saml-key: SAML signing certificate: tls: private key type does not match"}},
		{"a relative token URL", secret, replaced(full, "https://s4.example.com/sap/bc/sec/oauth2/token", "/token"), []string{
			"-erp-token-url (ERPGATE_ERP_TOKEN_URL): must be an absolute http(s) URL"}},
		{"with a user", secret, append(full, "-erp-user", "u"), []string{
			"-erp-user (ERPGATE_ERP_USER): is for -erp-auth basic, not saml-bearer"}},
		{"SAML settings with oauth2", secret, replaced(full, "saml-bearer", "oauth2"), []string{
			"-erp-saml-issuer (ERPGATE_ERP_SAML_ISSUER): needs -erp-auth saml-bearer",
			"-erp-saml-user (ERPGATE_ERP_SAML_USER): needs -erp-auth saml-bearer"}},
		{"SAML settings with basic", map[string]string{"ERPGATE_ERP_USER": "u"}, []string{"-erp-saml-user", "ERPGATE_TECH"}, []string{
			"-erp-saml-user (ERPGATE_ERP_SAML_USER): needs -erp-auth saml-bearer"}},
	}
	checkRefused(t, bad)
}

// replaced is args with each old value (pairs of old, new) replaced.
func replaced(args []string, oldNew ...string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		for j := 0; j < len(oldNew); j += 2 {
			if a == oldNew[j] {
				out[i] = oldNew[j+1]
			}
		}
	}
	return out
}

// writeRSASelfSigned writes an RSA key and a self-signed certificate for
// it, as the SAML bearer grant signs with, and returns their files.
func writeRSASelfSigned(t *testing.T, dir string) (string, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "erpgate-idp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "saml.pem"), filepath.Join(dir, "saml-key.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	return certFile, keyFile
}
