package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/errmap"
)

// The documentation is the README, a page for a newcomer, and guides beside
// the code they describe. These tests hold it together: every relative link
// resolves, the README stays a page one reads, and its codes table is the
// catalogue's.

const repoRoot = "../.."

// docs returns the repository's Markdown files, by path from its root,
// outside dependencies and tools' caches.
func docs(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	mdFence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// but hyphens and underscores dropped, spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(md, ""), -1) {
		out[anchor(strings.ReplaceAll(m[1], "`", ""))] = true
	}
	return out
}

// TestDocsLinksResolve follows every relative link of every Markdown file:
// the file or directory exists, and a #fragment names a heading of the
// Markdown file it points into.
func TestDocsLinksResolve(t *testing.T) {
	files := docs(t)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files, want the README and its guides: %v", len(files), files)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		md := mdFence.ReplaceAllString(string(b), "")
		for _, m := range mdLink.FindAllStringSubmatch(md, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
				if _, err := os.Stat(filepath.Join(repoRoot, target)); err != nil {
					t.Errorf("%s: link %q: %s does not exist", f, link, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			tb, err := os.ReadFile(filepath.Join(repoRoot, target))
			if err != nil {
				t.Errorf("%s: link %q: %v", f, link, err)
				continue
			}
			if !anchors(string(tb))[frag] {
				t.Errorf("%s: link %q: %s has no heading #%s", f, link, target, frag)
			}
		}
	}
}

// TestREADMEIsAPage holds the README to a page a newcomer reads through:
// about 300 lines, what lies beyond goes into the guides it links to.
func TestREADMEIsAPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines > 350 || len(b) > 36<<10 {
		t.Errorf("README.md has %d lines and %d bytes; keep it to about 300 lines and 36 KiB, and move the rest into a guide", lines, len(b))
	}
	for _, must := range []string{"go run ./cmd/erpgate", "bash .ci/test.sh", `"mcpServers"`, `"type": "http"`, "ERPGATE_ERP_URL="} {
		if !strings.Contains(string(b), must) {
			t.Errorf("README.md does not show %s", must)
		}
	}
}

// TestREADMECodesAreTheCatalogue checks the README's codes table row by row
// against errmap's catalogue: every code, with its HTTP status, retryable
// and next_action, and no code the catalogue lacks.
func TestREADMECodesAreTheCatalogue(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| code | HTTP | retryable | next_action | what it means |\n|---|---|---|---|---|\n")
	if !ok {
		t.Fatal("README.md has no codes table")
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		rows[cells[0]] = cells
	}
	for _, e := range errmap.Catalogue() {
		cells, ok := rows[string(e.Code)]
		if !ok {
			t.Errorf("README's codes table has no row for %s", e.Code)
			continue
		}
		delete(rows, string(e.Code))
		retryable := strconv.FormatBool(e.Retryable)
		if !e.Error {
			retryable = "—"
		}
		want := []string{strconv.Itoa(e.Status), retryable, string(e.NextAction)}
		if len(cells) != 5 || fmt.Sprint(cells[1:4]) != fmt.Sprint(want) {
			t.Errorf("README's row of %s says %v, the catalogue %v", e.Code, cells[1:min(4, len(cells))], want)
		}
	}
	for code := range rows {
		t.Errorf("README's codes table has %s, which the catalogue lacks", code)
	}
}

// TestREADMEVariablesAreSettings: every ERPGATE_ variable the README's
// examples set is a setting of the gateway, spelt as it reads it.
func TestREADMEVariablesAreSettings(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, s := range settings {
		known[s.env] = true
	}
	set := regexp.MustCompile(`(?m)^(ERPGATE_[A-Z0-9_]+)=`).FindAllStringSubmatch(string(readme), -1)
	if len(set) < 10 {
		t.Fatalf("the README sets %d ERPGATE_ variables; its SAP examples set more", len(set))
	}
	for _, m := range set {
		if !known[m[1]] {
			t.Errorf("the README sets %s, which is no setting", m[1])
		}
	}
}
