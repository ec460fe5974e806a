package openapi

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/errmap"
)

const collectionPath = "postman/erpgate.postman_collection.json"

type postmanItem struct {
	Name  string        `json:"name"`
	Item  []postmanItem `json:"item"`
	Event []struct {
		Listen string `json:"listen"`
		Script struct {
			Exec []string `json:"exec"`
		} `json:"script"`
	} `json:"event"`
	Request *struct {
		Method string `json:"method"`
		URL    struct {
			Host []string `json:"host"`
			Path []string `json:"path"`
		} `json:"url"`
		Header []struct {
			Key      string `json:"key"`
			Disabled bool   `json:"disabled"`
		} `json:"header"`
		Body *struct {
			Mode string `json:"mode"`
			Raw  string `json:"raw"`
		} `json:"body"`
		Auth *struct {
			Type   string `json:"type"`
			Bearer []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"bearer"`
		} `json:"auth"`
	} `json:"request"`
}

// personKeys are the collection variables of the people's keys an
// operation of people is sent with, by the scope each carries.
var personKeys = map[string][]string{
	"{{approverKey}}": {"approve", "review"},
	"{{auditorKey}}":  {"audit"},
}

var (
	assertedStatus = regexp.MustCompile(`pm\.response\.to\.have\.status\((\d+)\)`)
	assertedCode   = regexp.MustCompile(`pm\.expect\(body\.code\)\.to\.eql\('([A-Z_]+)'\)`)
	pathVariable   = regexp.MustCompile(`^:(.+)$`)
	// literalDate matches an RFC 3339 full-date, alone or as the start of a
	// date-time such as 2026-12-01T09:00:00Z.
	literalDate  = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?)?`)
	usedVariable = regexp.MustCompile(`\{\{([^{}$][^{}]*)\}\}`)
	setVariable  = regexp.MustCompile(`pm\.(?:collectionVariables|environment|variables|globals)\.set\('([^']+)'`)
)

// TestPostmanCollection checks the committed collection against the
// contract: every request is an operation of the contract, every operation
// is walked, only declared headers are sent, and every error the walk
// expects arrives with the status the catalogue and the contract give it.
func TestPostmanCollection(t *testing.T) {
	b, err := os.ReadFile(collectionPath)
	if err != nil {
		t.Fatal(err)
	}
	var collection struct {
		Variable []struct{ Key, Value string } `json:"variable"`
		postmanItem
	}
	if err := json.Unmarshal(b, &collection); err != nil {
		t.Fatalf("%s does not parse: %v", collectionPath, err)
	}
	baseURL := ""
	for _, v := range collection.Variable {
		if v.Key == "baseUrl" {
			baseURL = v.Value
		}
	}
	if baseURL != "http://localhost:8080" {
		t.Errorf("baseUrl = %q, want http://localhost:8080", baseURL)
	}

	// The variables a request body may name: those of the collection and
	// those a script sets.
	known := map[string]bool{}
	for _, v := range collection.Variable {
		known[v.Key] = true
	}
	var collectSet func(it postmanItem)
	collectSet = func(it postmanItem) {
		for _, e := range it.Event {
			for _, m := range setVariable.FindAllStringSubmatch(strings.Join(e.Script.Exec, "\n"), -1) {
				known[m[1]] = true
			}
		}
		for _, sub := range it.Item {
			collectSet(sub)
		}
	}
	collectSet(collection.postmanItem)

	doc := load(t)
	ops := map[string]*openapi3.Operation{}
	for _, o := range allOperations(doc) {
		ops[o.method+" "+o.path] = o.op
	}
	walked := map[string]bool{}
	codes := map[errmap.Code]bool{}
	var visit func(prefix string, items []postmanItem)
	visit = func(prefix string, items []postmanItem) {
		for _, it := range items {
			at := prefix + it.Name
			if it.Request == nil {
				visit(at+" / ", it.Item)
				continue
			}
			segments := make([]string, len(it.Request.URL.Path))
			for i, s := range it.Request.URL.Path {
				segments[i] = pathVariable.ReplaceAllString(s, "{$1}")
			}
			key := it.Request.Method + " /" + strings.Join(segments, "/")
			op := ops[key]
			if op == nil {
				t.Errorf("%s: %s is no operation of the contract", at, key)
				continue
			}
			walked[op.OperationID] = true
			if strings.Join(it.Request.URL.Host, "") != "{{baseUrl}}" {
				t.Errorf("%s: host %v, want {{baseUrl}}", at, it.Request.URL.Host)
			}
			for _, h := range it.Request.Header {
				if h.Disabled || h.Key == "Content-Type" || h.Key == "Accept" {
					continue
				}
				if p := op.Parameters.GetByInAndName(openapi3.ParameterInHeader, h.Key); p == nil {
					t.Errorf("%s: sends header %s, which %s does not declare", at, h.Key, op.OperationID)
				}
			}
			if body := it.Request.Body; body != nil {
				// A date in a body is computed when the request runs (a
				// pre-request script sets a variable): a fixed one falls
				// into the past, and the gateway refuses a recheck_at that
				// is not in the future.
				for _, d := range literalDate.FindAllString(body.Raw, -1) {
					t.Errorf("%s: the request body hard-codes the date %s; set a variable in a pre-request script instead", at, d)
				}
				for _, m := range usedVariable.FindAllStringSubmatch(body.Raw, -1) {
					if !known[m[1]] {
						t.Errorf("%s: the request body uses {{%s}}, which neither the collection nor a script sets", at, m[1])
					}
				}
			}
			checkWalkStep(t, at, op, it, codes)
			checkStepAuth(t, at, op, it)
		}
	}
	visit("", collection.Item)
	for _, o := range allOperations(doc) {
		if !walked[o.op.OperationID] {
			t.Errorf("the walk does not call %s", o.op.OperationID)
		}
	}
	// The golden set has an invoice for every business error, and the walk
	// shows the gateway's own outcomes that need no fault injection, a
	// decision refused because the approval was decided before, and one
	// refused because the agent cannot decide.
	for _, code := range []errmap.Code{
		errmap.InvoiceNotFound, errmap.PONotFound, errmap.SupplierNotFound, errmap.GRMissing, errmap.POClosed,
		errmap.DuplicateInvoice, errmap.ApproverNotFound, errmap.ApprovalMissing, errmap.PeriodClosed,
		errmap.InvalidRequest, errmap.LoopDetected, errmap.IdempotencyKeyReused, errmap.ApprovalDecided,
		errmap.ScopeMissing,
	} {
		if !codes[code] {
			t.Errorf("the walk does not reach %s", code)
		}
	}
}

// TestLiteralDate checks the pattern TestPostmanCollection finds
// hard-coded dates in request bodies with.
func TestLiteralDate(t *testing.T) {
	for s, want := range map[string]bool{
		`"recheck_at": "2099-12-01T09:00:00Z"`:        true,
		`"recheck_at": "2026-12-01t09:00:00.5+01:00"`: true,
		`"recheck_at": "2026-12-01 09:00:00-05:00"`:   true,
		`"posting_date": "2026-12-01"`:                true,
		`"recheck_at": "{{recheck_at}}"`:              false,
		`"po_id": "4500018822", "item": "20"`:         false,
		`"supplier_ref": "INV-88120"`:                 false,
	} {
		if got := literalDate.MatchString(s); got != want {
			t.Errorf("literalDate.MatchString(%s) = %v, want %v", s, got, want)
		}
	}
}

// checkStepAuth checks whose credentials a step sends: an agent's
// operation the collection's (the agent's), an operation of people a
// person's key with the scope it needs, or the agent's to show it refused
// SCOPE_MISSING.
func checkStepAuth(t *testing.T, at string, op *openapi3.Operation, it postmanItem) {
	t.Helper()
	auth := it.Request.Auth
	own := auth != nil && auth.Type != ""
	if !isPeople(op) {
		if own {
			t.Errorf("%s: an agent's operation sends credentials of its own (%s)", at, auth.Type)
		}
		return
	}
	if !own {
		var tests string
		for _, e := range it.Event {
			tests += strings.Join(e.Script.Exec, "\n")
		}
		if c := assertedCode.FindStringSubmatch(tests); c == nil || c[1] != string(errmap.ScopeMissing) {
			t.Errorf("%s: an operation of people sent with the agent's credentials must expect SCOPE_MISSING", at)
		}
		return
	}
	token := ""
	for _, b := range auth.Bearer {
		if b.Key == "token" {
			token = b.Value
		}
	}
	scope := fmt.Sprint(op.Extensions["x-erpgate-scope"])
	if auth.Type != "bearer" || !slices.Contains(personKeys[token], scope) {
		t.Errorf("%s: sent with %s %q, want a person's key with the %s scope", at, auth.Type, token, scope)
	}
}

// checkWalkStep checks the status and code one step of the walk expects.
func checkWalkStep(t *testing.T, at string, op *openapi3.Operation, it postmanItem, codes map[errmap.Code]bool) {
	t.Helper()
	var tests string
	for _, e := range it.Event {
		if e.Listen == "test" {
			tests += strings.Join(e.Script.Exec, "\n")
		}
	}
	m := assertedStatus.FindStringSubmatch(tests)
	if m == nil {
		t.Errorf("%s: no test of the status", at)
		return
	}
	status, _ := strconv.Atoi(m[1])
	if op.Responses.Status(status) == nil {
		t.Errorf("%s: expects %d, which %s does not declare", at, status, op.OperationID)
	}
	c := assertedCode.FindStringSubmatch(tests)
	if status == 200 {
		if c != nil {
			t.Errorf("%s: a success with an error code %s", at, c[1])
		}
		return
	}
	if c == nil {
		t.Errorf("%s: status %d without a test of the code", at, status)
		return
	}
	code := errmap.Code(c[1])
	codes[code] = true
	entry, ok := errmap.Lookup(code)
	if !ok || !entry.Error {
		t.Errorf("%s: %s is not an error of the catalogue", at, code)
		return
	}
	if code != errmap.InvalidRequest && entry.Status != status {
		t.Errorf("%s: expects %s with %d, the catalogue says %d", at, code, status, entry.Status)
	}
}
