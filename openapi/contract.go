package openapi

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v4"
)

// Audience is whom a contract derived from openapi.yaml is for.
type Audience int

const (
	// Agents: every operation without x-erpgate-audience, the tools.
	Agents Audience = iota
	// People: the operations marked x-erpgate-audience: people.
	People
)

// String is the audience's name, the value of x-erpgate-audience.
func (a Audience) String() string {
	if a == People {
		return "people"
	}
	return "agents"
}

const (
	// audienceExtension marks an operation for people; the agents'
	// operations carry none.
	audienceExtension = "x-erpgate-audience"
	// peopleInfoExtension holds, at the top of openapi.yaml, the title and
	// description of the people's contract; the agents' is info as written.
	peopleInfoExtension = "x-erpgate-people"
)

// methods are the keys of a path item that are operations.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// derivedOnce holds each audience's contract as YAML, derived from
// openapi.yaml once.
var derivedOnce = map[Audience]func() ([]byte, error){
	Agents: sync.OnceValues(func() ([]byte, error) { return derive(YAML, Agents) }),
	People: sync.OnceValues(func() ([]byte, error) { return derive(YAML, People) }),
}

// derived is the contract of aud as YAML, with the default server and the
// security as written.
func derived(aud Audience) ([]byte, error) { return derivedOnce[aud]() }

// derive returns the contract of aud from source, openapi.yaml: its
// operations only, a path without any left out; the tags those operations
// use; the components they reach through references, directly or not (the
// security schemes all kept); for people, the title and description of
// x-erpgate-people; and x-erpgate-people itself in neither.
func derive(source []byte, aud Audience) ([]byte, error) {
	root, err := parseNode(source)
	if err != nil {
		return nil, err
	}
	paths := mapping(root, "paths")
	if paths == nil {
		return nil, errors.New("openapi: derive: openapi.yaml has no paths")
	}
	tags := map[string]bool{}
	operations := 0
	for i := 0; i < len(paths.Content); {
		item := paths.Content[i+1]
		for _, m := range methods {
			op := mapping(item, m)
			if op == nil {
				continue
			}
			if audienceOf(op) != aud {
				deleteKey(item, m)
				continue
			}
			operations++
			if t := mapping(op, "tags"); t != nil {
				for _, tag := range t.Content {
					tags[tag.Value] = true
				}
			}
		}
		if !hasOperation(item) {
			paths.Content = slices.Delete(paths.Content, i, i+2)
			continue
		}
		i += 2
	}
	if operations == 0 {
		return nil, fmt.Errorf("openapi: derive: openapi.yaml has no operation for %s", aud)
	}
	if seq := mapping(root, "tags"); seq != nil {
		seq.Content = slices.DeleteFunc(seq.Content, func(tag *yaml.Node) bool {
			name := mapping(tag, "name")
			return name == nil || !tags[name.Value]
		})
		if len(seq.Content) == 0 {
			deleteKey(root, "tags")
		}
	}
	if aud == People {
		people := mapping(root, peopleInfoExtension)
		info := mapping(root, "info")
		if people == nil || info == nil {
			return nil, fmt.Errorf("openapi: derive: openapi.yaml has no info and %s", peopleInfoExtension)
		}
		for _, key := range []string{"title", "description"} {
			v := mapping(people, key)
			if v == nil {
				return nil, fmt.Errorf("openapi: derive: %s has no %s", peopleInfoExtension, key)
			}
			setKey(info, key, v)
		}
	}
	deleteKey(root, peopleInfoExtension)
	if err := pruneComponents(root); err != nil {
		return nil, err
	}
	return encodeNode(root)
}

// audienceOf is the audience x-erpgate-audience of op names: People for
// "people", Agents without the extension.
func audienceOf(op *yaml.Node) Audience {
	if v := mapping(op, audienceExtension); v != nil && v.Value == People.String() {
		return People
	}
	return Agents
}

func hasOperation(item *yaml.Node) bool {
	for _, m := range methods {
		if mapping(item, m) != nil {
			return true
		}
	}
	return false
}

