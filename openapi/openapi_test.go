package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/errmap"
)

// operations are the tools the contract publishes for agents, by
// operationId.
var operations = []string{
	"get_invoice",
	"get_purchase_order",
	"get_supplier",
	"search_suppliers",
	"get_goods_receipt",
	"run_three_way_match",
	"request_approval",
	"get_approval",
	"post_invoice",
	"hold_invoice",
	"get_hold",
	"get_case",
	"hand_over",
	"get_run",
}

// peopleOperations are the operations of people, not agents' tools, by
// operationId, with the scope each needs.
var peopleOperations = map[string]string{
	"list_approvals":  "approve",
	"decide_approval": "approve",
	"list_handovers":  "review",
	"get_audit":       "audit",
}

const peopleTag = "people"

// isPeople reports whether the contract marks op as an operation of people.
func isPeople(op *openapi3.Operation) bool {
	return fmt.Sprint(op.Extensions[audienceExtension]) == peopleTag
}

// optionalResponseFields are the response fields the API omits when empty
// (omitempty in api/types.go); every other response field is required.
var optionalResponseFields = map[string]bool{
	"payment_block":   true,
	"closed_reason":   true,
	"decided_by":      true,
	"decision_reason": true,
	"decided_at":      true,
	"info_code":       true,
	"next":            true,
	"history":         true,
	"taken_by":        true,
	"taken_at":        true,
	"resolved_by":     true,
	"resolved_at":     true,
	"note":            true,
	"document":        true,
	"superseded_by":   true,
	"next_check_at":   true,
	"released_at":     true,
	"until":           true,
}

// handoverItems and historyAt are the schema paths of a listed handover and
// of the run's history it carries (the shape of RunResponse).
const (
	handoverItems = "HandoverListResponse/properties/handovers/items"
	historyAt     = handoverItems + "/properties/history"
	auditItems    = "AuditResponse/properties/entries/items"
	caseNext      = "CaseResponse/properties/next"
	caseEvents    = "CaseResponse/properties/events/items"
)

// optionalAt are fields optional in one place only, by schema path.
var optionalAt = map[string]bool{
	"RunResponse/properties/calls/items.invoice_id":               true,
	historyAt + "/properties/calls/items.invoice_id":              true,
	handoverItems + ".code":                                       true,
	auditItems + ".invoice_id":                                    true,
	auditItems + ".approval_id":                                   true,
	"InvoiceResponse.sap_status":                                  true,
	"InvoiceResponse.due_date":                                    true,
	"InvoiceResponse.payment_terms":                               true,
	"HoldResponse.run_id":                                         true,
	"HoldResponse.events":                                         true,
	"HoldResponse/properties/waits_for.approval_id":               true,
	historyAt + ".case":                                           true,
	historyAt + "/properties/case/properties/events/items.ref":    true,
	historyAt + "/properties/case/properties/events/items.note":   true,
	historyAt + "/properties/case/properties/events/items.run_id": true,
	"CaseResponse.hold_id":                                        true,
	"CaseResponse.approval_id":                                    true,
	"CaseResponse.approval_status":                                true,
	"CaseResponse.handover_id":                                    true,
	"CaseResponse.handover_status":                                true,
	"CaseResponse.updated_at":                                     true,
	caseNext + ".method":                                          true,
	caseNext + ".path":                                            true,
	caseNext + ".approval_id":                                     true,
	caseEvents + ".ref":                                           true,
	caseEvents + ".run_id":                                        true,
}

// requiredAt are fields required in one place although optional
// elsewhere, by schema path.
var requiredAt = map[string]bool{
	"CaseResponse.next": true,
}

// openAt are the objects open to any field: the details of an error.
var openAt = map[string]bool{
	"Error/properties/details":                                true,
	"RunResponse/properties/errors/items/properties/details":  true,
	historyAt + "/properties/errors/items/properties/details": true,
}

const errorSchemaRef = "#/components/schemas/Error"

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// load is openapi.yaml as written, both contracts' operations.
func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := LoadSource()
	if err != nil {
		t.Fatalf("LoadSource() error: %v", err)
	}
	return doc
}

// agents is the agents' contract.
func agents(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := Load()
	if err != nil {
		t.Fatalf("Load() error: %v", err)
	}
	return doc
}

type operation struct {
	method, path string
	op           *openapi3.Operation
}

