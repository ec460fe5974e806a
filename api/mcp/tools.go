package mcp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where an argument goes in the REST request.
const (
	inPath  = "path"
	inQuery = "query"
	inBody  = "body"
	// inHeader is only the Idempotency-Key header, for a write whose
	// contract has no idempotency_key body field.
	inHeader = "header"
)

// writes take an idempotency_key argument even where the contract names it
// only as a header, so that a platform that cannot set headers can still
// make a write safe to retry.
var writes = map[string]bool{
	"request_approval": true,
	"post_invoice":     true,
	"hold_invoice":     true,
	"hand_over":        true,
}

// audienceExtension marks an operation of the contract that is for
// people (approvers, the AP team, auditors), not for agents; its value is
// audiencePeople. Such an operation is never a tool.
const (
	audienceExtension = "x-erpgate-audience"
	audiencePeople    = "people"
)

// toolExtension holds the MCP tool annotations of an operation for agents:
// readOnlyHint, destructiveHint, idempotentHint and openWorldHint, each a
// boolean the contract must give.
const toolExtension = "x-erpgate-tool"

// hints are the four behaviour hints of a toolExtension.
type hints struct {
	ReadOnly    *bool `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
	Idempotent  *bool `json:"idempotentHint"`
	OpenWorld   *bool `json:"openWorldHint"`
}

// annotations reads the toolExtension of op into the tool annotations. The
// extension is required, with all four hints and nothing else, so that no
// tool claims a behaviour the contract does not state.
func annotations(op *openapi3.Operation) (*sdk.ToolAnnotations, error) {
	v, ok := op.Extensions[toolExtension]
	if !ok {
		return nil, fmt.Errorf("the operation has no %s extension", toolExtension)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", toolExtension, err)
	}
	var h hints
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("%s: %w", toolExtension, err)
	}
	if h.ReadOnly == nil || h.Destructive == nil || h.Idempotent == nil || h.OpenWorld == nil {
		return nil, fmt.Errorf("%s must set readOnlyHint, destructiveHint, idempotentHint and openWorldHint", toolExtension)
	}
	if *h.ReadOnly && *h.Destructive {
		return nil, fmt.Errorf("%s: a read-only operation cannot be destructive", toolExtension)
	}
	return &sdk.ToolAnnotations{
		Title:           op.Summary,
		ReadOnlyHint:    *h.ReadOnly,
		DestructiveHint: h.Destructive,
		IdempotentHint:  *h.Idempotent,
		OpenWorldHint:   h.OpenWorld,
	}, nil
}

// outputSchema is the JSON Schema of the operation's 200 JSON body, the
// structuredContent of a successful call. Every success body is an object.
func outputSchema(op *openapi3.Operation) (map[string]any, error) {
	var s *openapi3.Schema
	if op.Responses != nil {
		if r := op.Responses.Status(200); r != nil && r.Value != nil {
			if mt := r.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
				s = mt.Schema.Value
			}
		}
	}
	if s == nil || s.Type == nil || !s.Type.Is(openapi3.TypeObject) {
		return nil, fmt.Errorf("the 200 response is not a JSON object schema")
	}
	return jsonSchema(s), nil
}

// forPeople reports whether the contract marks op as an operation of people.
func forPeople(op *openapi3.Operation) bool {
	v, ok := op.Extensions[audienceExtension].(string)
	return ok && v == audiencePeople
}

// argument is one property of a tool's flat input schema and where it goes
// in the REST request.
type argument struct {
	name     string
	in       string
	required bool
	schema   *openapi3.Schema
	// pattern is the compiled pattern of a path argument's schema.
	pattern *regexp.Regexp
}

// tool is one operation of the contract served as an MCP tool.
type tool struct {
	name   string
	method string
	path   string
	// body is set when the operation takes a JSON request body.
	body bool
	args map[string]*argument
	def  *sdk.Tool
	// headers maps each argument with an x-mcp-header to the header's
	// name (after Mcp-Param-).
	headers map[string]string
	// spanName names the span of a call of the tool: "tools/call <name>".
	spanName string
}

// buildTools makes one tool per operation of the contract for agents,
// ordered by path and method. The operations of people are left out: an
// agent must not decide approvals or read the audit log.
func buildTools(doc *openapi3.T) ([]*tool, error) {
	if doc == nil || doc.Paths == nil {
		return nil, fmt.Errorf("mcp: the contract has no paths")
	}
	var tools []*tool
	seen := map[string]bool{}
	paths := make([]string, 0, doc.Paths.Len())
	for path := range doc.Paths.Map() {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		methods := make([]string, 0, len(item.Operations()))
		for m := range item.Operations() {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, method := range methods {
			op := item.GetOperation(method)
			if op.OperationID == "" {
				return nil, fmt.Errorf("mcp: %s %s has no operationId", method, path)
			}
			if seen[op.OperationID] {
				return nil, fmt.Errorf("mcp: operationId %s is used twice", op.OperationID)
			}
			seen[op.OperationID] = true
			if forPeople(op) {
				continue
			}
			t, err := buildTool(method, path, item, op)
			if err != nil {
				return nil, fmt.Errorf("mcp: %s: %w", op.OperationID, err)
			}
			tools = append(tools, t)
		}
	}
	return tools, nil
}

func buildTool(method, path string, item *openapi3.PathItem, op *openapi3.Operation) (*tool, error) {
	t := &tool{name: op.OperationID, method: method, path: path, args: map[string]*argument{},
		spanName: methodToolsCall + " " + op.OperationID}
	add := func(a *argument) error {
		if prev, ok := t.args[a.name]; ok {
			return fmt.Errorf("argument %s is both a %s and a %s field", a.name, prev.in, a.in)
		}
		if a.schema == nil {
			return fmt.Errorf("argument %s has no schema", a.name)
		}
		if a.in == inPath && a.schema.Pattern != "" {
			re, err := regexp.Compile(a.schema.Pattern)
			if err != nil {
				return fmt.Errorf("argument %s: %w", a.name, err)
			}
			a.pattern = re
		}
		t.args[a.name] = a
		return nil
	}

	// An operation's own parameter replaces the path's of the same name.
	var params openapi3.Parameters
	for _, ref := range item.Parameters {
		if ref.Value != nil && op.Parameters.GetByInAndName(ref.Value.In, ref.Value.Name) == nil {
			params = append(params, ref)
		}
	}
	params = append(params, op.Parameters...)
	for _, ref := range params {
		p := ref.Value
		if p == nil || (p.In != openapi3.ParameterInPath && p.In != openapi3.ParameterInQuery) {
			continue
		}
		if p.Schema == nil || p.Schema.Value == nil {
			return nil, fmt.Errorf("parameter %s has no schema", p.Name)
		}
		s := withDescription(p.Schema.Value, p.Description)
		if p.Example != nil && s.Example == nil {
			s.Example = p.Example
		}
		if err := add(&argument{name: p.Name, in: p.In, required: p.Required || p.In == openapi3.ParameterInPath, schema: s}); err != nil {
			return nil, err
		}
	}

	if op.RequestBody != nil && op.RequestBody.Value != nil {
		mt := op.RequestBody.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			return nil, fmt.Errorf("the request body is not a JSON object schema")
		}
		bs := mt.Schema.Value
		if !bs.Type.Is(openapi3.TypeObject) {
			return nil, fmt.Errorf("the request body is not a JSON object schema")
		}
		t.body = true
		names := make([]string, 0, len(bs.Properties))
		for name := range bs.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		required := map[string]bool{}
		for _, r := range bs.Required {
			required[r] = true
		}
		for _, name := range names {
			ps := bs.Properties[name]
			if ps == nil || ps.Value == nil {
				return nil, fmt.Errorf("body field %s has no schema", name)
			}
			if err := add(&argument{name: name, in: inBody, required: required[name], schema: ps.Value}); err != nil {
				return nil, err
			}
		}
	}

	// The contract declares run_id and idempotency_key where REST reads
	// them (run_id in the query of a GET and the body of a POST,
	// idempotency_key in the body of a write). Where it leaves one out, the
	// tool still takes it and sends it where REST reads it anyway: run_id
	// in the query, the key as the Idempotency-Key header.
	if _, ok := t.args["run_id"]; !ok {
		t.args["run_id"] = &argument{name: "run_id", in: inQuery, schema: &openapi3.Schema{
			Type:        &openapi3.Types{openapi3.TypeString},
			Pattern:     `^[A-Za-z0-9._:-]{1,128}$`,
			Description: "The agent run this call belongs to; send the same value on every call of one run.",
			Extensions:  map[string]any{mcpHeaderExtension: runIDHeaderName},
		}}
	}
	if _, ok := t.args["idempotency_key"]; !ok && writes[t.name] {
		maxLen := uint64(200)
		t.args["idempotency_key"] = &argument{name: "idempotency_key", in: inHeader, schema: &openapi3.Schema{
			Type:        &openapi3.Types{openapi3.TypeString},
			MinLength:   1,
			MaxLength:   &maxLen,
			Pattern:     `^[A-Za-z0-9_.:-]+$`,
			Description: "A key unique per intended write; the same key with the same arguments replays the first answer instead of writing again.",
		}}
	}
	for name, a := range t.args {
		if a.in == inPath && !strings.Contains(path, "{"+name+"}") {
			return nil, fmt.Errorf("path parameter %s is not in %s", name, path)
		}
	}

	ann, err := annotations(op)
	if err != nil {
		return nil, err
	}
	out, err := outputSchema(op)
	if err != nil {
		return nil, err
	}
	t.def = &sdk.Tool{
		Name:         t.name,
		Title:        op.Summary,
		Description:  describe(op),
		InputSchema:  t.inputSchema(),
		OutputSchema: out,
		Annotations:  ann,
	}
	t.headers = map[string]string{}
	for name, a := range t.args {
		if h, ok := a.schema.Extensions[mcpHeaderExtension].(string); ok && h != "" {
			t.headers[name] = h
		}
	}
	return t, nil
}

// describe joins an operation's summary and description into one text.
func describe(op *openapi3.Operation) string {
	summary := strings.TrimSpace(op.Summary)
	desc := strings.TrimSpace(op.Description)
	switch {
	case summary == "":
		return desc
	case desc == "":
		return summary
	}
	if !strings.HasSuffix(summary, ".") {
		summary += "."
	}
	return summary + "\n\n" + desc
}

// withDescription returns a copy of s that carries the parameter's
// description, which the contract writes on the parameter, not its schema.
func withDescription(s *openapi3.Schema, description string) *openapi3.Schema {
	c := *s
	if description != "" {
		c.Description = description
	}
	return &c
}

// mcpHeaderExtension marks an argument that MCP clients of the 2026-07-28
// revision mirror into an Mcp-Param-{value} HTTP header (SEP-2243), so
// that a load balancer can route on it without reading the body. The
// contract sets it on run_id (Mcp-Param-Run-Id); the SDK's Streamable HTTP
// handler refuses a call whose header and argument disagree.
const mcpHeaderExtension = "x-mcp-header"

// runIDHeaderName is the x-mcp-header name of run_id.
const runIDHeaderName = "Run-Id"

// inputSchema is the flat JSON Schema of the tool's arguments.
func (t *tool) inputSchema() map[string]any {
	props := map[string]any{}
	var required []string
	for name, a := range t.args {
		props[name] = jsonSchema(a.schema)
		// x-mcp-header is honoured on top-level properties only (SEP-2243:
		// an annotation must be reachable through properties alone).
		if h, ok := a.schema.Extensions[mcpHeaderExtension].(string); ok && h != "" {
			props[name].(map[string]any)[mcpHeaderExtension] = h
		}
		if a.required {
			required = append(required, name)
		}
	}
	sort.Strings(required)
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// jsonSchema turns an OpenAPI 3.0 schema into the JSON Schema keywords a
// tool's input schema uses, keeping names, patterns, enums, bounds and
// descriptions as the contract wrote them.
func jsonSchema(s *openapi3.Schema) map[string]any {
	out := map[string]any{}
	if s.Type != nil && !s.Type.IsEmpty() {
		types := s.Type.Slice()
		if s.Nullable && !s.Type.IncludesNull() {
			types = append(append([]string{}, types...), openapi3.TypeNull)
		}
		if len(types) == 1 {
			out["type"] = types[0]
		} else {
			out["type"] = types
		}
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if s.Pattern != "" {
		out["pattern"] = s.Pattern
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	if s.Default != nil {
		out["default"] = s.Default
	}
	if s.Example != nil {
		out["examples"] = []any{s.Example}
	}
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	if s.Min != nil {
		if s.ExclusiveMin.IsTrue() {
			out["exclusiveMinimum"] = *s.Min
		} else {
			out["minimum"] = *s.Min
		}
	}
	if s.Max != nil {
		if s.ExclusiveMax.IsTrue() {
			out["exclusiveMaximum"] = *s.Max
		} else {
			out["maximum"] = *s.Max
		}
	}
	if s.MinItems > 0 {
		out["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	if s.Items != nil && s.Items.Value != nil {
		out["items"] = jsonSchema(s.Items.Value)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			if p != nil && p.Value != nil {
				props[name] = jsonSchema(p.Value)
			}
		}
		out["properties"] = props
		if len(s.Required) > 0 {
			out["required"] = s.Required
		}
		if s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has {
			out["additionalProperties"] = false
		}
	}
	return out
}
