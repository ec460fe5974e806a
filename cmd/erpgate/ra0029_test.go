package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ra0029Items are the items of RA0029's checklist, in the order of the
// table in deploy/README.md: each is the start of a row's first cell.
var ra0029Items = []string{
	"Never pass the caller's token through",
	"Validate all tool input",
	"TLS 1.2 or later",
	"Secrets in a vault",
	"Rate limits not exceeding SAP's quotas",
	"Timeouts and circuit breakers",
	"Stateless and horizontally scalable",
	"One log entry per invocation",
	"W3C trace context into the SAP calls",
	"Versioned tool manifests",
}

// namedTest is a test a row of the table names: `TestName` in `dir/x_test.go`.
var namedTest = regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)` in `([A-Za-z0-9_./-]+_test\\.go)`")

// TestRA0029TableNamesTestsThatExist reads the RA0029 table of
// deploy/README.md: it has a row for every item of the checklist, in
// order, and every test a row names is a function of the file it names,
// so that the table cannot name a test that is gone; every row names at
// least one.
func TestRA0029TableNamesTestsThatExist(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## SAP's rules for third-party MCP access (RA0029)\n")
	if !ok {
		t.Fatal(`deploy/README.md has no section "SAP's rules for third-party MCP access (RA0029)"`)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| RA0029 item ") {
			rows = append(rows, line)
		}
	}
	if len(rows) != len(ra0029Items) {
		t.Fatalf("the table has %d rows, want one for each of the %d items", len(rows), len(ra0029Items))
	}
	named := 0
	for i, row := range rows {
		cells := strings.Split(strings.Trim(row, "| "), " | ")
		if len(cells) != 4 {
			t.Errorf("row %d has %d cells, want 4 (item, how, operator, test): %s", i+1, len(cells), row)
			continue
		}
		if !strings.HasPrefix(cells[0], ra0029Items[i]) {
			t.Errorf("row %d is %q, want the item %q", i+1, cells[0], ra0029Items[i])
		}
		tests := namedTest.FindAllStringSubmatch(cells[3], -1)
		if len(tests) == 0 {
			t.Errorf("row %q names no test", ra0029Items[i])
		}
		for _, m := range tests {
			name, file := m[1], m[2]
			src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
			if err != nil {
				t.Errorf("row %q: %s: %v", ra0029Items[i], file, err)
				continue
			}
			if !regexp.MustCompile(`(?m)^func ` + name + `\(`).Match(src) {
				t.Errorf("row %q names %s, which is not a function of %s", ra0029Items[i], name, file)
			}
			named++
		}
	}
	if named < len(ra0029Items) {
		t.Errorf("%d tests named for %d rows", named, len(ra0029Items))
	}
}

// TestTLSBelow12Refused: the gateway serving TLS (-tls-cert, -tls-key)
// refuses a client that offers nothing newer than TLS 1.1, and serves one
// that offers TLS 1.2.
func TestTLSBelow12Refused(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	line := runGateway(t, nil, 1, "-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-tls-cert", certFile, "-tls-key", keyFile, "-data-dir", t.TempDir())[0]
	m := regexp.MustCompile(`listening on https://(127\.0\.0\.1:\d+) `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q", line)
	}
	for _, c := range []struct {
		max  uint16
		name string
		ok   bool
	}{{tls.VersionTLS11, "TLS 1.1", false}, {tls.VersionTLS10, "TLS 1.0", false}, {tls.VersionTLS12, "TLS 1.2", true}} {
		conn, err := tls.Dial("tcp", m[1], &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: c.max})
		if err == nil {
			if v := conn.ConnectionState().Version; v != c.max {
				t.Errorf("%s: handshake at version %x", c.name, v)
			}
			conn.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("%s: handshake error %v, want it to succeed: %v", c.name, err, c.ok)
		}
	}
}
