// Package openapi holds the contracts of the gateway. openapi.yaml, the
// OpenAPI 3.0.3 document written by hand, is the one source of truth for
// every operation, request, response and error; from it the package derives
// two contracts, embedded into the binary and served as JSON and YAML:
//
//   - the agents' contract (Load, Serve): the tools, every operation
//     without x-erpgate-audience; what agents, OpenAPI-to-MCP bridges and
//     connector platforms import;
//   - the people's contract (LoadPeople, ServePeople): the operations
//     marked x-erpgate-audience: people (approvers, the AP team,
//     auditors), for the console and integrators.
//
// Each holds only its own paths, tags and components (README.md).
package openapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/getkin/kin-openapi/openapi3"
)

// YAML is openapi.yaml exactly as written, with its default server
// http://localhost:8080: the source of both contracts, which serves as
// neither.
//
//go:embed openapi.yaml
var YAML []byte

// Load returns the agents' contract: parsed, its references resolved and
// validated, examples included. Each call returns a new document that the
// caller may change.
func Load() (*openapi3.T, error) { return loadFor(Agents) }

// LoadPeople returns the people's contract as Load returns the agents'.
func LoadPeople() (*openapi3.T, error) { return loadFor(People) }

// LoadSource returns openapi.yaml as written, both contracts' operations
// in one document, as Load returns a contract: for checking every answer
// of the gateway against the one source.
func LoadSource() (*openapi3.T, error) { return parse(YAML) }

func loadFor(aud Audience) (*openapi3.T, error) {
	b, err := derived(aud)
	if err != nil {
		return nil, err
	}
	return parse(b)
}

// parse loads and validates an OpenAPI 3 document.
func parse(b []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: validate: %w", err)
	}
	return doc, nil
}

// JSON returns the agents' contract as JSON. When serverURL is not empty it
// becomes the one server of the document; it must be an absolute http or
// https URL.
func JSON(serverURL string) ([]byte, error) {
	b, err := YAMLFor(serverURL)
	if err != nil {
		return nil, err
	}
	return toJSON(b)
}

// YAMLFor returns the agents' contract as YAML. When serverURL is not empty
// it becomes the one server of the document; it must be an absolute http
// or https URL.
func YAMLFor(serverURL string) ([]byte, error) {
	return contract(Agents, serverURL, AuthKeys)
}

// toJSON is the JSON of a contract in YAML, validated on the way.
func toJSON(yamlDoc []byte) ([]byte, error) {
	doc, err := parse(yamlDoc)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode JSON: %w", err)
	}
	return b, nil
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

// Documents are a contract as the gateway serves it: the agents' at
// /openapi.json, /openapi.yaml and /swagger.json, the people's at
// /people/openapi.json and /people/openapi.yaml (no Swagger 2.0 copy).
type Documents struct {
	JSON, YAML, Swagger []byte
}

// Serve returns the agents' contract in the three forms the gateway serves,
// with serverURL as its server (as JSON, YAMLFor and Swagger take it) and
// the security of auth. With AuthKeys they are what JSON, YAMLFor and
// Swagger return.
func Serve(serverURL string, auth Auth) (Documents, error) {
	d, err := serve(Agents, serverURL, auth)
	if err != nil {
		return Documents{}, err
	}
	if d.Swagger, err = toSwagger(d.YAML); err != nil {
		return Documents{}, err
	}
	return d, nil
}

// ServePeople returns the people's contract as JSON and YAML, with
// serverURL as its server and the security of auth, as Serve does the
// agents'.
func ServePeople(serverURL string, auth Auth) (Documents, error) {
	return serve(People, serverURL, auth)
}

func serve(aud Audience, serverURL string, auth Auth) (Documents, error) {
	var d Documents
	var err error
	if d.YAML, err = contract(aud, serverURL, auth); err != nil {
		return Documents{}, err
	}
	if d.JSON, err = toJSON(d.YAML); err != nil {
		return Documents{}, err
	}
	return d, nil
}
