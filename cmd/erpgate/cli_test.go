package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// runCLI runs the command line args to its end and returns what it
// printed to stdout and stderr.
func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut strings.Builder
	err = run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestHelpNamesTheSubcommands(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"help"}, {"-addr", "127.0.0.1:0", "-h"}, {"-h", "-adr", "x"}} {
		stdout, stderr, err := runCLI(t, nil, args...)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if stderr != "" {
			t.Errorf("%q printed to stderr:\n%s", args, stderr)
		}
		lines := strings.Split(stdout, "\n")
		if len(lines) < 5 || lines[0] != "Usage:" || !strings.HasPrefix(lines[1], "  erpgate [flags] ") ||
			!strings.HasPrefix(lines[2], "  erpgate eval [flags] ") || !strings.HasPrefix(lines[3], "  erpgate conformance [flags] ") {
			t.Errorf("%q: the usage does not start with the synopsis:\n%s", args, stdout)
			continue
		}
		for _, want := range []string{`"erpgate eval -h"`, `"erpgate conformance -h"`, "erpgate version", "-version"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%q: the usage does not mention %s", args, want)
			}
		}
		for _, s := range settings {
			if !strings.Contains(stdout, "  -"+s.name+" (env "+s.env+", default ") {
				t.Errorf("%q: the usage does not list -%s", args, s.name)
			}
		}
		if strings.Contains(stdout, "-version (env") {
			t.Errorf("%q: -version is listed as a setting", args)
		}
	}
}

func TestHelpShowsTheEffectiveDefaults(t *testing.T) {
	// The environment's value is the default a flag overrides; a config
	// file that cannot be read does not stand in the way of the help.
	stdout, _, err := runCLI(t, map[string]string{"ERPGATE_ADDR": "127.0.0.1:9999", "ERPGATE_CONFIG": t.TempDir() + "/missing.env"}, "-h")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if !strings.Contains(stdout, `-addr (env ERPGATE_ADDR, default "127.0.0.1:9999")`) {
		t.Errorf("-h does not show the environment's -addr:\n%.600s", stdout)
	}
}

func TestHelpOfTheSubcommands(t *testing.T) {
	for topic, want := range map[string]string{"eval": "-json", "conformance": "-url"} {
		_, stderr, err := runCLI(t, nil, "help", topic)
		if err != nil {
			t.Errorf("help %s: %v", topic, err)
		}
		if !strings.Contains(stderr, want) {
			t.Errorf("help %s does not list %s:\n%s", topic, want, stderr)
		}
	}
}

func TestVersionLine(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name    string
		version string
		info    *debug.BuildInfo
		want    string
	}{
		{"no build info", "", nil, "erpgate devel (commit unknown, built with " + runtime.Version() + ")"},
		{"go run", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}},
			"erpgate devel (commit unknown, built with go1.26.1)"},
		{"go test", "", &debug.BuildInfo{GoVersion: "go1.26.1"}, "erpgate devel (commit unknown, built with go1.26.1)"},
		{"clean checkout", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"erpgate devel (commit 0123456789ab, built with go1.26.1)"},
		{"edited checkout", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"erpgate devel (commit 0123456789ab, modified, built with go1.26.1)"},
		{"module version", "", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.4.0"}, Settings: vcs("false")},
			"erpgate v0.4.0 (commit 0123456789ab, built with go1.26.1)"},
		{"-ldflags -X main.version", "v1.2.3", &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.4.0"}, Settings: vcs("true")},
			"erpgate v1.2.3 (commit 0123456789ab, modified, built with go1.26.1)"},
		{"-X without build info", "v1.2.3", nil, "erpgate v1.2.3 (commit unknown, built with " + runtime.Version() + ")"},
		{"short revision", "", &debug.BuildInfo{GoVersion: "go1.26.1", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}}},
			"erpgate devel (commit abc123, built with go1.26.1)"},
	} {
		if got := versionLine(c.version, c.info); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	line := regexp.MustCompile(`^erpgate \S+ \(commit ([0-9a-f]{1,12}(, modified)?|unknown), built with go\S+\)\n$`)
	for _, args := range [][]string{{"-version"}, {"--version"}, {"version"}, {"-addr", "127.0.0.1:0", "-version"}} {
		stdout, stderr, err := runCLI(t, map[string]string{"ERPGATE_CONFIG": t.TempDir() + "/missing.env"}, args...)
		if err != nil || stderr != "" || !line.MatchString(stdout) {
			t.Errorf("%q: %v, stdout %q, stderr %q", args, err, stdout, stderr)
		}
	}

	defer func(v string) { version = v }(version)
	version = "v9.8.7"
	if stdout, _, err := runCLI(t, nil, "-version"); err != nil || !strings.HasPrefix(stdout, "erpgate v9.8.7 (commit ") {
		t.Errorf("with main.version set: %v %q", err, stdout)
	}
}

func TestCommandLineMistakesTakeOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-adr", ":8080"}, "flag provided but not defined: -adr (run erpgate -h for the flags)"},
		{[]string{"-addr", "127.0.0.1:0", "-sim-addr"}, "flag needs an argument: -sim-addr (run erpgate -h for the flags)"},
		{[]string{"-version=maybe"}, `invalid boolean value "maybe" for -version`},
		{[]string{"---addr", ":8080"}, "bad flag syntax: ---addr (run erpgate -h for the flags)"},
		{[]string{"-addr", "127.0.0.1:0", "serve"}, `unexpected argument "serve" (run erpgate -h for usage)`},
		{[]string{"version", "now"}, `version: unexpected argument "now" (run erpgate -h for usage)`},
		{[]string{"help", "me"}, `help: unknown subcommand "me" (run erpgate -h for usage)`},
	} {
		stdout, stderr, err := runCLI(t, nil, c.args...)
		if _, ok := errors.AsType[*usageError](err); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want a usage error with %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: the error takes more than one line: %q", c.args, err)
		}
		if stdout != "" || stderr != "" {
			t.Errorf("%q printed besides the error:\nstdout %q\nstderr %.200q", c.args, stdout, stderr)
		}
	}
}

func TestParseFlagsOfASubcommand(t *testing.T) {
	var out strings.Builder
	fs := flag.NewFlagSet("erpgate eval", flag.ContinueOnError)
	fs.SetOutput(&out)
	fs.Bool("json", false, "print JSON")
	err := parseFlags(fs, []string{"-jsn"}, "erpgate eval -h")
	if err == nil || err.Error() != "flag provided but not defined: -jsn (run erpgate eval -h for the flags)" || out.Len() > 0 {
		t.Errorf("unknown flag: %v, printed %q", err, out.String())
	}
	if err := parseFlags(fs, []string{"-h"}, "erpgate eval -h"); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(out.String(), "Usage of erpgate eval:") || !strings.Contains(out.String(), "-json") {
		t.Errorf("-h: %v, printed %q", err, out.String())
	}
}

func TestAddressesAreCheckedAtStart(t *testing.T) {
	const addrWhy = "must be host:port with a port from 0 to 65535"
	for _, bad := range []string{"8080", "localhost", ":99999", ":65536", ":-1", ":http-alt", "localhost:", "::1:8080", ""} {
		for _, s := range []struct{ flag, env string }{{"addr", "ERPGATE_ADDR"}, {"sim-addr", "ERPGATE_SIM_ADDR"}} {
			want := "-" + s.flag + " (" + s.env + "): " + addrWhy
			if _, err := parseConfig([]string{"-" + s.flag, bad}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("-%s %q: %v, want %q", s.flag, bad, err, want)
			}
			if bad == "" {
				continue // an empty variable means the default
			}
			if _, err := parseConfig(nil, func(k string) string { return map[string]string{s.env: bad}[k] }, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s=%q: %v, want %q", s.env, bad, err, want)
			}
		}
	}
	for _, good := range []string{":8080", "127.0.0.1:0", "localhost:8080", "[::1]:0", "0.0.0.0:65535", "gateway.internal:443"} {
		if _, err := parseConfig([]string{"-addr", good, "-sim-addr", good}, func(string) string { return "" }, io.Discard); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
	for addr, ok := range map[string]bool{"127.0.0.1:6060": true, "localhost:0": true, "[::1]:6060": true,
		"127.0.0.1:99999": false, "localhost:pprof": false, "127.0.0.1:": false, "127.0.0.1": false, "0.0.0.0:6060": false} {
		_, err := parseConfig([]string{"-debug-addr", addr}, func(string) string { return "" }, io.Discard)
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "-debug-addr (ERPGATE_DEBUG_ADDR): must be a loopback address")) {
			t.Errorf("-debug-addr %q: %v", addr, err)
		}
	}

	// Through run the mistake comes back before anything listens.
	_, _, err := runCLI(t, nil, "-addr", "8080", "-sim-addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "-addr (ERPGATE_ADDR): "+addrWhy) {
		t.Errorf("run -addr 8080: %v", err)
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		t.Error("a bad value is reported as a mistake of syntax")
	}
}
