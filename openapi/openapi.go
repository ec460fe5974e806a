// Package openapi holds the contract of the gateway: openapi.yaml, the
// OpenAPI 3.0.3 document that is the source of truth for every operation,
// request, response and error, embedded into the binary and served as JSON
// and YAML.
package openapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// YAML is openapi.yaml exactly as written, with its default server
// http://localhost:8080.
//
//go:embed openapi.yaml
var YAML []byte

// defaultServer is the servers entry of openapi.yaml that YAMLFor replaces.
const defaultServer = "servers:\n  - url: http://localhost:8080\n"

// Load parses the embedded contract, resolves its references and validates
// it, examples included. Each call returns a new document that the caller
// may change.
func Load() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(YAML)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: validate: %w", err)
	}
	return doc, nil
}

// JSON returns the contract as JSON. When serverURL is not empty it becomes
// the one server of the document; it must be an absolute http or https URL.
func JSON(serverURL string) ([]byte, error) {
	if err := checkServerURL(serverURL); err != nil {
		return nil, err
	}
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	if serverURL != "" {
		doc.Servers = openapi3.Servers{{URL: serverURL}}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode JSON: %w", err)
	}
	return b, nil
}

// YAMLFor returns the contract as YAML, as written. When serverURL is not
// empty it replaces the URL of the one server; it must be an absolute http or
// https URL.
func YAMLFor(serverURL string) ([]byte, error) {
	if err := checkServerURL(serverURL); err != nil {
		return nil, err
	}
	if serverURL == "" {
		return bytes.Clone(YAML), nil
	}
	if bytes.Count(YAML, []byte(defaultServer)) != 1 {
		return nil, fmt.Errorf("openapi: openapi.yaml has no single %q entry", defaultServer)
	}
	// A JSON string is a valid YAML double-quoted scalar, so the URL needs
	// no YAML escaping of its own.
	quoted, err := json.Marshal(serverURL)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode server URL: %w", err)
	}
	server := append([]byte("servers:\n  - url: "), quoted...)
	server = append(server, '\n')
	return bytes.Replace(YAML, []byte(defaultServer), server, 1), nil
}

// checkServerURL accepts "" (keep the default) and absolute http(s) URLs.
func checkServerURL(serverURL string) error {
	if serverURL == "" {
		return nil
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("openapi: server URL %q is not an absolute http or https URL", serverURL)
	}
	return nil
}

// Auth is what the running gateway takes from its callers. The security of
// the contract it serves says the same, so that a client or a connector
// platform importing the contract asks for the credentials the gateway
// needs, and for none when it needs none.
type Auth int

const (
	// AuthKeys: an API key, as "Authorization: Bearer <key>" or in
	// X-API-Key (and, beside the keys, an OAuth access token as a bearer
	// token). The contract as written.
	AuthKeys Auth = iota
	// AuthBearer: OAuth access tokens only, as a bearer token; X-API-Key
	// is not taken. The contract keeps the bearer scheme alone.
	AuthBearer
	// AuthOpen: no credentials at all; every caller is served. The
	// contract requires nothing (security [{}], the one empty requirement
	// of OpenAPI 3.0) and declares no security scheme, so that importers
	// set up no authentication.
	AuthOpen
)

// The security schemes of openapi.yaml.
const (
	schemeBearer = "bearer_auth"
	schemeAPIKey = "api_key"
)

// Documents are the contract as the gateway serves it: /openapi.json,
// /openapi.yaml and /swagger.json.
type Documents struct {
	JSON, YAML, Swagger []byte
}

