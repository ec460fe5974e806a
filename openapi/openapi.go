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