// pruneComponents removes from root's components every entry no reference
// reaches from outside components, directly or through other components,
// and every kind of component left empty. Security schemes are named by
// security requirements, not referenced, and are kept.
func pruneComponents(root *yaml.Node) error {
	components := mapping(root, "components")
	if components == nil {
		return nil
	}
	reached := map[string]bool{}
	var queue []string
	visit := func(n *yaml.Node) {
		for _, ref := range refsIn(n) {
			if !reached[ref] {
				reached[ref] = true
				queue = append(queue, ref)
			}
		}
	}
	for i := 0; i < len(root.Content); i += 2 {
		if root.Content[i].Value != "components" {
			visit(root.Content[i+1])
		}
	}
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		kind, name, ok := componentOf(ref)
		if !ok {
			return fmt.Errorf("openapi: derive: %s is not a reference to a component", ref)
		}
		target := mapping(mapping(components, kind), name)
		if target == nil {
			return fmt.Errorf("openapi: derive: %s does not resolve", ref)
		}
		visit(target)
	}
	for i := 0; i < len(components.Content); {
		kind, entries := components.Content[i].Value, components.Content[i+1]
		if kind != "securitySchemes" {
			for j := 0; j < len(entries.Content); {
				if !reached["#/components/"+kind+"/"+entries.Content[j].Value] {
					entries.Content = slices.Delete(entries.Content, j, j+2)
					continue
				}
				j += 2
			}
		}
		if len(entries.Content) == 0 {
			components.Content = slices.Delete(components.Content, i, i+2)
			continue
		}
		i += 2
	}
	return nil
}

// refsIn lists the values of every $ref below n.
func refsIn(n *yaml.Node) []string {
	var refs []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i < len(n.Content); i += 2 {
				if n.Content[i].Value == "$ref" && n.Content[i+1].Kind == yaml.ScalarNode {
					refs = append(refs, n.Content[i+1].Value)
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return refs
}

// componentOf splits a local reference to a component,
// "#/components/schemas/Error", into its kind and name.
func componentOf(ref string) (kind, name string, ok bool) {
	rest, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		return "", "", false
	}
	kind, name, ok = strings.Cut(rest, "/")
	if !ok || strings.Contains(name, "/") {
		return "", "", false
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	return kind, name, true
}

// contract returns the contract of aud as YAML for serverURL (empty: the
// default server as written) with the security of auth.
func contract(aud Audience, serverURL string, auth Auth) ([]byte, error) {
	if err := checkServerURL(serverURL); err != nil {
		return nil, err
	}
	b, err := derived(aud)
	if err != nil || (serverURL == "" && auth == AuthKeys) {
		return b, err
	}
	root, err := parseNode(b)
	if err != nil {
		return nil, err
	}
	if serverURL != "" {
		server := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: "url"},
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: serverURL, Style: yaml.DoubleQuotedStyle},
		}}
		setKey(root, "servers", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{server}})
	}
	if err := secure(root, auth); err != nil {
		return nil, err
	}
	return encodeNode(root)
}

// secure gives root the security of auth: with AuthBearer the one
// requirement of the bearer scheme and that scheme alone; with AuthOpen
// the empty requirement and no scheme.
func secure(root *yaml.Node, auth Auth) error {
	if auth == AuthKeys {
		return nil
	}
	schemes := mapping(mapping(root, "components"), "securitySchemes")
	if mapping(schemes, schemeBearer) == nil || mapping(schemes, schemeAPIKey) == nil {
		return fmt.Errorf("openapi: security: the contract does not declare %s and %s", schemeBearer, schemeAPIKey)
	}
	requirement := "[{}]"
	if auth == AuthBearer {
		requirement = "[{" + schemeBearer + ": []}]"
		deleteKey(schemes, schemeAPIKey)
	} else {
		deleteKey(mapping(root, "components"), "securitySchemes")
	}
	security, err := parseNode([]byte(requirement))
	if err != nil {
		return err
	}
	// Written in block style, as openapi.yaml writes it.
	security.Style, security.Content[0].Style = 0, 0
	setKey(root, "security", security)
	return nil
}

// parseNode parses YAML into the node of its one document.
func parseNode(b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Load(b, &doc); err != nil {
		return nil, fmt.Errorf("openapi: parse YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("openapi: parse YAML: not one document")
	}
	return doc.Content[0], nil
}

// encodeNode writes n as openapi.yaml is written: two spaces of indent,
// sequences indented below their key, lines of about 100 characters.
func encodeNode(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	d, err := yaml.NewDumper(&buf, yaml.WithIndent(2), yaml.WithCompactSeqIndent(false), yaml.WithLineWidth(100),
		yaml.WithQuotePreference(yaml.QuoteSingle))
	if err == nil {
		err = d.Dump(n)
	}
	if err == nil {
		err = d.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("openapi: encode YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// mapping is the value of key in the mapping node m, or nil.
func mapping(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey sets key in the mapping node m to v, in its place when m has it,
// else at the end.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// deleteKey removes key from the mapping node m, if there.
func deleteKey(m *yaml.Node, key string) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}
