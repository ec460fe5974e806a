package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The walks of the documentation are executed: every `$ curl …` line in a
// fenced block of README.md and of the guides in walkedDocs runs in order,
// through bash, against a freshly started gateway on free ports, and what it
// prints must be what the document shows under it. The documents name
// localhost:8080 (the gateway) and localhost:8090 (its
// simulated ERP); the walk puts the real addresses in their place.
//
// What may differ, as the README says: an RFC 3339 time matches any RFC 3339
// time, and "…" as a whole JSON string matches any string. Everything else,
// the status line, the headers shown and every byte of the body, must be as
// written.

// readmeExample is one command of the README and the output shown under it.
type readmeExample struct {
	line    int      // line of the command in its document, from 1
	command string   // without the "$ ", continuation lines joined
	want    []string // the lines shown under it
}

// parseREADMEExamples returns the `$ ` commands of md's fenced blocks in
// order. A command line ending in a backslash continues on the next line.
func parseREADMEExamples(md string) []readmeExample {
	var (
		out     []readmeExample
		inBlock bool
		cur     *readmeExample
		cont    bool
	)
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			flush()
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		switch {
		case cont:
			cur.command += "\n" + line
		case strings.HasPrefix(line, "$ "):
			flush()
			cur = &readmeExample{line: i + 1, command: strings.TrimPrefix(line, "$ ")}
		case cur != nil:
			cur.want = append(cur.want, line)
		}
		cont = cur != nil && len(cur.want) == 0 && strings.HasSuffix(line, `\`)
	}
	flush()
	return out
}

var (
	readmeTime   = regexp.MustCompile(`"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"`)
	readmeHeader = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]*): (.*)$`)
)

// readmePattern turns text shown in the README into a regular expression
// that matches it exactly, but for the parts the README says will differ.
func readmePattern(shown string) *regexp.Regexp {
	const anyTime, anyString = "\x00time\x00", "\x00string\x00"
	s := readmeTime.ReplaceAllString(shown, anyTime)
	s = strings.ReplaceAll(s, `"…"`, anyString)
	s = regexp.QuoteMeta(s)
	s = strings.ReplaceAll(s, anyTime, readmeTime.String())
	s = strings.ReplaceAll(s, anyString, `"(?:[^"\\]|\\.)*"`)
	return regexp.MustCompile(`^` + s + `$`)
}

// checkREADMEOutput compares what a command printed with what the README
// shows. For a curl -i answer the README shows the status line, then any
// headers that matter, then the body; the headers must be among those
// sent. Any other output is compared as a whole.
func checkREADMEOutput(want []string, got string) error {
	got = strings.TrimRight(strings.ReplaceAll(got, "\r\n", "\n"), "\n")
	if len(want) > 0 && strings.HasPrefix(want[0], "HTTP/") {
		head, body, _ := strings.Cut(got, "\n\n")
		lines := strings.Split(head, "\n")
		if lines[0] != want[0] {
			return fmt.Errorf("status line %q, README shows %q", lines[0], want[0])
		}
		headers := map[string][]string{}
		for _, l := range lines[1:] {
			if m := readmeHeader.FindStringSubmatch(l); m != nil {
				name := strings.ToLower(m[1])
				headers[name] = append(headers[name], m[2])
			}
		}
		rest := want[1:]
		for len(rest) > 0 {
			m := readmeHeader.FindStringSubmatch(rest[0])
			if m == nil {
				break
			}
			found := false
			for _, v := range headers[strings.ToLower(m[1])] {
				found = found || v == m[2]
			}
			if !found {
				return fmt.Errorf("header %q not in the answer; it has %s: %q", rest[0], m[1], headers[strings.ToLower(m[1])])
			}
			rest = rest[1:]
		}
		want, got = rest, body
	}
	shown := strings.Join(want, "\n")
	if !readmePattern(shown).MatchString(got) {
		return fmt.Errorf("output differs from the README\n got: %s\nwant: %s", got, shown)
	}
	return nil
}

