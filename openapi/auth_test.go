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

// TestServeOpenYAMLKeepsTheRest: the open YAML is the written one without
// the security schemes and with the empty requirement, nothing else.
func TestServeOpenYAMLKeepsTheRest(t *testing.T) {
	d, err := openapi.Serve("", openapi.AuthOpen)
	if err != nil {
		t.Fatal(err)
	}
	written := string(openapi.YAML)
	start := strings.Index(written, "\n  securitySchemes:\n")
	end := strings.Index(written, "\n  parameters:\n")
	if start < 0 || end < start {
		t.Fatal("openapi.yaml: no securitySchemes before parameters")
	}
	want := written[:start] + written[end:]
	want = strings.Replace(want, "\nsecurity:\n  - bearer_auth: []\n  - api_key: []\n", "\nsecurity:\n  - {}\n", 1)
	if string(d.YAML) != want {
		t.Error("the open YAML differs from the written one in more than its security")
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
