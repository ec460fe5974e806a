// Command dockerfilecheck checks deploy/Dockerfile without a Docker engine:
// it parses it with BuildKit's own Dockerfile parser and runs BuildKit's
// parse-time lint rules (those of `docker build --check` that need no
// build), then checks what erpgate's image promises: a static binary
// (CGO_ENABLED=0) on distroless static nonroot, a numeric non-root user,
// port 8080, ERPGATE_ADDR and ERPGATE_LOG_FORMAT set, no HEALTHCHECK (no
// shell in distroless), and the records directory: ENV ERPGATE_DATA_DIR is
// /var/lib/erpgate, a build stage makes that directory (mkdir), the final
// stage copies it from there owned by 65532:65532 and then declares it, and
// only it, a VOLUME, with nothing written below it after the VOLUME. It
// also checks that <Dockerfile>.dockerignore excludes what it should and
// keeps what the build copies.
//
// Usage: go run ./dockerfilecheck DOCKERFILE
package main

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// dataDir is where the image keeps the embedded SQLite database; the
// Kubernetes manifests mount their writable volume there.
const dataDir = "/var/lib/erpgate"

var problems []string

func problem(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerfilecheck DOCKERFILE")
		os.Exit(2)
	}
	dockerfile := os.Args[1]
	f, err := os.Open(dockerfile)
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
	if env["ERPGATE_DATA_DIR"] != dataDir {
		problem("ENV ERPGATE_DATA_DIR is %q, want %s", env["ERPGATE_DATA_DIR"], dataDir)
	}
	checkDataDir(stages)

	checkIgnore(dockerfile + ".dockerignore")
	report()
}

// checkDataDir checks that the final stage gets dataDir as a directory
// owned by 65532:65532, copied from a build stage that makes it (distroless
// has no shell to do so), and declares it a VOLUME after that copy.
func checkDataDir(stages []instructions.Stage) {
	final := stages[len(stages)-1]
	var copied, declared bool
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.CopyCommand:
			if path.Clean(c.DestPath) != dataDir {
				if declared && below(c.DestPath, dataDir) {
					problem("COPY to %s after VOLUME %s", c.DestPath, dataDir)
				}
				continue
			}
			if declared {
				problem("COPY to %s after its VOLUME: the volume would hide it", dataDir)
			}
			copied = true
			if c.Chown != "65532:65532" {
				problem("COPY to %s has --chown=%q, want 65532:65532", dataDir, c.Chown)
			}
			if len(c.SourcePaths) != 1 {
				problem("COPY to %s copies %v, want the one directory a build stage makes", dataDir, c.SourcePaths)
				continue
			}
			src := path.Clean(c.SourcePaths[0])
			var from *instructions.Stage
			for i := range stages[:len(stages)-1] {
				if c.From != "" && strings.EqualFold(stages[i].Name, c.From) {
					from = &stages[i]
				}
			}
			if from == nil {
				problem("COPY to %s is --from=%q, want a build stage of this Dockerfile", dataDir, c.From)
				continue
			}
			made := false
			for _, bc := range from.Commands {
				if run, ok := bc.(*instructions.RunCommand); ok {
					words := strings.Fields(strings.Join(run.CmdLine, " "))
					hasMkdir, hasSrc := false, false
					for _, w := range words {
						hasMkdir = hasMkdir || w == "mkdir"
						hasSrc = hasSrc || path.Clean(w) == src
					}
					made = made || hasMkdir && hasSrc
				}
			}
			if !made {
				problem("stage %s does not mkdir %s, which the COPY to %s takes", from.Name, src, dataDir)
			}
		case *instructions.AddCommand:
			if declared && below(c.DestPath, dataDir) {
				problem("ADD to %s after VOLUME %s", c.DestPath, dataDir)
			}
		case *instructions.VolumeCommand:
			if len(c.Volumes) != 1 || path.Clean(c.Volumes[0]) != dataDir {
				problem("VOLUME %v, want only %s", c.Volumes, dataDir)
				continue
			}
			if !copied {
				problem("VOLUME %s comes before the COPY that makes it owned by 65532:65532", dataDir)
			}
			declared = true
		}
	}
	if !copied {
		problem("final stage does not COPY --from=<build stage> --chown=65532:65532 the directory %s", dataDir)
	}
	if !declared {
		problem("final stage does not declare VOLUME %s", dataDir)
	}
}

// below reports whether p is dir or lies under it.
func below(p, dir string) bool {
	p = path.Clean(p)
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func checkIgnore(ignorePath string) {
	f, err := os.Open(ignorePath)
	if err != nil {
		problem("%v", err)
		return
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		problem("%s: %v", ignorePath, err)
		return
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		problem("%s: %v", ignorePath, err)
		return
	}
	for file, want := range map[string]bool{
		".git/config": true, "node_modules/x/index.js": true, "deploy/compose.yaml": true, "api/api.test": true,
		"go.mod": false, "go.sum": false, "cmd/erpgate/main.go": false, "openapi/openapi.yaml": false,
	} {
		got, err := pm.MatchesOrParentMatches(file)
		if err != nil {
			problem("%s: %v", ignorePath, err)
			return
		}
		if got != want {
			problem("%s: %s excluded=%v, want %v", ignorePath, file, got, want)
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
