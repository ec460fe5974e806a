package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startGateway runs the gateway on free ports and returns its base URL.
func startGateway(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	args = append([]string{"-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-log-format", "text"}, args...)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(25 * time.Second):
			t.Error("the gateway did not shut down")
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q does not say where it listens", line)
	}
	return m[1]
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestRunServesTheEmbeddedERP(t *testing.T) {
	base := startGateway(t, nil)
	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	code, body := get(t, base+"/invoices/5105600101")
	if code != 200 || !strings.Contains(string(body), `"invoice_id":"5105600101"`) {
		t.Fatalf("get_invoice: %d %s", code, body)
	}
	code, body = get(t, base+"/invoices/5105600999")
	if code != 404 || !strings.Contains(string(body), `"code":"INVOICE_NOT_FOUND"`) {
		t.Fatalf("unknown invoice: %d %s", code, body)
	}
	_, body = get(t, base+"/metrics")
	if !strings.Contains(string(body), `erpgate_outcomes_total{code="INVOICE_NOT_FOUND",operation="get_invoice"} 1`) {
		t.Error("/metrics does not count the INVOICE_NOT_FOUND")
	}
	_, body = get(t, base+"/openapi.json")
	var doc struct {
		OpenAPI string `json:"openapi"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.OpenAPI != "3.0.3" || len(doc.Servers) != 1 ||
		!strings.HasPrefix(doc.Servers[0].URL, "http://localhost:") {
		t.Errorf("/openapi.json: %v %+v", err, doc)
	}
	if code, body := get(t, base+"/openapi.yaml"); code != 200 || !strings.Contains(string(body), "openapi: 3.0.3") {
		t.Errorf("/openapi.yaml: %d", code)
	}
}

func TestRunTakesSettingsFromTheEnvironment(t *testing.T) {
	base := startGateway(t, map[string]string{"ERPGATE_PUBLIC_URL": "https://erpgate.example.com"})
	_, body := get(t, base+"/openapi.json")
	if !strings.Contains(string(body), `"url":"https://erpgate.example.com"`) {
		t.Errorf("public URL not in the contract: %.200s", body)
	}
}

func TestRunInjectsConfiguredFaults(t *testing.T) {
	base := startGateway(t, map[string]string{"ERPGATE_SIM_FAULTS": "purchase_order:status=503,retry_after_s=45"},
		"-erp-attempts", "1")
	code, body := get(t, base+"/purchase-orders/4500018822")
	if code != 503 || !strings.Contains(string(body), `"retry_after_s":45`) {
		t.Errorf("with a 503 fault: %d %s", code, body)
	}
	if code, _ := get(t, base+"/purchase-orders/4500018822"); code != 200 {
		t.Errorf("after the one fault: %d", code)
	}
}

func TestConfigErrors(t *testing.T) {
	var stderr strings.Builder
	_, err := parseConfig([]string{"-erp-timeout", "soon", "-run-budget", "0", "-log-level", "loud"},
		func(k string) string {
			return map[string]string{"ERPGATE_ERP_URL": "not a url", "ERPGATE_API_KEYS": "bot:abc:read",
				"ERPGATE_SIM_FAULTS": "po:colour=red"}[k]
		}, &stderr)
	if err == nil {
		t.Fatal("bad settings accepted")
	}
	for _, want := range []string{"-erp-timeout (ERPGATE_ERP_TIMEOUT)", "-run-budget", "-log-level", "-erp-url", "-api-keys", "-sim-faults"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var stderr strings.Builder
	_, err := parseConfig([]string{"-h"}, func(string) string { return "" }, &stderr)
	if err == nil {
		t.Fatal("-h did not stop")
	}
	for _, s := range settings {
		if !strings.Contains(stderr.String(), "-"+s.name+" (env "+s.env) {
			t.Errorf("-h does not document -%s", s.name)
		}
	}
}

func TestREADMEListsEverySetting(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		row := "| `-" + s.name + "` | `" + s.env + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README's configuration table has no row for -%s (%s)", s.name, s.env)
		}
	}
}

func TestRunDispatchesEval(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), []string{"eval"}, func(string) string { return "" }, &out, io.Discard); err != nil {
		t.Fatalf("erpgate eval: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "expected: 11/11") {
		t.Errorf("erpgate eval printed:\n%s", out.String())
	}
}
