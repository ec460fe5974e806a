package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/erpgate/erpgate/cmd/erpgate/internal/cli"
	"github.com/erpgate/erpgate/cmd/erpgate/internal/conformance"
	"github.com/erpgate/erpgate/cmd/erpgate/internal/eval"
)

// version is the release of the binary, set at build time with
// -ldflags "-X main.version=v1.2.3". Empty, it comes from the build info.
var version string

// synopsis heads the gateway's usage, above its flags.
const synopsis = `Usage:
  erpgate [flags]              run the gateway (without -erp-url, on an embedded simulated S/4HANA)
  erpgate eval [flags]         play the reference agent over the golden set and print what each case cost
  erpgate conformance [flags]  check that an MCP connector carries the error contract intact
  erpgate version              print the version (also -version)
  erpgate help                 print this help (also -h)

"erpgate eval -h" and "erpgate conformance -h" show the flags of those subcommands.

Flags of the gateway. Every flag can also be set by the environment variable shown.

`

// runEval is "erpgate eval"; tests of the dispatch replace it.
var runEval = eval.Run

// usageError is a mistake on the command line; main exits with status 2
// for it.
type usageError = cli.UsageError

// dispatch handles what comes before the gateway's configuration: the
// subcommands, help and the version. It reports whether it handled args;
// when it did not, args are the gateway's flags and parse without a
// mistake of syntax.
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (bool, error) {
	if len(args) > 0 {
		switch args[0] {
		case "eval":
			return true, runEval(ctx, args[1:], getenv, stdout, stderr)
		case "conformance":
			return true, conformance.Run(ctx, args[1:], getenv, stdout, stderr)
		case "help":
			return true, runHelp(ctx, args[1:], getenv, stdout, stderr)
		case "version":
			if len(args) > 1 {
				return true, &usageError{Err: fmt.Errorf("version: unexpected argument %q", args[1]), Hint: "run erpgate -h for usage"}
			}
			fmt.Fprintln(stdout, versionLine(version, buildInfo()))
			return true, nil
		}
	}
	// The gateway's own flags, parsed once here for -h and -version: the
	// usage goes to stdout when asked for, and a mistake comes back as one
	// line before anything starts.
	file, _ := loadConfigFile(configPath(args, getenv)) // a bad file is parseConfig's to report
	fs, _ := gatewayFlags(file, getenv, stdout)
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := parseFlags(fs, args, "erpgate -h"); err != nil {
		return true, err
	}
	if *showVersion {
		fmt.Fprintln(stdout, versionLine(version, buildInfo()))
		return true, nil
	}
	return false, nil
}

// runHelp is "erpgate help [eval|conformance]".
func runHelp(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var err error
	switch {
	case len(args) == 0:
		file, _ := loadConfigFile(configPath(nil, getenv))
		fs, _ := gatewayFlags(file, getenv, stdout)
		fs.Usage()
	case len(args) == 1 && args[0] == "eval":
		err = runEval(ctx, []string{"-h"}, getenv, stdout, stderr)
	case len(args) == 1 && args[0] == "conformance":
		err = conformance.Run(ctx, []string{"-h"}, getenv, stdout, stderr)
	default:
		return &usageError{Err: fmt.Errorf("help: unknown subcommand %q", strings.Join(args, " ")), Hint: "run erpgate -h for usage"}
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// parseFlags parses args with fs as cli.ParseFlags does.
func parseFlags(fs *flag.FlagSet, args []string, helpCmd string) error {
	return cli.ParseFlags(fs, args, helpCmd)
}

// buildInfo is the binary's build information, or nil without it.
func buildInfo() *debug.BuildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return info
}

// versionLine is what -version prints: "erpgate v1.2.3 (commit
// 0123456789ab, modified, built with go1.26.0)". The version is v when set,
// else the main module's version from info, else "devel"; the commit is
// info's vcs.revision, or "unknown" when the build recorded none (go run,
// go test). info may be nil.
func versionLine(v string, info *debug.BuildInfo) string {
	if v == "" && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	commit, modified, goVersion := "unknown", false, runtime.Version()
	if info != nil {
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if s.Value != "" {
					commit = s.Value[:min(12, len(s.Value))]
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if modified {
		commit += ", modified"
	}
	return fmt.Sprintf("erpgate %s (commit %s, built with %s)", v, commit, goVersion)
}
