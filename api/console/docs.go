package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"

	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/openapi"
)

// The contract's extensions /docs reads.
const (
	// scopeExtension names the scope an operation needs.
	scopeExtension = "x-erpgate-scope"
	// audienceExtension marks the operations of people.
	audienceExtension = "x-erpgate-audience"
)

// docsData is /docs: the authentication, the agents' operations, the
// people's operations, the error body and the codes.
type docsData struct {
	Title, Version string
	Description    template.HTML
	Schemes        []docScheme
	Scopes         []docScope
	Agents         []docOp
	People         []docOp
	// Error is the body of every error response, shown once.
	Error []docField
	Codes []errmap.Entry
}

// docScheme is one of the contract's security schemes.
type docScheme struct {
	Name, How   string
	Description template.HTML
}

// docScope is a scope and the operations that need it.
type docScope struct {
	Name       string
	Operations []string
}

type docOp struct {
	ID, Method, Path, Summary, Scope string
	Description                      template.HTML
	Tags                             []string
	Params                           []docField
	Body                             docBody
	BodyExamples                     []docExample
	Responses                        []docResponse
}

// docField is a parameter, or a field of a body: Name is its path from
// the body's top (lines[].po_id), Depth how deep it lies.
type docField struct {
	Name, In, Type, Pattern, Description, Example string
	Required                                      bool
	Depth                                         int
}

// docBody is a request or response body: its media type, the name of its
// schema in the contract, and its fields.
type docBody struct {
	Media, Schema, Description string
	Fields                     []docField
}

type docExample struct{ Name, JSON string }

type docResponse struct {
	Status, Description string
	Body                docBody
	// Problem is an error response: its body has the five fields shown
	// once under Errors, and Codes are the codes its examples show.
	Problem  bool
	Codes    []string
	Examples []docExample
}

var pathLine = regexp.MustCompile(`(?m)^  (/[^:\s]*):\s*$`)

// maxDepth bounds how deep /docs follows nested fields.
const maxDepth = 6

// renderDocs renders /docs once, from the agents' contract and the
// people's. Operations of people found in the agents' contract (marked
// x-erpgate-audience: people) are shown with the people's; people may be
// nil.
func (c *Console) renderDocs(agents, people *openapi3.T) ([]byte, error) {
	d := docsData{Codes: errmap.Catalogue()}
	if agents.Info != nil {
		d.Title, d.Version, d.Description = agents.Info.Title, agents.Info.Version, markdown(agents.Info.Description)
	}
	d.Schemes = schemesOf(agents)
	for _, op := range operationsOf(agents) {
		if isPeople(op) {
			d.People = append(d.People, op.doc)
		} else {
			d.Agents = append(d.Agents, op.doc)
		}
	}
	if people != nil {
		for _, op := range operationsOf(people) {
			if !slices.ContainsFunc(d.People, func(o docOp) bool { return o.ID == op.doc.ID }) {
				d.People = append(d.People, op.doc)
			}
		}
	}
	d.Scopes = scopesOf(append(slices.Clone(d.Agents), d.People...))
	if s := errorSchema(agents); s != nil {
		d.Error = fieldsOf(s, "", 0, nil)
	}
	var buf bytes.Buffer
	err := c.pages["docs"].Execute(&buf, page{Title: "API reference", Nav: "docs", Data: d})
	return buf.Bytes(), err
}

// contractOp is an operation of a contract with what /docs shows of it.
type contractOp struct {
	op  *openapi3.Operation
	doc docOp
}

func isPeople(o contractOp) bool { return fmt.Sprint(o.op.Extensions[audienceExtension]) == "people" }

// operationsOf lists doc's operations in the order openapi.yaml writes
// their paths.
func operationsOf(doc *openapi3.T) []contractOp {
	order := map[string]int{}
	for i, m := range pathLine.FindAllSubmatch(openapi.YAML, -1) {
		order[string(m[1])] = i
	}
	paths := doc.Paths.Keys()
	sort.SliceStable(paths, func(i, j int) bool {
		oi, iok := order[paths[i]]
		oj, jok := order[paths[j]]
		if iok && jok {
			return oi < oj
		}
		if iok != jok {
			return iok
		}
		return paths[i] < paths[j]
	})
	var ops []contractOp
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if op := item.GetOperation(method); op != nil {
				ops = append(ops, contractOp{op, docOperation(method, path, item, op)})
			}
		}
	}
	return ops
}