// allOperations returns every operation of the document, sorted by path and
// method.
func allOperations(doc *openapi3.T) []operation {
	var ops []operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, operation{method: method, path: path, op: op})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].path != ops[j].path {
			return ops[i].path < ops[j].path
		}
		return ops[i].method < ops[j].method
	})
	return ops
}

func TestLoadValidates(t *testing.T) {
	doc := load(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "http://localhost:8080" || len(doc.Servers[0].Variables) != 0 {
		t.Errorf("servers = %+v, want the one server http://localhost:8080 without variables", doc.Servers)
	}
	if doc.Info == nil || doc.Info.Title != "erpgate" || doc.Info.Version != "1.0.0" || doc.Info.Description == "" {
		t.Errorf("info = %+v, want title erpgate, version 1.0.0 and a description", doc.Info)
	}
}

func TestOperationsPublished(t *testing.T) {
	doc := load(t)
	declaredTags := map[string]bool{}
	for _, tag := range doc.Tags {
		if tag.Description == "" {
			t.Errorf("tag %s has no description", tag.Name)
		}
		declaredTags[tag.Name] = true
	}
	count := map[string]int{}
	for _, o := range allOperations(doc) {
		id := o.op.OperationID
		count[id]++
		if _, ok := peopleOperations[id]; !ok && !slices.Contains(operations, id) {
			t.Errorf("%s %s: operationId %q is neither a published tool nor an operation of people", o.method, o.path, id)
		}
		if o.op.Summary == "" || o.op.Description == "" {
			t.Errorf("%s: summary %q, description %q, want both", id, o.op.Summary, o.op.Description)
		}
		if len(o.op.Tags) == 0 {
			t.Errorf("%s has no tag", id)
		}
		for _, tag := range o.op.Tags {
			if !declaredTags[tag] {
				t.Errorf("%s: tag %q is not declared", id, tag)
			}
		}
	}
	for _, id := range append(slices.Clone(operations), slices.Sorted(maps.Keys(peopleOperations))...) {
		if count[id] != 1 {
			t.Errorf("operationId %s appears %d times, want 1", id, count[id])
		}
	}
}

// TestPeopleOperations checks that exactly the operations of people carry
// x-erpgate-audience people, are tagged people and no other tag, belong to
// no run, and that the contract names the scope each needs.
func TestPeopleOperations(t *testing.T) {
	doc := load(t)
	tag := doc.Tags.Get(peopleTag)
	if tag == nil || tag.Description == "" {
		t.Errorf("the tag %s is not declared with a description", peopleTag)
	}
	seen := map[string]bool{}
	for _, o := range allOperations(doc) {
		id := o.op.OperationID
		_, want := peopleOperations[id]
		if v, ok := o.op.Extensions[audienceExtension]; ok != want || (ok && fmt.Sprint(v) != peopleTag) {
			t.Errorf("%s: %s = %v (set %v), want set %v", id, audienceExtension, v, ok, want)
		}
		if slices.Contains(o.op.Tags, peopleTag) != want {
			t.Errorf("%s: tags %v; the tag %s is for the operations of people only", id, o.op.Tags, peopleTag)
		}
		if !want {
			continue
		}
		seen[id] = true
		if !slices.Equal(o.op.Tags, []string{peopleTag}) {
			t.Errorf("%s: tags %v, want only %s", id, o.op.Tags, peopleTag)
		}
		for _, p := range o.op.Parameters {
			if p.Value.Name == "run_id" || p.Value.Name == "X-Run-Id" {
				t.Errorf("%s: declares %s, but an operation of people belongs to no run", id, p.Value.Name)
			}
		}
		if body := o.op.RequestBody; body != nil {
			if body.Value.Content.Get("application/json").Schema.Value.Properties["run_id"] != nil {
				t.Errorf("%s: the body takes run_id, but an operation of people belongs to no run", id)
			}
		}
		if scope := peopleOperations[id]; !strings.Contains(o.op.Description, "the "+scope+" scope") {
			t.Errorf("%s: the description does not name the %s scope", id, scope)
		}
	}
	for id := range peopleOperations {
		if !seen[id] {
			t.Errorf("the contract has no operation of people %s", id)
		}
	}
	auth := doc.Components.SecuritySchemes["bearer_auth"].Value.Description
	for _, scope := range []string{"read", "write", "approve", "review", "audit"} {
		if !strings.Contains(auth, scope+" for") {
			t.Errorf("bearer_auth does not say what the %s scope is for", scope)
		}
	}
}

// TestSameShapes checks that a list item or a nested object written out
// inline (the schemas are flat: no $ref below the top) has the shape of the
// schema it copies: the same fields, types, patterns, enums and required
// fields.
func TestSameShapes(t *testing.T) {
	doc := load(t)
	at := func(path ...string) *openapi3.Schema {
		s := doc.Components.Schemas[path[0]].Value
		for _, p := range path[1:] {
			if p == "items" {
				s = s.Items.Value
				continue
			}
			s = s.Properties[p].Value
		}
		return s
	}
	for _, c := range []struct {
		name       string
		copy, orig *openapi3.Schema
	}{
		{"ApprovalListResponse.approvals[]", at("ApprovalListResponse", "approvals", "items"), at("ApprovalResponse")},
		// A handover's history is the run's, with the invoice's case beside it.
		{"HandoverListResponse.handovers[].history", withoutProperty(at("HandoverListResponse", "handovers", "items", "history"), "case"), at("RunResponse")},
		{"SupplierSearchResponse.suppliers[]", at("SupplierSearchResponse", "suppliers", "items"), at("SupplierResponse")},
	} {
		sameShape(t, c.name, c.copy, c.orig)
	}
}

// withoutProperty is a copy of s without the property name.
func withoutProperty(s *openapi3.Schema, name string) *openapi3.Schema {
	c := *s
	c.Properties = maps.Clone(s.Properties)
	delete(c.Properties, name)
	c.Required = slices.DeleteFunc(slices.Clone(s.Required), func(r string) bool { return r == name })
	return &c
}

func sameShape(t *testing.T, at string, got, want *openapi3.Schema) {
	t.Helper()
	if !slices.Equal(got.Type.Slice(), want.Type.Slice()) || got.Pattern != want.Pattern || got.Format != want.Format ||
		fmt.Sprint(got.Enum) != fmt.Sprint(want.Enum) {
		t.Errorf("%s: type %v pattern %q format %q enum %v, want %v %q %q %v", at,
			got.Type.Slice(), got.Pattern, got.Format, got.Enum, want.Type.Slice(), want.Pattern, want.Format, want.Enum)
	}
	if g, w := got.AdditionalProperties.Has, want.AdditionalProperties.Has; (g == nil) != (w == nil) || (g != nil && *g != *w) {
		t.Errorf("%s: additionalProperties differ", at)
	}
	if g, w := slices.Sorted(slices.Values(got.Required)), slices.Sorted(slices.Values(want.Required)); !slices.Equal(g, w) {
		t.Errorf("%s: required %v, want %v", at, g, w)
	}
	if g, w := keys(got.Properties), keys(want.Properties); !slices.Equal(g, w) {
		t.Errorf("%s: properties %v, want %v", at, g, w)
		return
	}
	for name, p := range want.Properties {
		sameShape(t, at+"."+name, got.Properties[name].Value, p.Value)
	}
	if (got.Items == nil) != (want.Items == nil) {
		t.Errorf("%s: items differ", at)
	} else if want.Items != nil {
		sameShape(t, at+"[]", got.Items.Value, want.Items.Value)
	}
}

func TestOneSuccessResponse(t *testing.T) {
	doc := load(t)
	for _, o := range allOperations(doc) {
		id := o.op.OperationID
		var success []string
		for status := range o.op.Responses.Map() {
			if strings.HasPrefix(status, "2") {
				success = append(success, status)
			}
		}
		if len(success) != 1 || success[0] != "200" {
			t.Errorf("%s: 2xx responses %v, want exactly 200", id, success)
			continue
		}
		resp := o.op.Responses.Value("200").Value
		if len(resp.Content) != 1 || resp.Content.Get("application/json") == nil {
			t.Errorf("%s: 200 content types %v, want only application/json", id, keys(resp.Content))
			continue
		}
		media := resp.Content.Get("application/json")
		if ref := media.Schema.Ref; !strings.HasPrefix(ref, "#/components/schemas/") {
			t.Errorf("%s: 200 schema ref %q, want a components schema", id, ref)
		}
		if len(media.Examples) == 0 {
			t.Errorf("%s: 200 has no examples", id)
		}
		if resp.Headers["X-Request-Id"] == nil {
			t.Errorf("%s: 200 does not declare X-Request-Id", id)
		}
	}
}

// TestRequestBodies checks that every request body is JSON only, a
// components schema, described and with an example.
func TestRequestBodies(t *testing.T) {
	doc := load(t)
	for _, o := range allOperations(doc) {
		id := o.op.OperationID
		body := o.op.RequestBody
		if body == nil {
			if o.method == http.MethodPost {
				t.Errorf("%s: a POST without a request body", id)
			}
			continue
		}
		if body.Value.Description == "" {
			t.Errorf("%s: request body has no description", id)
		}
		if len(body.Value.Content) != 1 || body.Value.Content.Get("application/json") == nil {
			t.Errorf("%s: request content types %v, want only application/json", id, keys(body.Value.Content))
			continue
		}
		media := body.Value.Content.Get("application/json")
		if !strings.HasPrefix(media.Schema.Ref, "#/components/schemas/") {
			t.Errorf("%s: request schema ref %q, want a components schema", id, media.Schema.Ref)
		}
		if len(media.Examples) == 0 {
			t.Errorf("%s: request body has no examples", id)
		}
	}
}

func TestErrorResponses(t *testing.T) {
	doc := load(t)
	for _, o := range allOperations(doc) {
		id := o.op.OperationID
		want := []string{"400", "401", "404", "409", "429", "500", "502", "503"}
		if o.method == http.MethodPost {
			want = append(want, "413", "415")
		}
		if id == "request_approval" {
			want = append(want, "422")
		}
		sort.Strings(want)
		var got []string
		for status, ref := range o.op.Responses.Map() {
			if status == "200" {
				continue
			}
			got = append(got, status)
			if !strings.HasPrefix(ref.Ref, "#/components/responses/") {
				t.Errorf("%s %s: response is not a reusable components response (ref %q)", id, status, ref.Ref)
			}
			resp := ref.Value
			if len(resp.Content) != 1 || resp.Content.Get(errmap.ContentType) == nil {
				t.Errorf("%s %s: content types %v, want only %s", id, status, keys(resp.Content), errmap.ContentType)
				continue
			}
			if s := resp.Content.Get(errmap.ContentType).Schema.Ref; s != errorSchemaRef {
				t.Errorf("%s %s: schema %q, want %s", id, status, s, errorSchemaRef)
			}
			if resp.Headers["X-Request-Id"] == nil {
				t.Errorf("%s %s: does not declare X-Request-Id", id, status)
			}
			if (status == "429" || status == "503") && resp.Headers["Retry-After"] == nil {
				t.Errorf("%s %s: does not declare Retry-After", id, status)
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: error statuses %v, want %v", id, got, want)
		}
	}
}

func TestHeaderParameters(t *testing.T) {
	doc := load(t)
	writes := map[string]bool{"request_approval": true, "post_invoice": true, "hold_invoice": true, "hand_over": true,
		"decide_approval": true}
	for _, o := range allOperations(doc) {
		id := o.op.OperationID
		headers := map[string]bool{}
		for _, p := range o.op.Parameters {
			if p.Value.In == openapi3.ParameterInHeader {
				headers[p.Value.Name] = true
				if !strings.HasPrefix(p.Ref, "#/components/parameters/") {
					t.Errorf("%s: header %s is not a reusable parameter", id, p.Value.Name)
				}
				if p.Value.Required {
					t.Errorf("%s: header %s is required, want optional", id, p.Value.Name)
				}
			}
		}
		// get_run reads a run, and the operations of people are not part
		// of one either.
		inRun := id != "get_run" && !isPeople(o.op)
		if !headers["X-Request-Id"] || headers["X-Run-Id"] != inRun {
			t.Errorf("%s: headers %v, want X-Request-Id, and X-Run-Id %v", id, headers, inRun)
		}
		if headers["Idempotency-Key"] != writes[id] {
			t.Errorf("%s: declares Idempotency-Key %v, want %v", id, headers["Idempotency-Key"], writes[id])
		}
	}
}

func TestEverythingDescribed(t *testing.T) {
	doc := load(t)
	err := doc.WalkParameters(func(ptr string, p *openapi3.ParameterRef) error {
		if p.Value.Description == "" {
			t.Errorf("parameter %s (%s) has no description", p.Value.Name, ptr)
		}
		if p.Value.In != openapi3.ParameterInHeader && !snakeCase.MatchString(p.Value.Name) {
			t.Errorf("parameter %s is not snake_case", p.Value.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = doc.WalkSchemas(func(ptr string, s *openapi3.SchemaRef) error {
		// Parameters and headers carry the description themselves.
		if strings.Contains(ptr, "/parameters/") || strings.Contains(ptr, "/headers/") {
			return nil
		}
		if s.Value.Description == "" {
			t.Errorf("schema %s has no description", ptr)
		}
		for name := range s.Value.Properties {
			if !snakeCase.MatchString(name) {
				t.Errorf("property %s/%s is not snake_case", ptr, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFlatSchemas(t *testing.T) {
	doc := load(t)
	err := doc.WalkSchemas(func(ptr string, s *openapi3.SchemaRef) error {
		v := s.Value
		if len(v.OneOf) > 0 || len(v.AnyOf) > 0 || len(v.AllOf) > 0 || v.Not != nil {
			t.Errorf("schema %s uses oneOf, anyOf, allOf or not", ptr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range doc.Components.Schemas {
		err := s.WalkSubtree(func(ptr string, sub *openapi3.SchemaRef) error {
			if ptr != "" && sub.Ref != "" {
				t.Errorf("schema %s%s is a $ref (%s); nested schemas must be inline", name, ptr, sub.Ref)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestObjectsClosed checks that every object in a body is closed to unknown
// fields (except the details of an error) and that a response object lists
// every field as required unless the API omits it when empty.
func TestObjectsClosed(t *testing.T) {
	doc := load(t)
	responseSchemas := map[string]bool{}
	for _, o := range allOperations(doc) {
		ref := o.op.Responses.Value("200").Value.Content.Get("application/json").Schema.Ref
		responseSchemas[strings.TrimPrefix(ref, "#/components/schemas/")] = true
	}
	for name, s := range doc.Components.Schemas {
		err := s.WalkSubtree(func(ptr string, sub *openapi3.SchemaRef) error {
			v := sub.Value
			if !v.Type.Is(openapi3.TypeObject) {
				return nil
			}
			at := name + ptr
			open := v.AdditionalProperties.Has != nil && *v.AdditionalProperties.Has
			if openAt[at] {
				if !open {
					t.Errorf("%s: additionalProperties must be true", at)
				}
				return nil
			}
			if v.AdditionalProperties.Has == nil || open || v.AdditionalProperties.Schema != nil {
				t.Errorf("%s: additionalProperties must be false", at)
			}
			if !responseSchemas[name] && name != "Error" {
				return nil
			}
			for prop := range v.Properties {
				required := slices.Contains(v.Required, prop)
				optional := (optionalResponseFields[prop] || optionalAt[at+"."+prop]) && !requiredAt[at+"."+prop]
				if required == optional {
					t.Errorf("%s: property %s required = %v, want %v", at, prop, required, !optional)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func schemaProperty(t *testing.T, doc *openapi3.T, path ...string) *openapi3.Schema {
	t.Helper()
	ref := doc.Components.Schemas[path[0]]
	if ref == nil {
		t.Fatalf("no schema %s", path[0])
	}
	s := ref.Value
	for _, p := range path[1:] {
		next := s.Properties[p]
		if next == nil {
			t.Fatalf("no property %s in %v", p, path)
		}
		s = next.Value
	}
	return s
}

func enumStrings(s *openapi3.Schema) []string {
	var out []string
	for _, v := range s.Enum {
		out = append(out, fmt.Sprint(v))
	}
	sort.Strings(out)
	return out
}

func sorted[S ~string](in []S) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		out = append(out, string(v))
	}
	sort.Strings(out)
	return out
}

func catalogueCodes() []errmap.Code {
	var codes []errmap.Code
	for _, e := range errmap.Catalogue() {
		codes = append(codes, e.Code)
	}
	return codes
}

// TestCodeEnumIsCatalogue checks that the catalogue and the code enum in
// openapi.yaml are the same set, and likewise next actions and queues.
func TestCodeEnumIsCatalogue(t *testing.T) {
	doc := load(t)
	codes := sorted(catalogueCodes())
	for _, at := range [][]string{{"Error", "code"}, {"HandoverRequest", "code"}} {
		if got := enumStrings(schemaProperty(t, doc, at...)); !slices.Equal(got, codes) {
			t.Errorf("%s enum = %v, want the catalogue %v", strings.Join(at, "."), got, codes)
		}
	}
	actions := sorted(errmap.NextActions)
	if got := enumStrings(schemaProperty(t, doc, "Error", "next_action")); !slices.Equal(got, actions) {
		t.Errorf("Error.next_action enum = %v, want %v", got, actions)
	}
	queues := sorted(errmap.Queues)
	for _, at := range [][]string{{"Error", "details", "queue"}, {"HandoverRequest", "queue"}, {"HandoverResponse", "queue"}} {
		if got := enumStrings(schemaProperty(t, doc, at...)); !slices.Equal(got, queues) {
			t.Errorf("%s enum = %v, want %v", strings.Join(at, "."), got, queues)
		}
	}
	listed := schemaProperty(t, doc, "HandoverListResponse", "handovers").Items.Value.Properties["queue"].Value
	if got := enumStrings(listed); !slices.Equal(got, queues) {
		t.Errorf("HandoverListResponse.handovers[].queue enum = %v, want %v", got, queues)
	}
	param := doc.Paths.Value("/handovers").Get.Parameters.GetByInAndName(openapi3.ParameterInQuery, "queue")
	if param == nil {
		t.Fatal("list_handovers has no queue parameter")
	}
	if got := enumStrings(param.Schema.Value); !slices.Equal(got, queues) {
		t.Errorf("list_handovers queue enum = %v, want %v", got, queues)
	}
}

func TestErrorSchema(t *testing.T) {
	doc := load(t)
	s := schemaProperty(t, doc, "Error")
	want := []string{"code", "details", "message", "next_action", "retryable"}
	if got := sorted(keys(s.Properties)); !slices.Equal(got, want) {
		t.Errorf("Error properties = %v, want %v", got, want)
	}
	if got := sorted(s.Required); !slices.Equal(got, want) {
		t.Errorf("Error required = %v, want %v", got, want)
	}
	details := []string{"invoice_id", "po_id", "item", "supplier_id", "approval_id", "queue", "reason", "field",
		"duplicate_of", "supplier_ref", "approval_invoice_id", "retry_after_s", "attempts", "service", "scope",
		"status", "approver", "superseded_by", "hold_id", "limit", "previous_code", "case_version", "calls", "runs",
		"cap_calls", "cap_runs", "question", "asked_by", "asked_at"}
	d := schemaProperty(t, doc, "Error", "details")
	for _, name := range details {
		if d.Properties[name] == nil {
			t.Errorf("Error.details does not document %s", name)
		}
	}
	for _, name := range []string{"retry_after_s", "attempts"} {
		if p := d.Properties[name]; p != nil && !p.Value.Type.Is(openapi3.TypeInteger) {
			t.Errorf("Error.details.%s is %v, want integer", name, p.Value.Type)
		}
	}
}

// TestErrorExamples checks every error example against the catalogue: its
// code arrives with the status it is listed under, and every error code of
// the catalogue has an example.
func TestErrorExamples(t *testing.T) {
	doc := load(t)
	protocolStatuses := []int{http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}
	statuses := map[string]map[int]bool{} // components response name -> statuses it is used for
	for _, o := range allOperations(doc) {
		for status, ref := range o.op.Responses.Map() {
			code, err := strconv.Atoi(status)
			if err != nil || code < 400 {
				continue
			}
			name := strings.TrimPrefix(ref.Ref, "#/components/responses/")
			if statuses[name] == nil {
				statuses[name] = map[int]bool{}
			}
			statuses[name][code] = true
		}
	}
	seen := map[errmap.Code]bool{}
	for name, ref := range doc.Components.Responses {
		if len(statuses[name]) != 1 {
			t.Errorf("response %s is used for statuses %v, want one", name, statuses[name])
			continue
		}
		var status int
		for s := range statuses[name] {
			status = s
		}
		media := ref.Value.Content.Get(errmap.ContentType)
		if media == nil {
			t.Errorf("response %s has no %s content", name, errmap.ContentType)
			continue
		}
		if len(media.Examples) == 0 {
			t.Errorf("response %s has no examples", name)
		}
		for exName, ex := range media.Examples {
			at := fmt.Sprintf("%s (%d) example %s", name, status, exName)
			body, ok := ex.Value.Value.(map[string]any)
			if !ok {
				t.Errorf("%s: value is %T, want an object", at, ex.Value.Value)
				continue
			}
			if len(body) != 5 {
				t.Errorf("%s: %d fields, want the five", at, len(body))
			}
			code := errmap.Code(fmt.Sprint(body["code"]))
			if exName != string(code) {
				t.Errorf("%s: code %s, want the example named after its code", at, code)
			}
			entry, ok := errmap.Lookup(code)
			if !ok || !entry.Error {
				t.Errorf("%s: code %s is not an error of the catalogue", at, code)
				continue
			}
			seen[code] = true
			if code == errmap.InvalidRequest {
				if !slices.Contains(protocolStatuses, status) {
					t.Errorf("%s: INVALID_REQUEST under %d, want one of %v", at, status, protocolStatuses)
				}
			} else if entry.Status != status {
				t.Errorf("%s: %s has status %d in the catalogue, listed under %d", at, code, entry.Status, status)
			}
			if body["retryable"] != entry.Retryable {
				t.Errorf("%s: retryable %v, want %v", at, body["retryable"], entry.Retryable)
			}
			if got := fmt.Sprint(body["next_action"]); got != string(entry.NextAction) {
				t.Errorf("%s: next_action %s, want %s", at, got, entry.NextAction)
			}
			details, _ := body["details"].(map[string]any)
			if details == nil {
				t.Errorf("%s: details is %T, want an object", at, body["details"])
				continue
			}
			if q := fmt.Sprint(details["queue"]); entry.Queue != "" && q != entry.Queue {
				t.Errorf("%s: details.queue %s, want %s", at, q, entry.Queue)
			}
			if msg := fmt.Sprint(body["message"]); msg == "" || len(msg) > 200 {
				t.Errorf("%s: message of %d characters, want 1 to 200", at, len(msg))
			}
		}
	}
	for _, e := range errmap.Catalogue() {
		if e.Error && !seen[e.Code] {
			t.Errorf("code %s has no error example", e.Code)
		}
	}
}

func TestJSONServer(t *testing.T) {
	const url = "https://erpgate.internal.example:8443"
	b, err := JSON(url)
	if err != nil {
		t.Fatalf("JSON(%q) error: %v", url, err)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Servers []map[string]any          `json:"servers"`
		Paths   map[string]map[string]any `json:"paths"`
		Comps   map[string]map[string]any `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("JSON output does not parse: %v", err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0]["url"] != url {
		t.Errorf("servers = %v, want the one server %s", doc.Servers, url)
	}
	if doc.OpenAPI != "3.0.3" || len(doc.Paths) == 0 || len(doc.Comps["schemas"]) == 0 {
		t.Errorf("JSON output lost the document: openapi %q, %d paths, %d schemas", doc.OpenAPI, len(doc.Paths), len(doc.Comps["schemas"]))
	}
	loaded, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("JSON output does not load: %v", err)
	}
	if err := loaded.Validate(t.Context()); err != nil {
		t.Errorf("JSON output does not validate: %v", err)
	}

	b, err = JSON("")
	if err != nil {
		t.Fatalf(`JSON("") error: %v`, err)
	}
	if !strings.Contains(string(b), `"url":"http://localhost:8080"`) {
		t.Errorf(`JSON("") does not keep the default server`)
	}
}

func TestYAMLForServer(t *testing.T) {
	const url = "https://erpgate.internal.example:8443/base"
	b, err := YAMLFor(url)
	if err != nil {
		t.Fatalf("YAMLFor(%q) error: %v", url, err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("YAMLFor output does not load: %v", err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Errorf("YAMLFor output does not validate: %v", err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != url {
		t.Errorf("servers = %+v, want the one server %s", doc.Servers, url)
	}
	if len(doc.Paths.Map()) != len(agents(t).Paths.Map()) {
		t.Errorf("YAMLFor output has %d paths, want %d", len(doc.Paths.Map()), len(agents(t).Paths.Map()))
	}

	b, err = YAMLFor("")
	if err != nil {
		t.Fatalf(`YAMLFor("") error: %v`, err)
	}
	if !strings.Contains(string(b), "\nservers:\n  - url: http://localhost:8080\n") {
		t.Errorf(`YAMLFor("") does not keep the default server`)
	}
}

func TestBadServerURL(t *testing.T) {
	for _, url := range []string{"localhost:8080", "/api", "ftp://host", "http://", "http://host\nx: y"} {
		if _, err := JSON(url); err == nil {
			t.Errorf("JSON(%q) error = nil, want an error", url)
		}
		if _, err := YAMLFor(url); err == nil {
			t.Errorf("YAMLFor(%q) error = nil, want an error", url)
		}
	}
}

func keys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
