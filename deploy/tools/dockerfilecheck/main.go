// Command dockerfilecheck checks deploy/Dockerfile without a Docker engine:
// it parses it with BuildKit's own Dockerfile parser and runs BuildKit's
// parse-time lint rules (those of `docker build --check` that need no
// build), then checks what erpgate's image promises: a static binary
// (CGO_ENABLED=0) on distroless static nonroot, a numeric non-root user,
// port 8080, ERPGATE_ADDR and ERPGATE_LOG_FORMAT set, no HEALTHCHECK (no
// shell in distroless). It also checks that <Dockerfile>.dockerignore
// excludes what it should and keeps what the build copies.
//
// Usage: go run ./dockerfilecheck DOCKERFILE
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

var problems []string

func problem(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerfilecheck DOCKERFILE")
		os.Exit(2)
	}
	path := os.Args[1]
	f, err := os.Open(path)
	if err != nil {
		fail(err)
	}
	defer f.Close()
	ast, err := parser.Parse(f)
	if err != nil {
		fail(err)
	}
	for _, w := range ast.Warnings {
		problem("parser: %s", w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, description, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		problem("lint %s (line %d): %s", rule, line, msg)
	}})
	stages, _, err := instructions.Parse(ast.AST, lint)
	if err != nil {
		fail(err)
	}
	if len(stages) < 2 {
		problem("want a multi-stage build, got %d stage(s)", len(stages))
		report()
	}

	var staticBuild bool
	for _, st := range stages[:len(stages)-1] {
		for _, c := range st.Commands {
			if run, ok := c.(*instructions.RunCommand); ok {
				cmd := strings.Join(run.CmdLine, " ")
				if strings.Contains(cmd, "go build") && strings.Contains(cmd, "CGO_ENABLED=0") {
					staticBuild = true
				}
			}
		}
	}
	if !staticBuild {
		problem("no build stage runs `CGO_ENABLED=0 go build`")
	}

	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.BaseName, "gcr.io/distroless/static") || !strings.HasSuffix(final.BaseName, ":nonroot") {
		problem("final stage is FROM %s, want gcr.io/distroless/static*:nonroot", final.BaseName)
	}
	var user string
	var exposed []string
	env := map[string]string{}
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.ExposeCommand:
			exposed = append(exposed, c.Ports...)
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				env[kv.Key] = kv.Value
			}
		case *instructions.HealthCheckCommand:
			problem("HEALTHCHECK in the final stage: distroless has no shell or curl to run it")
		}
	}
	if user != "65532:65532" && user != "65532" {
		problem("final stage USER is %q, want the numeric 65532:65532", user)
	}
	if strings.Join(exposed, " ") != "8080" {
		problem("final stage EXPOSE %v, want 8080", exposed)
	}
	if env["ERPGATE_ADDR"] != ":8080" {
		problem("ENV ERPGATE_ADDR is %q, want :8080", env["ERPGATE_ADDR"])
	}
	if env["ERPGATE_LOG_FORMAT"] != "json" {
		problem("ENV ERPGATE_LOG_FORMAT is %q, want json", env["ERPGATE_LOG_FORMAT"])
	}

	checkIgnore(path + ".dockerignore")
	report()
}

func checkIgnore(path string) {
	f, err := os.Open(path)
	if err != nil {
		problem("%v", err)
		return
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		problem("%s: %v", path, err)
		return
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		problem("%s: %v", path, err)
		return
	}
	for file, want := range map[string]bool{
		".git/config": true, "node_modules/x/index.js": true, "deploy/compose.yaml": true, "api/api.test": true,
		"go.mod": false, "go.sum": false, "cmd/erpgate/main.go": false, "openapi/openapi.yaml": false,
	} {
		got, err := pm.MatchesOrParentMatches(file)
		if err != nil {
			problem("%s: %v", path, err)
			return
		}
		if got != want {
			problem("%s: %s excluded=%v, want %v", path, file, got, want)
		}
	}
}

func report() {
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "dockerfilecheck:", p)
		}
		os.Exit(1)
	}
	fmt.Printf("dockerfilecheck: %s is valid\n", os.Args[1])
	os.Exit(0)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dockerfilecheck:", err)
	os.Exit(1)
}
