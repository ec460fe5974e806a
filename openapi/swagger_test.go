package openapi

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
)

var pascalID = regexp.MustCompile(`^[A-Z][a-z0-9]*([A-Z][a-z0-9]*)*$`)

const (
	definitionsPrefix = "#/definitions/"
	errorDefinition   = definitionsPrefix + "Error"
)

func swagger(t *testing.T, serverURL string) (*openapi2.T, []byte) {
	t.Helper()
	b, err := Swagger(serverURL)
	if err != nil {
		t.Fatalf("Swagger(%q) error: %v", serverURL, err)
	}
	var doc openapi2.T
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("Swagger(%q) output does not load as Swagger 2.0: %v", serverURL, err)
	}
	return &doc, b
}

func TestPascalCase(t *testing.T) {
	for in, want := range map[string]string{
		"get_invoice":         "GetInvoice",
		"run_three_way_match": "RunThreeWayMatch",
		"hand_over":           "HandOver",
		"get_run":             "GetRun",
		"single":              "Single",
	} {
		if got := pascalCase(in); got != want {
			t.Errorf("pascalCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSwaggerDocument(t *testing.T) {
	doc, _ := swagger(t, "https://erpgate.internal.example:8443/base/")
	if doc.Swagger != "2.0" {
		t.Errorf("swagger = %q, want 2.0", doc.Swagger)
	}
	if doc.Host != "erpgate.internal.example:8443" || doc.BasePath != "/base" || !slices.Equal(doc.Schemes, []string{"https"}) {
		t.Errorf("host %q, basePath %q, schemes %v; want erpgate.internal.example:8443, /base, [https]",
			doc.Host, doc.BasePath, doc.Schemes)
	}
	if !slices.Equal(doc.Produces, []string{"application/json"}) || !slices.Equal(doc.Consumes, []string{"application/json"}) {
		t.Errorf("produces %v, consumes %v; want application/json for both", doc.Produces, doc.Consumes)
	}
	if doc.Info.Title != "erpgate" || doc.Info.Version == "" || doc.Info.Description == "" {
		t.Errorf("info = %+v, want the contract's title, version and description", doc.Info)
	}
	for _, name := range []string{"bearer_auth", "api_key"} {
		s := doc.SecurityDefinitions[name]
		if s == nil || s.Type != "apiKey" || s.In != "header" {
			t.Errorf("securityDefinitions.%s = %+v, want an apiKey in a header", name, s)
		}
	}
	if len(doc.Security) != 2 {
		t.Errorf("security = %v, want bearer_auth or api_key", doc.Security)
	}

	local, _ := swagger(t, "")
	if local.Host != "localhost:8080" || local.BasePath != "/" || !slices.Equal(local.Schemes, []string{"http"}) {
		t.Errorf(`Swagger(""): host %q, basePath %q, schemes %v; want localhost:8080, /, [http]`,
			local.Host, local.BasePath, local.Schemes)
	}
	for _, url := range []string{"localhost:8080", "/api", "ftp://host", "http://"} {
		if _, err := Swagger(url); err == nil {
			t.Errorf("Swagger(%q) error = nil, want an error", url)
		}
	}
}

// TestSwaggerOperations checks every operation of the 2.0 document against
// the 3.0 contract: same paths and methods, the PascalCase operationId,
// typed parameters, the same statuses, and the Error schema on every error.
func TestSwaggerOperations(t *testing.T) {
	doc3 := agents(t)
	doc2, _ := swagger(t, "")
	if len(doc2.Paths) != len(doc3.Paths.Map()) {
		t.Errorf("%d paths, want the contract's %d", len(doc2.Paths), len(doc3.Paths.Map()))
	}
	ids := map[string]int{}
	for _, o := range allOperations(doc3) {
		item := doc2.Paths[o.path]
		if item == nil {
			t.Errorf("path %s is missing", o.path)
			continue
		}
		op := item.GetOperation(o.method)
		if op == nil {
			t.Errorf("%s %s is missing", o.method, o.path)
			continue
		}
		at := o.method + " " + o.path
		ids[op.OperationID]++
		if want := pascalCase(o.op.OperationID); op.OperationID != want || !pascalID.MatchString(op.OperationID) {
			t.Errorf("%s: operationId %q, want %q", at, op.OperationID, want)
		}
		if op.Summary != o.op.Summary || op.Description != o.op.Description {
			t.Errorf("%s: summary or description differ from the contract", at)
		}
		checkSwaggerParameters(t, doc2, at, op, o.op.RequestBody != nil)

		var want []string
		for status := range o.op.Responses.Map() {
			want = append(want, status)
		}
		slices.Sort(want)
		var got []string
		for status, resp := range op.Responses.Map() {
			got = append(got, status)
			if resp.Ref != "" || resp.Schema == nil {
				t.Errorf("%s %s: response ref %q, schema %v; want an inline response with a schema", at, status, resp.Ref, resp.Schema)
				continue
			}
			if resp.Description == "" {
				t.Errorf("%s %s: no description", at, status)
			}
			ref := resp.Schema.Ref
			if status == "200" {
				name := strings.TrimPrefix(ref, definitionsPrefix)
				if !strings.HasPrefix(ref, definitionsPrefix) || doc2.Definitions[name] == nil || ref == errorDefinition {
					t.Errorf("%s 200: schema %q, want a definition other than Error", at, ref)
				}
			} else if ref != errorDefinition {
				t.Errorf("%s %s: schema %q, want %s", at, status, ref, errorDefinition)
			}
			if resp.Headers["X-Request-Id"] == nil || resp.Headers["X-Request-Id"].Type == nil {
				t.Errorf("%s %s: no typed X-Request-Id header", at, status)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: statuses %v, want %v", at, got, want)
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("operationId %s appears %d times, want 1", id, n)
		}
	}
	if len(doc2.Responses) != 0 {
		t.Errorf("%d shared responses, want none (every response is inline)", len(doc2.Responses))
	}
}

// checkSwaggerParameters checks that every parameter is typed, directly or
// through a shared parameter, and that an operation with a request body has
// one body parameter with a schema from the definitions.
func checkSwaggerParameters(t *testing.T, doc *openapi2.T, at string, op *openapi2.Operation, hasBody bool) {
	t.Helper()
	bodies := 0
	for _, p := range op.Parameters {
		if p.Ref != "" {
			name, ok := strings.CutPrefix(p.Ref, "#/parameters/")
			if !ok || doc.Parameters[name] == nil {
				t.Errorf("%s: parameter ref %q does not resolve", at, p.Ref)
				continue
			}
			p = doc.Parameters[name]
		}
		if p.Description == "" {
			t.Errorf("%s: parameter %s has no description", at, p.Name)
		}
		if p.In == "body" {
			bodies++
			if p.Schema == nil || !strings.HasPrefix(p.Schema.Ref, definitionsPrefix) {
				t.Errorf("%s: body parameter without a definitions schema", at)
			}
			continue
		}
		if p.Type == nil || len(*p.Type) != 1 {
			t.Errorf("%s: parameter %s (in %s) has type %v, want one type", at, p.Name, p.In, p.Type)
		}
		if p.In == "path" && !p.Required {
			t.Errorf("%s: path parameter %s is not required", at, p.Name)
		}
	}
	want := 0
	if hasBody {
		want = 1
	}
	if bodies != want {
		t.Errorf("%s: %d body parameters, want %d", at, bodies, want)
	}
}

func TestSwaggerDefinitions(t *testing.T) {
	doc3 := agents(t)
	doc2, _ := swagger(t, "")
	if len(doc2.Definitions) != len(doc3.Components.Schemas) {
		t.Errorf("%d definitions, want the contract's %d schemas", len(doc2.Definitions), len(doc3.Components.Schemas))
	}
	errSchema := doc2.Definitions["Error"]
	if errSchema == nil || errSchema.Value == nil {
		t.Fatal("no Error definition")
	}
	want := []string{"code", "details", "message", "next_action", "retryable"}
	if got := keys(errSchema.Value.Properties); !slices.Equal(got, want) {
		t.Errorf("Error properties %v, want %v", got, want)
	}
	if got := slices.Sorted(slices.Values(errSchema.Value.Required)); !slices.Equal(got, want) {
		t.Errorf("Error required %v, want %v", got, want)
	}
	codes := errSchema.Value.Properties["code"].Value.Enum
	if len(codes) != len(catalogueCodes()) {
		t.Errorf("Error.code enum has %d codes, want the catalogue's %d", len(codes), len(catalogueCodes()))
	}
	for name, s := range doc2.Definitions {
		if len(s.Value.AllOf) > 0 {
			t.Errorf("definition %s uses allOf", name)
		}
	}
}

// TestSwaggerRoundTrip converts the 2.0 document back to 3.0 and validates
// the result, which resolves every reference the 2.0 document makes.
func TestSwaggerRoundTrip(t *testing.T) {
	doc2, _ := swagger(t, "https://erpgate.internal.example")
	doc3, err := openapi2conv.ToV3(doc2)
	if err != nil {
		t.Fatalf("ToV3 error: %v", err)
	}
	if err := doc3.Validate(t.Context()); err != nil {
		t.Errorf("the 2.0 document converted back does not validate: %v", err)
	}
	if n, want := len(doc3.Paths.Map()), len(agents(t).Paths.Map()); n != want {
		t.Errorf("%d paths after the round trip, want %d", n, want)
	}
}