// schemesOf lists the security schemes of doc, those its security
// requirements name first, in their order.
func schemesOf(doc *openapi3.T) []docScheme {
	var names []string
	for _, req := range doc.Security {
		for name := range req {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	var rest []string
	for name := range doc.Components.SecuritySchemes {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	var out []docScheme
	for _, name := range append(names, rest...) {
		ref := doc.Components.SecuritySchemes[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		s := ref.Value
		how := s.Type
		switch {
		case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
			how = "HTTP header Authorization: Bearer <credential>"
		case s.Type == "http":
			how = "HTTP " + s.Scheme + " authentication"
		case s.Type == "apiKey":
			how = fmt.Sprintf("API key in the %s %s", s.In, s.Name)
		case s.Type == "oauth2":
			how = "OAuth 2.0"
		case s.Type == "openIdConnect":
			how = "OpenID Connect (" + s.OpenIdConnectUrl + ")"
		}
		out = append(out, docScheme{Name: name, How: how, Description: markdown(s.Description)})
	}
	return out
}

// scopesOf lists each scope the operations need with the operations, in
// the order the scopes first appear.
func scopesOf(ops []docOp) []docScope {
	var out []docScope
	for _, op := range ops {
		if op.Scope == "" {
			continue
		}
		i := slices.IndexFunc(out, func(s docScope) bool { return s.Name == op.Scope })
		if i < 0 {
			out = append(out, docScope{Name: op.Scope})
			i = len(out) - 1
		}
		out[i].Operations = append(out[i].Operations, op.ID)
	}
	return out
}

// errorSchema is the schema of the contract's error bodies: that of its
// first application/problem+json response.
func errorSchema(doc *openapi3.T) *openapi3.Schema {
	names := make([]string, 0, len(doc.Components.Responses))
	for name := range doc.Components.Responses {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := doc.Components.Responses[name]
		if r == nil || r.Value == nil {
			continue
		}
		if mt := r.Value.Content.Get("application/problem+json"); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
			return mt.Schema.Value
		}
	}
	return nil
}

func docOperation(method, path string, item *openapi3.PathItem, op *openapi3.Operation) docOp {
	o := docOp{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Description: markdown(op.Description), Tags: op.Tags}
	if s, ok := op.Extensions[scopeExtension].(string); ok {
		o.Scope = s
	}
	params := append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...)
	for _, p := range params {
		if p == nil || p.Value == nil {
			continue
		}
		v := p.Value
		dp := docField{Name: v.Name, In: v.In, Required: v.Required, Description: v.Description}
		if v.Schema != nil && v.Schema.Value != nil {
			dp.Type, dp.Pattern = schemaType(v.Schema.Value), v.Schema.Value.Pattern
			if v.Schema.Value.Example != nil {
				dp.Example = exampleJSON(v.Schema.Value.Example, false)
			}
		}
		if v.Example != nil {
			dp.Example = exampleJSON(v.Example, false)
		}
		o.Params = append(o.Params, dp)
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil {
			o.Body = bodyOf("application/json", mt)
			o.BodyExamples = examplesOf(mt)
		}
	}
	if op.Responses != nil {
		statuses := op.Responses.Keys()
		sort.Strings(statuses)
		for _, status := range statuses {
			ref := op.Responses.Value(status)
			if ref == nil || ref.Value == nil {
				continue
			}
			o.Responses = append(o.Responses, responseOf(status, ref.Value))
		}
	}
	return o
}

// responseOf is what /docs shows of a response: an error's codes, or a
// success's body with its fields and examples.
func responseOf(status string, r *openapi3.Response) docResponse {
	dr := docResponse{Status: status}
	if r.Description != nil {
		dr.Description = *r.Description
	}
	if mt := r.Content.Get("application/problem+json"); mt != nil {
		dr.Problem = true
		for _, ex := range examplesOf(mt) {
			var body struct{ Code string }
			if json.Unmarshal([]byte(ex.JSON), &body) == nil && body.Code != "" && !slices.Contains(dr.Codes, body.Code) {
				dr.Codes = append(dr.Codes, body.Code)
			}
		}
		return dr
	}
	media := make([]string, 0, len(r.Content))
	for name := range r.Content {
		media = append(media, name)
	}
	sort.Strings(media)
	for _, name := range media {
		mt := r.Content[name]
		if dr.Body.Media == "" {
			dr.Body = bodyOf(name, mt)
		}
		dr.Examples = append(dr.Examples, examplesOf(mt)...)
	}
	return dr
}

func bodyOf(media string, mt *openapi3.MediaType) docBody {
	b := docBody{Media: media}
	if mt.Schema == nil || mt.Schema.Value == nil {
		return b
	}
	b.Schema = schemaName(mt.Schema.Ref)
	b.Description = mt.Schema.Value.Description
	b.Fields = fieldsOf(mt.Schema.Value, "", 0, nil)
	return b
}

// schemaName is the name of a schema a reference names, "" for another
// reference.
func schemaName(ref string) string {
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok {
		return ""
	}
	return name
}

// fieldsOf lists the fields of an object schema s, and of the objects
// nested in it (in arrays too), each named by its path under prefix. The
// required fields come first, in the order the schema lists them, then the
// others by name. seen holds the schemas above s, so that a schema that
// holds itself ends.
func fieldsOf(s *openapi3.Schema, prefix string, depth int, seen []*openapi3.Schema) []docField {
	if depth >= maxDepth || slices.Contains(seen, s) {
		return nil
	}
	seen = append(seen, s)
	names := make([]string, 0, len(s.Properties))
	for _, name := range s.Required {
		if s.Properties[name] != nil {
			names = append(names, name)
		}
	}
	var optional []string
	for name := range s.Properties {
		if !slices.Contains(s.Required, name) {
			optional = append(optional, name)
		}
	}
	sort.Strings(optional)
	names = append(names, optional...)
	var out []docField
	for _, name := range names {
		ref := s.Properties[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		p := ref.Value
		f := docField{Name: prefix + name, Type: schemaType(p), Pattern: p.Pattern, Description: p.Description,
			Required: slices.Contains(s.Required, name), Depth: depth}
		out = append(out, f)
		switch {
		case len(p.Properties) > 0:
			out = append(out, fieldsOf(p, f.Name+".", depth+1, seen)...)
		case p.Items != nil && p.Items.Value != nil && len(p.Items.Value.Properties) > 0:
			out = append(out, fieldsOf(p.Items.Value, f.Name+"[].", depth+1, seen)...)
		}
	}
	return out
}

func examplesOf(mt *openapi3.MediaType) []docExample {
	var out []docExample
	if mt.Example != nil {
		out = append(out, docExample{Name: "example", JSON: exampleJSON(mt.Example, true)})
	}
	names := make([]string, 0, len(mt.Examples))
	for name := range mt.Examples {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ex := mt.Examples[name]
		if ex == nil || ex.Value == nil {
			continue
		}
		label := name
		if ex.Value.Summary != "" {
			label = ex.Value.Summary
		}
		out = append(out, docExample{Name: label, JSON: exampleJSON(ex.Value.Value, true)})
	}
	return out
}

func schemaType(s *openapi3.Schema) string {
	t := ""
	if s.Type != nil {
		t = strings.Join(s.Type.Slice(), ", ")
	}
	if t == "array" && s.Items != nil && s.Items.Value != nil {
		t = "array of " + schemaType(s.Items.Value)
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	if s.Nullable {
		t += " or null"
	}
	if len(s.Enum) > 0 {
		vals := make([]string, 0, len(s.Enum))
		for _, v := range s.Enum {
			vals = append(vals, exampleJSON(v, false))
		}
		t += ": one of " + strings.Join(vals, ", ")
	}
	return t
}

func exampleJSON(v any, indent bool) string {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return ""
	}
	return string(b)
}

// markdown renders a description of the contract, CommonMark as OpenAPI
// has it. Raw HTML in it shows as the text it is (literalHTML), so the
// result is safe to embed as it is.
func markdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(buf.String())
}

var md = goldmark.New(goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(literalHTML{}, 0))))

// literalHTML renders what CommonMark reads as raw HTML as escaped text:
// "Authorization: Bearer <key>" keeps its <key>, where goldmark's default
// would drop it, and nothing of a description becomes markup.
type literalHTML struct{}

// RegisterFuncs renders inline raw HTML and HTML blocks as text.
func (literalHTML) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := range segs.Len() {
				seg := segs.At(i)
				template.HTMLEscape(w, seg.Value(src))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		b := n.(*ast.HTMLBlock)
		_, _ = w.WriteString("<p>")
		lines := b.Lines()
		for i := range lines.Len() {
			line := lines.At(i)
			template.HTMLEscape(w, line.Value(src))
		}
		if b.HasClosure() {
			template.HTMLEscape(w, b.ClosureLine.Value(src))
		}
		_, _ = w.WriteString("</p>\n")
		return ast.WalkSkipChildren, nil
	})
}
