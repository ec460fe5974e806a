package errmap_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const errmapPath = "github.com/erpgate/erpgate/errmap"

// allowed are the places outside errmap that may do what the rules
// forbid, by file and rule, each with its reason.
var allowed = map[string]string{
	"api/operation.go: WithDetail":         "copies the request's path ids into details; code, status and next_action stay errmap's",
	"api/mcp/call.go: WithDetail":          "copies a tool call's path ids into details, as REST does; code, status and next_action stay errmap's",
	"api/mcp/refusal.go: WithDetail":       "lists the protocol versions /mcp serves in details.supported; code, status and next_action stay errmap's",
	"api/mcp/refusal.go: errmap.Protocol":  "the MCP transport's refusal of a body that is not JSON (400); Protocol fixes INVALID_REQUEST and its statuses",
	"api/encode.go: errmap.Protocol":       "REST's own refusals of a body (413, 415, 400); Protocol fixes INVALID_REQUEST and its statuses",
	"api/middleware.go: errmap.Protocol":   "REST's own refusals of a route (404, 405)",
	"api/runs_handler.go: errmap.Protocol": "an unknown run is REST's 404",
	"api/runs/runs.go: Code =":             "Record.Code, the run's history, copies the code errmap named",
}

// TestOnlyErrmapNamesErrors fails when a package other than errmap decides
// a code, an HTTP status or a next_action: calls errmap.New or
// errmap.Protocol, turns an error with Hold, Route or WithDetail, writes
// Code, NextAction, Retryable, Message, Details or a numeric Status, or
// builds an errmap.Error or errmap.Body literal. Tests are not checked:
// they build the errors they expect.
func TestOnlyErrmapNamesErrors(t *testing.T) {
	root := filepath.Join("..")
	var found []string
	used := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "errmap" || d.Name() == "testdata" || d.Name() == "vendor" || (strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, v := range violations(t, rel, src) {
			if _, ok := allowed[v.key()]; ok {
				used[v.key()] = true
				continue
			}
			found = append(found, v.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: only errmap decides a code, a status or a next_action", f)
	}
	for k := range allowed {
		if !used[k] {
			t.Errorf("allow-list entry %q matches nothing: remove it", k)
		}
	}
}

// TestArchitectureTestFindsPlantedViolations checks the rules on a source
// that breaks each of them, and one that only reads codes.
func TestArchitectureTestFindsPlantedViolations(t *testing.T) {
	bad := `package planted

import (
	"net/http"

	em "github.com/erpgate/erpgate/errmap"
)

func f(e *em.Error) error {
	_ = em.New(em.LoopDetected, "again", nil)
	_ = em.Protocol(http.StatusNotFound, "no", nil)
	e.Hold()
	e.Route("ap_queue")
	e.WithDetail("limit", "budget")
	e.Code = em.BudgetExhausted
	e.NextAction = em.RouteToPerson
	e.Status = http.StatusConflict
	e.Message = "changed"
	return &em.Error{Code: em.Internal}
}
`
	want := []string{"em.New", "em.Protocol", "Hold", "Route", "WithDetail", ".Code =", ".NextAction =", ".Status =", ".Message =", "em.Error{}"}
	got := violations(t, "planted/planted.go", []byte(bad))
	var rules []string
	for _, v := range got {
		rules = append(rules, v.rule)
	}
	for _, w := range want {
		if !slices.Contains(rules, w) {
			t.Errorf("planted %s not found; found %v", w, rules)
		}
	}

	good := `package planted

import (
	"fmt"

	"github.com/erpgate/erpgate/errmap"
)

type resp struct{ Status string }

func g(err error, r *resp) string {
	e := errmap.Map(err)
	if e.Code == errmap.GRMissing || string(e.Code) != string(errmap.Internal) {
		r.Status = "degraded"
	}
	switch e.NextAction {
	case errmap.HoldAndRecheck:
	}
	_ = errmap.Invalid("field", "is wrong")
	return fmt.Sprint(errmap.ERPUnavailable)
}
`
	if got := violations(t, "planted/good.go", []byte(good)); len(got) != 0 {
		t.Errorf("reading codes flagged: %v", got)
	}
}

type violation struct {
	file string
	line int
	rule string
}

func (v violation) key() string    { return v.file + ": " + strings.TrimPrefix(v.rule, ".") }
func (v violation) String() string { return fmt.Sprintf("%s:%d: %s", v.file, v.line, v.rule) }

// violations parses one file and returns what it does that only errmap
// may do. Methods and fields are matched by name in files that import
// errmap; a numeric Status is one set to a number or an http.Status
// constant.
func violations(t *testing.T, file string, src []byte) []violation {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == errmapPath {
			name = "errmap"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil
	}
	var out []violation
	add := func(n ast.Node, rule string) {
		out = append(out, violation{file: file, line: fset.Position(n.Pos()).Line, rule: rule})
	}
	isErrmap := func(e ast.Expr, sel ...string) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := s.X.(*ast.Ident)
		return ok && id.Name == name && slices.Contains(sel, s.Sel.Name)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			switch {
			case isErrmap(n.Fun, "New", "Protocol"):
				add(n, name+"."+n.Fun.(*ast.SelectorExpr).Sel.Name)
			default:
				if s, ok := n.Fun.(*ast.SelectorExpr); ok {
					switch {
					case s.Sel.Name == "Hold" && len(n.Args) == 0,
						s.Sel.Name == "Route" && len(n.Args) == 1,
						s.Sel.Name == "WithDetail" && len(n.Args) == 2:
						add(n, s.Sel.Name)
					}
				}
			}
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				s, ok := lhs.(*ast.SelectorExpr)
				if !ok {
					continue
				}
				switch s.Sel.Name {
				case "Code", "NextAction", "Retryable", "Message", "Details":
					add(n, "."+s.Sel.Name+" =")
				case "Status":
					if i < len(n.Rhs) && numeric(n.Rhs[i]) {
						add(n, ".Status =")
					}
				}
			}
		case *ast.CompositeLit:
			if isErrmap(n.Type, "Error", "Body") {
				add(n, name+"."+n.Type.(*ast.SelectorExpr).Sel.Name+"{}")
			}
		}
		return true
	})
	return out
}

// numeric reports whether e is a number or an http.Status constant.
func numeric(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.INT
	case *ast.SelectorExpr:
		return strings.HasPrefix(e.Sel.Name, "Status")
	}
	return false
}