// walkedDocs are the documents whose `$ curl` examples are executed, each
// against a gateway of its own, with the fewest commands each must show
// (so that a walk moved elsewhere is not silently left unchecked).
var walkedDocs = []struct {
	path string
	min  int
}{
	{"README.md", 3},
	{"api/README.md", 30},
	{"api/mcp/README.md", 1},
	{"erp/sim/README.md", 2},
}

// walkREADME runs the examples of every walked document.
func walkREADME(t *testing.T, shift time.Duration) {
	for _, d := range walkedDocs {
		t.Run(d.path, func(t *testing.T) { walkDoc(t, d.path, d.min, shift) })
	}
}

// walkDoc runs every example of the document at path (from the
// repository's root) against a gateway started with the clock now (and its
// commands under faketime, shifted as far, when shift is not zero).
func walkDoc(t *testing.T, path string, min int, shift time.Duration) {
	t.Helper()
	file := "../../" + path
	md, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	examples := parseREADMEExamples(string(md))
	if len(examples) < min {
		t.Fatalf("%s shows %d commands, want at least %d", path, len(examples), min)
	}
	prefix := []string{needTool(t, "bash")}
	needTool(t, "curl")
	if shift != 0 {
		prefix = []string{needTool(t, "faketime"), "-f", fmt.Sprintf("+%dd", int(shift.Hours()/24)), prefix[0]}
	}

	cfg, err := parseConfig([]string{"-addr", "127.0.0.1:0", "-sim-addr", "127.0.0.1:0", "-log-level", "error", "-data-dir", t.TempDir()},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.now = func() time.Time { return time.Now().Add(shift) }
	var stderr syncBuffer
	line := startLines(t, 1, func(ctx context.Context, stdout io.Writer) error {
		return serve(ctx, cfg, stdout, &stderr)
	})[0]
	// The demonstration people's keys, as the block the gateway printed
	// before its start line exports them: the README's commands use them
	// as a reader who pasted that block would.
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C.UTF-8"}
	exports := readmeExport.FindAllStringSubmatch(stderr.String(), -1)
	if len(exports) == 0 {
		t.Fatalf("the gateway printed no demonstration people's keys:\n%s", stderr.String())
	}
	for _, e := range exports {
		env = append(env, e[1]+"="+e[2])
	}
	m := regexp.MustCompile(`listening on http://(127\.0\.0\.1:\d+) .* at (http://\S+)\)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q does not name the gateway and the simulator", line)
	}
	simURL, err := url.Parse(m[2])
	if err != nil {
		t.Fatal(err)
	}
	addrs := strings.NewReplacer("localhost:8080", m[1], "localhost:8090", simURL.Host)

	lines := strings.Split(string(md), "\n")
	updated := false
	for _, ex := range examples {
		if !strings.HasPrefix(ex.command, "curl ") {
			t.Fatalf("%s:%d: the walk runs curl commands only, not %q", path, ex.line, ex.command)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, prefix[0], append(prefix[1:], "-c", addrs.Replace(ex.command))...)
		cmd.Env = env
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, ex.line, ex.command, err)
		}
		if err := checkREADMEOutput(ex.want, string(out)); err != nil {
			if *update && shift == 0 {
				shown := readmeShown(ex.want, string(out))
				first := ex.line + strings.Count(ex.command, "\n") // index of the first output line
				lines = append(lines[:first], append(shown, lines[first+len(ex.want):]...)...)
				updated = true
				// Later examples moved with the lines added or removed.
				delta := len(shown) - len(ex.want)
				for i := range examples {
					if examples[i].line > ex.line {
						examples[i].line += delta
					}
				}
				continue
			}
			t.Errorf("%s:%d: %s\n%v", path, ex.line, firstLine(ex.command), err)
		}
	}
	if updated {
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: examples rewritten from the gateway's answers; read the diff", path)
	}
}

// readmeExport is a line of the gateway's block of demonstration people:
// "  export KELLER_KEY=<key>   # m.keller: approve, review".
var readmeExport = regexp.MustCompile(`(?m)^  export ([A-Z_]+)=([0-9a-f]+) `)

var update = flag.Bool("update", false, "rewrite the README's examples that differ from what the gateway answers")

// readmeShown is what the README should show for an answer: for a curl -i
// answer the status line, the headers the README showed that the answer
// still has, and the body.
func readmeShown(want []string, got string) []string {
	got = strings.TrimRight(strings.ReplaceAll(got, "\r\n", "\n"), "\n")
	if len(want) == 0 || !strings.HasPrefix(want[0], "HTTP/") {
		return strings.Split(got, "\n")
	}
	head, body, _ := strings.Cut(got, "\n\n")
	hl := strings.Split(head, "\n")
	shown := []string{hl[0]}
	for _, w := range want[1:] {
		m := readmeHeader.FindStringSubmatch(w)
		if m == nil {
			break
		}
		for _, h := range hl[1:] {
			if hm := readmeHeader.FindStringSubmatch(h); hm != nil && strings.EqualFold(hm[1], m[1]) {
				shown = append(shown, m[1]+": "+hm[2])
				break
			}
		}
	}
	return append(shown, strings.Split(body, "\n")...)
}

// TestREADMEWalk runs the README's curl walk as a new user would.
func TestREADMEWalk(t *testing.T) { walkREADME(t, 0) }

// TestREADMEWalkOnAnotherDate runs the walk with the gateway's clock and
// the commands' clock (faketime) seven years ahead: nothing in the README,
// the golden set or the gateway may depend on today's date.
func TestREADMEWalkOnAnotherDate(t *testing.T) { walkREADME(t, 2557*24*time.Hour) }

// TestREADMEWalker holds the walker itself to failing on an edited example
// and to passing only the differences the README names.
func TestREADMEWalker(t *testing.T) {
	md := "text\n```\n$ curl -s -i localhost:8080/a \\\n    -H 'X: y'\nHTTP/1.1 200 OK\nIdempotent-Replayed: true\n" +
		`{"id":"A1","at":"2026-11-29T13:35:59Z","n":"…"}` + "\n$ curl -s localhost:8080/b\nok\n```\n```\nnot a command\n```\n"
	examples := parseREADMEExamples(md)
	if len(examples) != 2 || examples[0].line != 3 || examples[0].command != "curl -s -i localhost:8080/a \\\n    -H 'X: y'" ||
		len(examples[0].want) != 3 || examples[1].command != "curl -s localhost:8080/b" || len(examples[1].want) != 1 {
		t.Fatalf("parsed %+v", examples)
	}
	answer := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nIdempotent-Replayed: true\r\n\r\n" +
		`{"id":"A1","at":"2033-12-01T09:00:00.123Z","n":"x\"y"}` + "\n"
	if err := checkREADMEOutput(examples[0].want, answer); err != nil {
		t.Errorf("an answer as shown: %v", err)
	}
	for _, c := range []struct{ name, answer string }{
		{"another status", strings.Replace(answer, "200 OK", "201 Created", 1)},
		{"a header missing", strings.Replace(answer, "Idempotent-Replayed: true\r\n", "", 1)},
		{"another id", strings.Replace(answer, `"A1"`, `"A2"`, 1)},
		{"a field more", strings.Replace(answer, `"n"`, `"extra":1,"n"`, 1)},
		{"not a time", strings.Replace(answer, "2033-12-01T09:00:00.123Z", "soon", 1)},
		{"a number for the string", strings.Replace(answer, `"x\"y"`, `1`, 1)},
	} {
		if err := checkREADMEOutput(examples[0].want, c.answer); err == nil {
			t.Errorf("%s: the walker passed %q", c.name, c.answer)
		}
	}
	edited := strings.Replace(md, `"id":"A1"`, `"id":"A9"`, 1)
	if err := checkREADMEOutput(parseREADMEExamples(edited)[0].want, answer); err == nil {
		t.Error("an edited example passed")
	}
	if err := checkREADMEOutput(examples[1].want, "ok\n"); err != nil {
		t.Errorf("plain output as shown: %v", err)
	}
	if err := checkREADMEOutput(examples[1].want, "ok\nmore\n"); err == nil {
		t.Error("plain output with a line more passed")
	}
}

// needTool returns the path of a program a test needs, or fails the test
// saying how to install it: a test that cannot run must not pass.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on the PATH: install it (Debian: apt-get install %s; make test installs it)", name, name)
	}
	return path
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
