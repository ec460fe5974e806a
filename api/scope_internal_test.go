package api

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/openapi"
)

// scopeExtension is where the contract names the scope an operation needs.
const scopeExtension = "x-erpgate-scope"

// TestContractNamesTheScopeEachOperationNeeds checks that the scope the
// contracts give each operation (its x-erpgate-scope in openapi.yaml, the
// source of the agents' contract and the people's, which /docs shows) is
// the one the gateway asks for, and that no operation lacks one.
func TestContractNamesTheScopeEachOperationNeeds(t *testing.T) {
	doc, err := openapi.LoadSource()
	if err != nil {
		t.Fatal(err)
	}
	inContract := map[string]*openapi3.Operation{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			inContract[op.OperationID] = op
		}
	}
	enforced := map[string]string{}
	for _, o := range operations {
		enforced[o.name] = o.scope
	}
	for id, op := range inContract {
		scope, ok := op.Extensions[scopeExtension].(string)
		if !ok {
			t.Errorf("%s: %s is %v, want the scope's name", id, scopeExtension, op.Extensions[scopeExtension])
			continue
		}
		want, served := enforced[id]
		if !served {
			t.Errorf("%s: in the contract, not among the gateway's operations", id)
			continue
		}
		if scope != want {
			t.Errorf("%s: the contract names scope %q, the gateway asks for %q", id, scope, want)
		}
	}
	for _, o := range operations {
		if _, ok := inContract[o.name]; !ok {
			t.Errorf("%s: served by the gateway, not in the contract", o.name)
		}
	}
}
