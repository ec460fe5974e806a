package sim

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// functionEDMX is the part of a $metadata document that declares function
// imports and complex types. Names match in any XML namespace.
type functionEDMX struct {
	Schemas []struct {
		Namespace    string `xml:"Namespace,attr"`
		ComplexTypes []struct {
			Name       string `xml:"Name,attr"`
			Properties []struct {
				Name     string `xml:"Name,attr"`
				Type     string `xml:"Type,attr"`
				Nullable string `xml:"Nullable,attr"`
			} `xml:"Property"`
		} `xml:"ComplexType"`
		Functions []struct {
			Name       string `xml:"Name,attr"`
			ReturnType string `xml:"ReturnType,attr"`
			HTTPMethod string `xml:"HttpMethod,attr"`
			Params     []struct {
				Name      string `xml:"Name,attr"`
				Type      string `xml:"Type,attr"`
				Mode      string `xml:"Mode,attr"`
				MaxLength string `xml:"MaxLength,attr"`
			} `xml:"Parameter"`
		} `xml:"EntityContainer>FunctionImport"`
	} `xml:"DataServices>Schema"`
}

// declaredFunction is one function import in a comparable form: its
// method, return type, parameters ("name type mode maxlength", sorted) and
// the properties of its return type ("name type nullable", sorted).
type declaredFunction struct {
	method, returnType string
	params, result     []string
}

func (d declaredFunction) String() string {
	return d.method + " returns " + d.returnType + " {" + strings.Join(d.result, "; ") + "} (" + strings.Join(d.params, "; ") + ")"
}

func parseFunctions(t *testing.T, file string, data []byte) map[string]declaredFunction {
	t.Helper()
	var doc functionEDMX
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := map[string]declaredFunction{}
	for _, s := range doc.Schemas {
		for _, fn := range s.Functions {
			d := declaredFunction{method: strings.ToUpper(fn.HTTPMethod), returnType: fn.ReturnType}
			for _, p := range fn.Params {
				mode := p.Mode
				if mode == "" {
					mode = "In"
				}
				d.params = append(d.params, strings.Join([]string{p.Name, p.Type, mode, p.MaxLength}, " "))
			}
			slices.Sort(d.params)
			name, ok := strings.CutPrefix(fn.ReturnType, s.Namespace+".")
			if !ok {
				t.Errorf("%s: function import %s returns %s, outside the schema %s", file, fn.Name, fn.ReturnType, s.Namespace)
			}
			for _, ct := range s.ComplexTypes {
				if ct.Name != name {
					continue
				}
				for _, p := range ct.Properties {
					nullable := p.Nullable
					if nullable == "" {
						nullable = "true"
					}
					d.result = append(d.result, strings.Join([]string{p.Name, p.Type, "nullable=" + nullable}, " "))
				}
			}
			slices.Sort(d.result)
			out[fn.Name] = d
		}
	}
	return out
}

// TestFunctionImportsAsSAPDeclares holds every function import the
// simulator serves to SAP's published $metadata of its service, in every
// published file that declares it: the HTTP method, each parameter with
// its type, mode and MaxLength, the return type and that type's
// properties. The simulator's own $metadata must say the same.
func TestFunctionImportsAsSAPDeclares(t *testing.T) {
	entries, err := os.ReadDir(sapSpecsDir)
	if err != nil {
		t.Fatalf("SAP's published $metadata files are missing: %v", err)
	}
	s := New(Options{})
	served := 0
	for _, svc := range s.services {
		if len(svc.functions) == 0 {
			continue
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, servicePrefix+svc.name+"/$metadata", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s/$metadata: got %d", svc.name, rec.Code)
		}
		own := parseFunctions(t, svc.name+"/$metadata", rec.Body.Bytes())

		var published []string
		specs := map[string]map[string]declaredFunction{}
		for _, e := range entries {
			if e.IsDir() || !strings.EqualFold(filepath.Ext(e.Name()), ".edmx") || specKey(e.Name()) != specKey(svc.name) {
				continue
			}
			data, err := os.ReadFile(filepath.Join(sapSpecsDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			published = append(published, e.Name())
			specs[e.Name()] = parseFunctions(t, e.Name(), data)
		}
		if len(published) == 0 {
			t.Errorf("%s: no published $metadata in %s", svc.name, sapSpecsDir)
			continue
		}
		for name := range svc.functions {
			served++
			if _, ok := functionDecls[svc.name][name]; !ok {
				t.Errorf("%s: function import %s has no declaration to check its calls with", svc.name, name)
			}
			got, ok := own[name]
			if !ok {
				t.Errorf("%s: function import %s is served but not in the simulator's $metadata", svc.name, name)
				continue
			}
			declaredBy := 0
			for _, file := range published {
				want, ok := specs[file][name]
				if !ok {
					continue
				}
				declaredBy++
				if got.String() != want.String() {
					t.Errorf("%s: function import %s:\nsimulator %s\nSAP's %s %s", svc.name, name, got, file, want)
				}
			}
			if declaredBy == 0 {
				t.Errorf("%s: function import %s is in none of SAP's %s", svc.name, name, strings.Join(published, ", "))
			}
		}
	}
	if served == 0 {
		t.Fatal("the simulator serves no function import")
	}
}
