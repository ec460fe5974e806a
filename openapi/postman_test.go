package openapi

import (
	"encoding/json"
	"os"
	"regexp"
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
	} `json:"request"`
}

var (
	assertedStatus = regexp.MustCompile(`pm\.response\.to\.have\.status\((\d+)\)`)
	assertedCode   = regexp.MustCompile(`pm\.expect\(body\.code\)\.to\.eql\('([A-Z_]+)'\)`)
	pathVariable   = regexp.MustCompile(`^:(.+)$`)
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
			checkWalkStep(t, at, op, it, codes)
		}
	}
	visit("", collection.Item)
	for _, o := range allOperations(doc) {
		if !walked[o.op.OperationID] {
			t.Errorf("the walk does not call %s", o.op.OperationID)
		}
	}
	// The golden set has an invoice for every business error, and the walk
	// shows the gateway's own outcomes that need no fault injection.
	for _, code := range []errmap.Code{
		errmap.InvoiceNotFound, errmap.PONotFound, errmap.SupplierNotFound, errmap.GRMissing, errmap.POClosed,
		errmap.DuplicateInvoice, errmap.ApproverNotFound, errmap.ApprovalMissing, errmap.PeriodClosed,
		errmap.InvalidRequest, errmap.LoopDetected, errmap.IdempotencyKeyReused,
	} {
		if !codes[code] {
			t.Errorf("the walk does not reach %s", code)
		}
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
