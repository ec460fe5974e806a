package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp/sim"
)

// start runs the command until the test ends and returns its base URL.
func start(t *testing.T, args []string, env map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
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
		case <-time.After(10 * time.Second):
			t.Errorf("run did not return after cancel")
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the banner: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "erpsim listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("banner: got %q", line)
	}
	go io.Copy(io.Discard, pr)
	return url
}

func envelopeForm(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/sim/admin/envelope")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ Form string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.Form
}

func TestRun(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		form string
	}{
		{"defaults", []string{"-addr", "127.0.0.1:0"}, nil, "v2"},
		{"environment", nil, map[string]string{"ERPSIM_ADDR": "127.0.0.1:0", "ERPSIM_ENVELOPE": "v4"}, "v4"},
		{"flags over environment", []string{"-addr", "127.0.0.1:0", "-envelope", "v2detail"}, map[string]string{"ERPSIM_ENVELOPE": "v4"}, "v2detail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := start(t, tt.args, tt.env)
			if got := envelopeForm(t, url); got != tt.form {
				t.Errorf("envelope: got %q, want %q", got, tt.form)
			}
			resp, err := http.Get(url + "/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier('100042')")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("supplier: got %d, want 200", resp.StatusCode)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown flag", []string{"-port", "1"}, nil, "flag provided but not defined"},
		{"auto-approve limit", []string{"-auto-approve-limit", "500"}, nil, "flag provided but not defined: -auto-approve-limit"},
		{"bad envelope", []string{"-envelope", "xml"}, nil, "invalid -envelope"},
		{"extra argument", []string{"serve"}, nil, "unexpected arguments"},
		{"bad address", []string{"-addr", "127.0.0.1:-1"}, nil, "invalid port"},
		{"bad faults", []string{"-faults", "*:kind=hang,p=0.5,schedule=x"}, nil, "invalid -faults: sim: fault rule 1"},
		{"bad faults in environment", nil, map[string]string{"ERPSIM_FAULTS": "payroll:kind=hang"}, `unknown service "payroll"`},
		{"bad seed", []string{"-seed", "-1"}, nil, `invalid -seed "-1"`},
		{"bad seed in environment", nil, map[string]string{"ERPSIM_SEED": "x"}, `invalid -seed "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: got %q, want nothing", stdout.String())
			}
		})
	}
}

// faultSequence sends n GETs of a supplier and returns which were answered
// 503.
func faultSequence(t *testing.T, url string, n int) []bool {
	t.Helper()
	out := make([]bool, n)
	for i := range out {
		resp, err := http.Get(url + "/sap/opu/odata/sap/API_BUSINESS_PARTNER/A_Supplier('100042')")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out[i] = resp.StatusCode == http.StatusServiceUnavailable
		if !out[i] && resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: got %d", i, resp.StatusCode)
		}
	}
	return out
}

func TestRunFaults(t *testing.T) {
	url := start(t, []string{"-addr", "127.0.0.1:0", "-faults", "business_partner:status=503;purchase_order:kind=reset,method=POST"}, nil)
	if got := faultSequence(t, url, 3); !slices.Equal(got, []bool{true, false, false}) {
		t.Errorf("-faults status=503: got %v, want one 503", got)
	}
	resp, err := http.Get(url + "/sim/admin/faults")
	if err != nil {
		t.Fatal(err)
	}
	var listed struct{ Faults []sim.FaultStat }
	err = json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if err != nil || len(listed.Faults) != 1 || listed.Faults[0].Kind != sim.FaultReset || listed.Faults[0].Method != "POST" {
		t.Errorf("rules left: got %+v %v", listed.Faults, err)
	}

	// The seed from the environment or the flag reproduces a simulator
	// built with the same seed and rules.
	const spec, n = "business_partner:status=503,p=0.5", 40
	want := func(seed uint64) []bool {
		rules, err := sim.ParseFaults(spec)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(sim.New(sim.Options{Seed: seed, Faults: rules}))
		defer ts.Close()
		return faultSequence(t, ts.URL, n)
	}
	seven, eight := want(7), want(8)
	if slices.Equal(seven, eight) {
		t.Fatalf("seeds 7 and 8 gave the same sequence")
	}
	env := map[string]string{"ERPSIM_ADDR": "127.0.0.1:0", "ERPSIM_FAULTS": spec, "ERPSIM_SEED": "7"}
	if got := faultSequence(t, start(t, nil, env), n); !slices.Equal(got, seven) {
		t.Errorf("ERPSIM_SEED=7: got %v, want %v", got, seven)
	}
	if got := faultSequence(t, start(t, []string{"-seed", "8"}, env), n); !slices.Equal(got, eight) {
		t.Errorf("-seed 8 over ERPSIM_SEED=7: got %v, want %v", got, eight)
	}
	if got := faultSequence(t, start(t, []string{"-faults", ""}, env), n); slices.Contains(got, true) {
		t.Errorf("-faults '' over ERPSIM_FAULTS: got faults %v", got)
	}
}
