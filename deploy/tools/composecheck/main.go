// Command composecheck loads a Compose file the way `docker compose config`
// does (compose-go: the Compose Specification's JSON schema, interpolation,
// normalization and consistency checks such as depends_on targets), without
// a Docker engine or CLI, and then checks that every build context,
// Dockerfile and bind-mount source it names exists.
//
// Usage: go run ./composecheck FILE
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: composecheck FILE")
		os.Exit(2)
	}
	file, err := filepath.Abs(os.Args[1])
	if err != nil {
		fail(err)
	}
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithName("erpgate"),
		cli.WithWorkingDirectory(filepath.Dir(file)),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
	)
	if err != nil {
		fail(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fail(err)
	}
	var problems []string
	exists := func(what, path string) {
		if _, err := os.Stat(path); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", what, err))
		}
	}
	names := project.ServiceNames()
	sort.Strings(names)
	for _, name := range names {
		svc := project.Services[name]
		if svc.Build != nil {
			exists("service "+name+" build context", svc.Build.Context)
			if svc.Build.Dockerfile != "" {
				df := svc.Build.Dockerfile
				if !filepath.IsAbs(df) {
					df = filepath.Join(svc.Build.Context, df)
				}
				exists("service "+name+" dockerfile", df)
			}
		}
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				exists("service "+name+" bind mount", v.Source)
			}
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "composecheck:", p)
		}
		os.Exit(1)
	}
	fmt.Printf("composecheck: %s is valid: services %v\n", filepath.Base(file), names)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "composecheck:", err)
	os.Exit(1)
}
