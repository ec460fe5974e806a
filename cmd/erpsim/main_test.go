package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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
		{"environment", nil, map[string]string{"ERPSIM_ADDR": "127.0.0.1:0", "ERPSIM_ENVELOPE": "v4", "ERPSIM_AUTO_APPROVE_LIMIT": "20000"}, "v4"},
		{"flags over environment", []string{"-addr", "127.0.0.1:0", "-envelope", "v2detail", "-auto-approve-limit", "500"}, map[string]string{"ERPSIM_ENVELOPE": "v4"}, "v2detail"},
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
		{"bad limit", []string{"-auto-approve-limit", "lots"}, nil, "invalid -auto-approve-limit"},
		{"bad limit in environment", nil, map[string]string{"ERPSIM_AUTO_APPROVE_LIMIT": "x"}, "invalid -auto-approve-limit"},
		{"bad envelope", []string{"-envelope", "xml"}, nil, "invalid -envelope"},
		{"extra argument", []string{"serve"}, nil, "unexpected arguments"},
		{"bad address", []string{"-addr", "127.0.0.1:-1"}, nil, "invalid port"},
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
