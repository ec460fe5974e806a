package console

import (
	"bytes"
	"encoding/json"
	"html/template"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/yuin/goldmark"

	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/openapi"
)

// docsData is /docs: the contract's operations and the codes.
type docsData struct {
	Title, Version string
	Description    template.HTML
	Operations     []docOp
	Codes          []errmap.Entry
}

type docOp struct {
	ID, Method, Path, Summary string
	Description               template.HTML
	Tags                      []string
	Params                    []docParam
	Body                      []docField
	BodyExamples              []docExample
	Responses                 []docResponse
}

type docParam struct {
	Name, In, Type, Description, Example string
	Required                             bool
}

type docField struct {
	Name, Type, Description string
	Required                bool
}

type docExample struct{ Name, JSON string }

type docResponse struct {
	Status, Description string
	Examples            []docExample
}

var pathLine = regexp.MustCompile(`(?m)^  (/[^:\s]*):\s*$`)

// renderDocs renders /docs once, from the contract.
func (c *Console) renderDocs(doc *openapi3.T) ([]byte, error) {
	d := docsData{Codes: errmap.Catalogue()}
	if doc.Info != nil {
		d.Title, d.Version, d.Description = doc.Info.Title, doc.Info.Version, markdown(doc.Info.Description)
	}
	// The contract's own order of paths, as openapi.yaml writes them.
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
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			d.Operations = append(d.Operations, docOperation(method, path, item, op))
		}
	}
	var buf bytes.Buffer
	err := c.pages["docs"].Execute(&buf, page{Title: "API reference", Nav: "docs", Data: d})
	return buf.Bytes(), err
}

func docOperation(method, path string, item *openapi3.PathItem, op *openapi3.Operation) docOp {
	o := docOp{ID: op.OperationID, Method: method, Path: path, Summary: op.Summary, Description: markdown(op.Description), Tags: op.Tags}
	params := append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...)
	for _, p := range params {
		if p == nil || p.Value == nil {
			continue
		}
		v := p.Value
		dp := docParam{Name: v.Name, In: v.In, Required: v.Required, Description: v.Description}
		if v.Schema != nil && v.Schema.Value != nil {
			dp.Type = schemaType(v.Schema.Value)
			if dp.Example == "" && v.Schema.Value.Example != nil {
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
			if mt.Schema != nil && mt.Schema.Value != nil {
				s := mt.Schema.Value
				names := make([]string, 0, len(s.Properties))
				for name := range s.Properties {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					f := docField{Name: name, Required: slices.Contains(s.Required, name)}
					if ps := s.Properties[name]; ps != nil && ps.Value != nil {
						f.Type, f.Description = schemaType(ps.Value), ps.Value.Description
					}
					o.Body = append(o.Body, f)
				}
			}
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
			dr := docResponse{Status: status}
			if ref.Value.Description != nil {
				dr.Description = *ref.Value.Description
			}
			if strings.HasPrefix(status, "2") {
				for _, mt := range ref.Value.Content {
					dr.Examples = append(dr.Examples, examplesOf(mt)...)
				}
			}
			o.Responses = append(o.Responses, dr)
		}
	}
	return o
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
	if len(s.Enum) > 0 {
		vals := make([]string, 0, len(s.Enum))
		for _, v := range s.Enum {
			vals = append(vals, exampleJSON(v, false))
		}
		t += ": one of " + strings.Join(vals, ", ")
	}
	if s.Pattern != "" {
		t += " matching " + s.Pattern
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
// has it. goldmark's defaults leave raw HTML out, so the result is safe to
// embed as it is.
func markdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := goldmark.Convert([]byte(src), &buf); err != nil {
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(buf.String())
}
