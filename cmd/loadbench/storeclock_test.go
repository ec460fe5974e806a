package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"

	"github.com/erpgate/erpgate/erp/records"
)

// TestStoreClockTimesEveryMethod: every method of records.Store that does
// the store's work is declared on storeClock, so that none is passed on
// untimed through the embedded store.
func TestStoreClockTimesEveryMethod(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "storeclock.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
			continue
		}
		if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "storeClock" {
			declared[fn.Name.Name] = true
		}
	}
	untimed := map[string]bool{"Engine": true, "Close": true}
	store := reflect.TypeFor[records.Store]()
	for i := range store.NumMethod() {
		if m := store.Method(i).Name; !declared[m] && !untimed[m] {
			t.Errorf("records.Store's %s is not timed by storeClock", m)
		}
	}
	if len(declared) < 10 {
		t.Fatalf("found %d storeClock methods in storeclock.go; the test reads the wrong file", len(declared))
	}
}