// Serve returns the contract in the three forms the gateway serves, with
// serverURL as its server (as JSON, YAMLFor and Swagger take it) and the
// security of auth. With AuthKeys they are what JSON, YAMLFor and Swagger
// return.
func Serve(serverURL string, auth Auth) (Documents, error) {
	var d Documents
	var err error
	if d.JSON, err = JSON(serverURL); err != nil {
		return Documents{}, err
	}
	if d.YAML, err = YAMLFor(serverURL); err != nil {
		return Documents{}, err
	}
	if d.Swagger, err = Swagger(serverURL); err != nil {
		return Documents{}, err
	}
	if auth == AuthKeys {
		return d, nil
	}
	if d.JSON, err = securedJSON(d.JSON, auth, "components", "securitySchemes"); err != nil {
		return Documents{}, err
	}
	if d.YAML, err = securedYAML(d.YAML, auth); err != nil {
		return Documents{}, err
	}
	if d.Swagger, err = securedJSON(d.Swagger, auth, "securityDefinitions"); err != nil {
		return Documents{}, err
	}
	return d, nil
}

// requirement is the one security requirement of the contract for auth:
// the bearer scheme, or nothing at all.
func requirement(auth Auth) map[string]any {
	if auth == AuthBearer {
		return map[string]any{schemeBearer: []any{}}
	}
	return map[string]any{}
}

// securedJSON is doc, an OpenAPI 3.0 or Swagger 2.0 document in JSON,
// with the security of auth: the one requirement of auth at the top, and
// in the security schemes at schemesPath only the bearer scheme
// (AuthBearer) or none (AuthOpen). Numbers keep their text.
func securedJSON(doc []byte, auth Auth, schemesPath ...string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("openapi: security: %w", err)
	}
	root["security"] = []any{requirement(auth)}
	parent, last := root, schemesPath[len(schemesPath)-1]
	for _, key := range schemesPath[:len(schemesPath)-1] {
		next, ok := parent[key].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("openapi: security: the document has no %s", key)
		}
		parent = next
	}
	schemes, ok := parent[last].(map[string]any)
	if !ok || schemes[schemeBearer] == nil || schemes[schemeAPIKey] == nil {
		return nil, fmt.Errorf("openapi: security: the document does not declare %s and %s", schemeBearer, schemeAPIKey)
	}
	if auth == AuthOpen {
		delete(parent, last)
	} else {
		delete(schemes, schemeAPIKey)
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("openapi: security: %w", err)
	}
	return b, nil
}

// The security of openapi.yaml as written, which securedYAML replaces.
const (
	yamlSecurity       = "security:\n  - bearer_auth: []\n  - api_key: []\n"
	yamlSchemes        = "  securitySchemes:\n"
	yamlAPIKeyScheme   = "    api_key:\n"
	yamlOpenSecurity   = "security:\n  - {}\n"
	yamlBearerSecurity = "security:\n  - bearer_auth: []\n"
)

// securedYAML is doc, openapi.yaml as YAMLFor returns it, with the
// security of auth, the rest as written.
func securedYAML(doc []byte, auth Auth) ([]byte, error) {
	if bytes.Count(doc, []byte("\n"+yamlSecurity)) != 1 {
		return nil, fmt.Errorf("openapi: openapi.yaml has no single %q", yamlSecurity)
	}
	var err error
	if auth == AuthOpen {
		doc = bytes.Replace(doc, []byte("\n"+yamlSecurity), []byte("\n"+yamlOpenSecurity), 1)
		doc, err = cutBlock(doc, yamlSchemes)
	} else {
		doc = bytes.Replace(doc, []byte("\n"+yamlSecurity), []byte("\n"+yamlBearerSecurity), 1)
		doc, err = cutBlock(doc, yamlAPIKeyScheme)
	}
	return doc, err
}

// cutBlock removes from doc the line head, which must be there once, and
// every line after it that is blank or indented deeper than head: head's
// block of YAML.
func cutBlock(doc []byte, head string) ([]byte, error) {
	if bytes.Count(doc, []byte("\n"+head)) != 1 {
		return nil, fmt.Errorf("openapi: openapi.yaml has no single %q line", strings.TrimSpace(head))
	}
	start := bytes.Index(doc, []byte("\n"+head)) + 1
	indent := len(head) - len(strings.TrimLeft(head, " "))
	end := start + len(head)
	for end < len(doc) {
		line := doc[end:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		text := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(text)) > 0 && len(text)-len(bytes.TrimLeft(text, " ")) <= indent {
			break
		}
		end += len(line)
	}
	return append(doc[:start:start], doc[end:]...), nil
}
