package openapi

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Flat returns the contract doc (JSON, as JSON returns it) with every local
// $ref replaced by a copy of what it points to, and the document's servers
// on every path too (operations carry none): the shape OpenAPI-to-MCP
// bridges that resolve no references, or take the base URL from a path's
// servers (@twilio-alpha/openapi-mcp-server), need. A reference to itself,
// directly or not, is an error.
func Flat(doc []byte) ([]byte, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("openapi: flat: %w", err)
	}
	flat, err := inline(root, root, nil)
	if err != nil {
		return nil, fmt.Errorf("openapi: flat: %w", err)
	}
	out := flat.(map[string]any)
	servers, hasServers := out["servers"].([]any)
	if paths, ok := out["paths"].(map[string]any); ok {
		for _, item := range paths {
			item, ok := item.(map[string]any)
			if !ok {
				continue
			}
			delete(item, "servers")
			if hasServers {
				item["servers"] = servers
			}
			for _, op := range item {
				if op, ok := op.(map[string]any); ok {
					delete(op, "servers")
				}
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("openapi: flat: encode: %w", err)
	}
	return b, nil
}

// inline copies v with every {"$ref": "#/..."} replaced by its target,
// itself inlined; seen holds the references being inlined, to catch cycles.
func inline(root map[string]any, v any, seen []string) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			for _, s := range seen {
				if s == ref {
					return nil, fmt.Errorf("%s refers to itself", ref)
				}
			}
			target, err := pointer(root, ref)
			if err != nil {
				return nil, err
			}
			return inline(root, target, append(seen, ref))
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := inline(root, e, seen)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := inline(root, e, seen)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

// pointer resolves a local JSON pointer reference such as
// "#/components/schemas/Error".
func pointer(root map[string]any, ref string) (any, error) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("%s is not a local reference", ref)
	}
	var cur any = root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s does not resolve", ref)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("%s does not resolve", ref)
		}
	}
	return cur, nil
}
