package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/erpgate/erpgate/openapi"
)

// TestServeSaysWhatTheGatewayRequires: the served contract's security in
// each form follows what the gateway takes, every document still loads,
// and nothing else changes.
func TestServeSaysWhatTheGatewayRequires(t *testing.T) {
	const server = "https://erpgate.example.net"
	keys, err := openapi.Serve(server, openapi.AuthKeys)
	if err != nil {
		t.Fatal(err)
	}
	// With keys: the contract as written, byte for byte.
	for name, f := range map[string]func(string) ([]byte, error){"JSON": openapi.JSON, "YAMLFor": openapi.YAMLFor, "Swagger": openapi.Swagger} {
		want, err := f(server)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]byte{"JSON": keys.JSON, "YAMLFor": keys.YAML, "Swagger": keys.Swagger}[name]
		if !bytes.Equal(got, want) {
			t.Errorf("Serve with keys differs from %s", name)
		}
	}

	for _, tt := range []struct {
		name string
		auth openapi.Auth
		want string
	}{
		{"keys", openapi.AuthKeys, "security bearer_auth | api_key; schemes api_key bearer_auth"},
		{"bearer", openapi.AuthBearer, "security bearer_auth; schemes bearer_auth"},
		{"open", openapi.AuthOpen, "security {}; schemes "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := openapi.Serve(server, tt.auth)
			if err != nil {
				t.Fatal(err)
			}
			var docs []*openapi3.T
			for form, b := range map[string][]byte{"JSON": d.JSON, "YAML": d.YAML} {
				doc, err := openapi3.NewLoader().LoadFromData(b)
				if err == nil {
					err = doc.Validate(context.Background())
				}
				if err != nil {
					t.Fatalf("%s: %v", form, err)
				}
				if got := summary(doc.Security, keysOf(doc.Components.SecuritySchemes)); got != tt.want {
					t.Errorf("%s: %s, want %s", form, got, tt.want)
				}
				if len(doc.Servers) != 1 || doc.Servers[0].URL != server {
					t.Errorf("%s: servers %v", form, doc.Servers)
				}
				docs = append(docs, doc)
			}
			// Apart from the security, JSON and YAML say the same as written.
			written, err := openapi.Load()
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range docs {
				if doc.Paths.Len() != written.Paths.Len() || len(doc.Components.Schemas) != len(written.Components.Schemas) ||
					len(doc.Components.Responses) != len(written.Components.Responses) {
					t.Errorf("a served document lost paths or components")
				}
			}
			var doc2 openapi2.T
			if err := json.Unmarshal(d.Swagger, &doc2); err != nil || doc2.Swagger != "2.0" {
				t.Fatalf("Swagger: %v", err)
			}
			if got := summary(doc2.Security, keysOf(doc2.SecurityDefinitions)); got != tt.want {
				t.Errorf("Swagger: %s, want %s", got, tt.want)
			}
			if doc2.Host != "erpgate.example.net" || len(doc2.Paths) != written.Paths.Len() {
				t.Errorf("Swagger: host %q, %d paths", doc2.Host, len(doc2.Paths))
			}
		})
	}
}

// TestServeOpenYAMLKeepsTheRest: the open YAML is the agents' contract
// without the security schemes and with the empty requirement, nothing
// else; so is the people's with the bearer scheme alone.
func TestServeOpenYAMLKeepsTheRest(t *testing.T) {
	for _, c := range []struct {
		name  string
		serve func(string, openapi.Auth) (openapi.Documents, error)
		auth  openapi.Auth
		text  string
	}{
		{"agents open", openapi.Serve, openapi.AuthOpen, "\nsecurity:\n  - {}\n"},
		{"people bearer", openapi.ServePeople, openapi.AuthBearer, "\nsecurity:\n  - bearer_auth: []\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys, err := c.serve("", openapi.AuthKeys)
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.serve("", c.auth)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(d.YAML), c.text) {
				t.Errorf("the YAML does not say %q", c.text)
			}
			if c.auth == openapi.AuthOpen && strings.Contains(string(d.YAML), "securitySchemes") {
				t.Error("the open YAML declares security schemes")
			}
			// Apart from the security, the same document.
			var docs []string
			for _, b := range [][]byte{keys.YAML, d.YAML} {
				doc, err := openapi3.NewLoader().LoadFromData(b)
				if err != nil {
					t.Fatal(err)
				}
				doc.Security, doc.Components.SecuritySchemes = nil, nil
				j, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(j))
			}
			if docs[0] != docs[1] {
				t.Error("the YAML differs from the one with keys in more than its security")
			}
		})
	}
}

func keysOf[V any](m map[string]V) []string {
	var names []string
	for name := range m {
		names = append(names, name)
	}
	return names
}

// summary sums up a document's security: its requirements in order, each
// the names of its schemes ("{}" for the empty one), then the names of the
// schemes it declares.
func summary[R ~map[string][]string](reqs []R, schemes []string) string {
	var alts []string
	for _, r := range reqs {
		names := keysOf(r)
		slices.Sort(names)
		if len(names) == 0 {
			names = []string{"{}"}
		}
		alts = append(alts, strings.Join(names, " "))
	}
	slices.Sort(schemes)
	return "security " + strings.Join(alts, " | ") + "; schemes " + strings.Join(schemes, " ")
}
