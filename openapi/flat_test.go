package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
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
	if n := strings.Count(string(flat), `"servers"`); n != 1 {
		t.Errorf("the flat contract has %d servers entries, want 1 (at the top)", n)
	}
	var top struct {
		Servers []struct{ URL string } `json:"servers"`
	}
	if err := json.Unmarshal(flat, &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Servers) != 1 || top.Servers[0].URL != "https://erpgate.example.com" {
		t.Errorf("servers %+v, want the one server https://erpgate.example.com", top.Servers)
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
