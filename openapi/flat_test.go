package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

func TestFlat(t *testing.T) {
	doc, err := JSON("https://erpgate.example.com")
	if err != nil {
		t.Fatal(err)
	}
	flat, err := Flat(doc)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(flat, []byte(`"$ref"`)) {
		t.Error("the flat contract still has a $ref")
	}
	type servers []struct{ URL string }
	var top struct {
		Servers servers `json:"servers"`
		Paths   map[string]struct {
			Servers servers `json:"servers"`
			Post    struct {
				Servers servers `json:"servers"`
			} `json:"post"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(flat, &top); err != nil {
		t.Fatal(err)
	}
	one := func(s servers) bool { return len(s) == 1 && s[0].URL == "https://erpgate.example.com" }
	if !one(top.Servers) {
		t.Errorf("servers %+v, want the one server https://erpgate.example.com", top.Servers)
	}
	for path, item := range top.Paths {
		if !one(item.Servers) || item.Post.Servers != nil {
			t.Errorf("%s: servers %+v, operation servers %+v; want the document's, on the path only", path, item.Servers, item.Post.Servers)
		}
	}
	loaded, err := openapi3.NewLoader().LoadFromData(flat)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		t.Fatalf("the flat contract is not valid OpenAPI: %v", err)
	}
	orig, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(loaded.Paths.Map()), len(orig.Paths.Map()); got != want {
		t.Errorf("%d paths, want %d", got, want)
	}
}

func TestFlatRefusesCycles(t *testing.T) {
	doc := []byte(`{"openapi":"3.0.3","components":{"schemas":{"A":{"properties":{"a":{"$ref":"#/components/schemas/A"}}}}}}`)
	if _, err := Flat(doc); err == nil {
		t.Error("a schema that refers to itself was flattened")
	}
	if _, err := Flat([]byte(`{"x":{"$ref":"#/nowhere"}}`)); err == nil {
		t.Error("a dangling $ref was flattened")
	}
}
