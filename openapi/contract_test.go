package openapi

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// operationIDs lists the operationIds of doc, sorted.
func operationIDs(doc *openapi3.T) []string {
	var ids []string
	for _, o := range allOperations(doc) {
		ids = append(ids, o.op.OperationID)
	}
	slices.Sort(ids)
	return ids
}

// TestContractsSplitTheSource: every operation of openapi.yaml is in
// exactly one of the two contracts, the agents' holding the tools and the
// people's the operations of people, each as written.
func TestContractsSplitTheSource(t *testing.T) {
	source := load(t)
	people, err := LoadPeople()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := operationIDs(agents(t)), slices.Sorted(slices.Values(operations)); !slices.Equal(got, want) {
		t.Errorf("the agents' contract holds %v, want the tools %v", got, want)
	}
	if got, want := operationIDs(people), slices.Sorted(maps.Keys(peopleOperations)); !slices.Equal(got, want) {
		t.Errorf("the people's contract holds %v, want %v", got, want)
	}
	for name, doc := range map[string]*openapi3.T{"agents": agents(t), "people": people} {
		for _, o := range allOperations(doc) {
			written := source.Paths.Find(o.path).GetOperation(o.method)
			a, _ := json.Marshal(o.op)
			b, _ := json.Marshal(written)
			if string(a) != string(b) {
				t.Errorf("%s: %s %s differs from openapi.yaml", name, o.method, o.path)
			}
			if isPeople(o.op) != (name == "people") {
				t.Errorf("%s: %s is in the wrong contract", name, o.op.OperationID)
			}
		}
	}
}

// TestAgentsContractNamesNoOperationOfPeople: nothing in any form of the
// agents' contract, the flat JSON an OpenAPI bridge reads included, names
// an operation of people; the people's contract names each and no tool as
// an operation.
func TestAgentsContractNamesNoOperationOfPeople(t *testing.T) {
	d, err := Serve("https://erpgate.example.net", AuthKeys)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := Flat(d.JSON)
	if err != nil {
		t.Fatal(err)
	}
	for form, b := range map[string][]byte{"JSON": d.JSON, "flat JSON": flat, "YAML": d.YAML, "Swagger": d.Swagger} {
		for id := range peopleOperations {
			if strings.Contains(string(b), id) || strings.Contains(string(b), pascalCase(id)) {
				t.Errorf("the agents' %s names %s", form, id)
			}
		}
		if strings.Contains(string(b), audienceExtension) || strings.Contains(string(b), peopleInfoExtension) {
			t.Errorf("the agents' %s carries %s or %s", form, audienceExtension, peopleInfoExtension)
		}
	}
	p, err := ServePeople("https://erpgate.example.net", AuthKeys)
	if err != nil {
		t.Fatal(err)
	}
	for form, b := range map[string][]byte{"JSON": p.JSON, "YAML": p.YAML} {
		for id := range peopleOperations {
			if !strings.Contains(string(b), id) {
				t.Errorf("the people's %s does not name %s", form, id)
			}
		}
		for _, id := range operations {
			if strings.Contains(string(b), "operationId: "+id+"\n") || strings.Contains(string(b), `"operationId":"`+id+`"`) {
				t.Errorf("the people's %s has the tool %s", form, id)
			}
		}
	}
	if p.Swagger != nil {
		t.Error("the people's contract has a Swagger 2.0 copy")
	}
}

// TestContractsHoldOnlyWhatTheyUse: in each contract every tag is used by
// one of its operations and every component (but the security schemes,
// which security requirements name) is reached by a reference from outside
// the components, directly or through other components: linters find
// nothing unused. The people's contract has the title and description of
// x-erpgate-people, the agents' those of info as written.
func TestContractsHoldOnlyWhatTheyUse(t *testing.T) {
	source := load(t)
	for _, aud := range []Audience{Agents, People} {
		t.Run(aud.String(), func(t *testing.T) {
			b, err := derived(aud)
			if err != nil {
				t.Fatal(err)
			}
			j, err := toJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(j, &doc); err != nil {
				t.Fatal(err)
			}
			used := map[string]bool{}
			var queue []string
			var collect func(v any)
			collect = func(v any) {
				switch v := v.(type) {
				case map[string]any:
					if ref, ok := v["$ref"].(string); ok && !used[ref] {
						used[ref] = true
						queue = append(queue, ref)
					}
					for _, e := range v {
						collect(e)
					}
				case []any:
					for _, e := range v {
						collect(e)
					}
				}
			}
			for k, v := range doc {
				if k != "components" {
					collect(v)
				}
			}
			for len(queue) > 0 {
				ref := queue[0]
				queue = queue[1:]
				target, err := pointer(doc, ref)
				if err != nil {
					t.Fatalf("%s: %v", ref, err)
				}
				collect(target)
			}
			components := doc["components"].(map[string]any)
			for kind, entries := range components {
				if kind == "securitySchemes" {
					continue
				}
				for name := range entries.(map[string]any) {
					if !used["#/components/"+kind+"/"+name] {
						t.Errorf("components.%s.%s is not used", kind, name)
					}
				}
			}
			opTags := map[string]bool{}
			loaded, err := parse(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range allOperations(loaded) {
				for _, tag := range o.op.Tags {
					opTags[tag] = true
				}
			}
			for _, tag := range loaded.Tags {
				if !opTags[tag.Name] {
					t.Errorf("tag %s is used by no operation", tag.Name)
				}
			}
			if len(loaded.Tags) != len(opTags) {
				t.Errorf("%d tags declared, %d used", len(loaded.Tags), len(opTags))
			}
			want := source.Info.Title
			if aud == People {
				want = source.Extensions[peopleInfoExtension].(map[string]any)["title"].(string)
			}
			asWritten := loaded.Info.Description == source.Info.Description
			if loaded.Info.Title != want || asWritten == (aud == People) {
				t.Errorf("info: title %q, want %q; the description must be the %s one", loaded.Info.Title, want, aud)
			}
			if loaded.Extensions[peopleInfoExtension] != nil {
				t.Errorf("the contract carries %s", peopleInfoExtension)
			}
		})
	}
}

// TestDeriveRefuses: a source with no operation for an audience, or with
// a reference to a component it does not have, derives no contract.
func TestDeriveRefuses(t *testing.T) {
	agentsOnly := []byte(`openapi: 3.0.3
info: {title: t, version: '1'}
x-erpgate-people: {title: p, description: d}
paths:
  /a:
    get:
      operationId: a
      responses:
        '200': {$ref: '#/components/responses/Missing'}
components:
  responses:
    Unused: {description: u}
`)
	if _, err := derive(agentsOnly, People); err == nil {
		t.Error("a source without an operation of people derived a people's contract")
	}
	if _, err := derive(agentsOnly, Agents); err == nil || !strings.Contains(err.Error(), "does not resolve") {
		t.Errorf("a reference to a missing component: %v, want an error that it does not resolve", err)
	}
	fixed := strings.Replace(string(agentsOnly), "Missing", "Used", 1) + "    Used: {description: used}\n"
	b, err := derive([]byte(fixed), Agents)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Unused") || !strings.Contains(string(b), "Used:") || strings.Contains(string(b), peopleInfoExtension) {
		t.Errorf("derived:\n%s\nwant Used kept, Unused and %s dropped", b, peopleInfoExtension)
	}
}
