package openapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/errmap"
)

const jsonType = "application/json"

// Swagger returns the agents' contract as a Swagger 2.0 JSON document, for
// connector platforms that import only 2.0 (Power Platform custom
// connectors, Copilot Studio, Salesforce External Services). When serverURL
// is not empty it gives host, basePath and schemes; it must be an absolute
// http or https URL.
//
// The 2.0 document differs from the contract where 2.0 cannot say the same:
//   - operationIds are PascalCase (get_invoice becomes GetInvoice), as Power
//     Platform requires; the 3.0 operationIds stay the tool names.
//   - error bodies are declared as application/json, since 2.0 has one
//     produces list per operation; the gateway still sends them as
//     application/problem+json, which JSON clients read the same.
//   - each error response is written into its operation, with the Error
//     schema, instead of a reference to a shared response, and named
//     examples are dropped (2.0 has one example per media type).
func Swagger(serverURL string) ([]byte, error) {
	b, err := YAMLFor(serverURL)
	if err != nil {
		return nil, err
	}
	return toSwagger(b)
}

// toSwagger converts a contract in YAML, with its server and security, to
// Swagger 2.0 JSON.
func toSwagger(yamlDoc []byte) ([]byte, error) {
	doc, err := parse(yamlDoc)
	if err != nil {
		return nil, err
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				// Without its $ref the converter writes the response out in
				// full, so each operation names the Error schema itself, also
				// for importers that do not follow response references.
				resp.Ref = ""
				problemAsJSON(resp.Value)
			}
		}
	}
	// Every error response is inlined above; shared copies would be unused.
	doc.Components.Responses = nil

	doc2, err := openapi2conv.FromV3(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: convert to Swagger 2.0: %w", err)
	}
	doc2.Produces = []string{jsonType}
	doc2.Consumes = []string{jsonType}
	if doc2.BasePath == "" {
		doc2.BasePath = "/"
	} else if len(doc2.BasePath) > 1 {
		doc2.BasePath = strings.TrimSuffix(doc2.BasePath, "/")
	}
	for path, item := range doc2.Paths {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				return nil, fmt.Errorf("openapi: %s %s has no operationId", method, path)
			}
			op.OperationID = pascalCase(op.OperationID)
			// The document-wide lists say the same.
			op.Consumes, op.Produces = nil, nil
		}
	}
	b, err := json.Marshal(doc2)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode Swagger 2.0: %w", err)
	}
	return b, nil
}

// problemAsJSON declares a problem+json body as application/json, the only
// body of a response the converter carries over.
func problemAsJSON(resp *openapi3.Response) {
	if resp == nil {
		return
	}
	if media := resp.Content.Get(errmap.ContentType); media != nil {
		resp.Content = openapi3.Content{jsonType: &openapi3.MediaType{Schema: media.Schema}}
	}
}

// pascalCase turns a snake_case operationId into the PascalCase form of the
// Swagger 2.0 document: get_invoice becomes GetInvoice.
func pascalCase(snake string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(snake, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}
