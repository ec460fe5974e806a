package sim

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// TestMaterialDocumentAndPartnerShapes holds the entity sets of
// API_MATERIAL_DOCUMENT_SRV and API_BUSINESS_PARTNER to SAP's published
// $metadata of every file for the service: the keys, every property the
// simulator sends (declared, of a matching Edm type and wire form, within
// MaxLength, upper case where SAP says sap:display-format="UpperCase") and
// every navigation (declared on the type, to the target's type, a single
// entity exactly when SAP's multiplicity is 1 or 0..1).
func TestMaterialDocumentAndPartnerShapes(t *testing.T) {
	type property struct {
		Name      string `xml:"Name,attr"`
		Type      string `xml:"Type,attr"`
		MaxLength string `xml:"MaxLength,attr"`
		Display   string `xml:"http://www.sap.com/Protocols/SAPData display-format,attr"`
	}
	type navigation struct {
		Name         string `xml:"Name,attr"`
		Relationship string `xml:"Relationship,attr"`
		ToRole       string `xml:"ToRole,attr"`
	}
	type entityType struct {
		Name string `xml:"Name,attr"`
		Keys []struct {
			Name string `xml:"Name,attr"`
		} `xml:"Key>PropertyRef"`
		Properties  []property   `xml:"Property"`
		Navigations []navigation `xml:"NavigationProperty"`
	}
	type associationEnd struct {
		Type         string `xml:"Type,attr"`
		Multiplicity string `xml:"Multiplicity,attr"`
		Role         string `xml:"Role,attr"`
	}
	type association struct {
		Name string           `xml:"Name,attr"`
		Ends []associationEnd `xml:"End"`
	}
	type document struct {
		Schemas []struct {
			Namespace    string        `xml:"Namespace,attr"`
			EntityTypes  []entityType  `xml:"EntityType"`
			Associations []association `xml:"Association"`
		} `xml:"DataServices>Schema"`
	}
	type spec struct {
		file         string
		types        map[string]entityType
		associations map[string]association
	}

	entries, err := os.ReadDir(sapSpecsDir)
	if err != nil {
		t.Fatalf("SAP's published $metadata files are missing: %v", err)
	}
	specs := map[string][]spec{}
	for _, e := range entries {
		if e.IsDir() || !strings.EqualFold(filepath.Ext(e.Name()), ".edmx") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(sapSpecsDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var doc document
		if err := xml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		sp := spec{file: e.Name(), types: map[string]entityType{}, associations: map[string]association{}}
		for _, s := range doc.Schemas {
			for _, et := range s.EntityTypes {
				sp.types[s.Namespace+"."+et.Name] = et
			}
			for _, a := range s.Associations {
				sp.associations[s.Namespace+"."+a.Name] = a
			}
		}
		specs[specKey(e.Name())] = append(specs[specKey(e.Name())], sp)
	}

	var (
		dateTime       = regexp.MustCompile(`^/Date\(-?\d+\)/$`)
		dateTimeOffset = regexp.MustCompile(`^/Date\(-?\d+[+-]\d{4}\)/$`)
	)
	// fits reports what is wrong with a value for a declared property, or "".
	fits := func(p property, v any) string {
		switch v := v.(type) {
		case bool:
			if p.Type != "Edm.Boolean" {
				return "a boolean, declared " + p.Type
			}
		case string:
			switch p.Type {
			case "Edm.String":
				if max, err := strconv.Atoi(p.MaxLength); err == nil && utf8.RuneCountInString(v) > max {
					return "longer than MaxLength " + p.MaxLength
				}
				if p.Display == "UpperCase" && v != strings.ToUpper(v) {
					return "not in upper case, which SAP keeps it in"
				}
			case "Edm.DateTime":
				if !dateTime.MatchString(v) {
					return "not /Date(ms)/"
				}
			case "Edm.DateTimeOffset":
				if !dateTimeOffset.MatchString(v) {
					return "not /Date(ms+0000)/"
				}
			case "Edm.Decimal":
				if _, err := decimal.NewFromString(v); err != nil {
					return "not a decimal string"
				}
			default:
				return "a string, declared " + p.Type
			}
		default:
			return fmt.Sprintf("of Go type %T", v)
		}
		return ""
	}

	s := New(Options{})
	for _, svcName := range []string{"API_MATERIAL_DOCUMENT_SRV", "API_BUSINESS_PARTNER"} {
		svc := s.services[svcName]
		published := specs[specKey(svcName)]
		if svc == nil || len(published) == 0 {
			t.Fatalf("%s: served %v, published in %d files", svcName, svc != nil, len(published))
		}
		for _, setName := range svc.setOrder {
			set := svc.sets[setName]
			typeName := svcName + "." + set.typ
			for _, sp := range published {
				et, ok := sp.types[typeName]
				if !ok {
					t.Errorf("%s: %s declares no entity type %s", setName, sp.file, typeName)
					continue
				}
				var keys []string
				for _, k := range et.Keys {
					keys = append(keys, k.Name)
				}
				if !slices.Equal(keys, set.keys) {
					t.Errorf("%s: keys %v, %s declares %v", setName, set.keys, sp.file, keys)
				}
				props := map[string]property{}
				for _, p := range et.Properties {
					props[p.Name] = p
				}
				for _, row := range append([]obj{set.template}, set.rows(s.st)...) {
					for _, f := range row {
						p, ok := props[f.name]
						if !ok {
							t.Errorf("%s.%s: %s declares no such property of %s", setName, f.name, sp.file, typeName)
							continue
						}
						if why := fits(p, f.value); why != "" {
							t.Errorf("%s.%s = %#v: %s (%s)", setName, f.name, f.value, why, sp.file)
						}
					}
				}
				for _, n := range set.navs {
					i := slices.IndexFunc(et.Navigations, func(d navigation) bool { return d.Name == n.name })
					if i < 0 {
						t.Errorf("%s/%s: %s declares no such navigation of %s", setName, n.name, sp.file, typeName)
						continue
					}
					d := et.Navigations[i]
					a := sp.associations[d.Relationship]
					j := slices.IndexFunc(a.Ends, func(e associationEnd) bool { return e.Role == d.ToRole })
					if j < 0 {
						t.Errorf("%s/%s: %s has no end %s in association %s", setName, n.name, sp.file, d.ToRole, d.Relationship)
						continue
					}
					end := a.Ends[j]
					target := svc.sets[n.target]
					if target == nil || end.Type != svcName+"."+target.typ {
						t.Errorf("%s/%s: goes to %s, %s declares %s", setName, n.name, n.target, sp.file, end.Type)
					}
					if single := end.Multiplicity == "1" || end.Multiplicity == "0..1"; single != n.single {
						t.Errorf("%s/%s: single %v, %s declares multiplicity %s", setName, n.name, n.single, sp.file, end.Multiplicity)
					}
					for _, j := range n.join {
						if _, ok := set.template.get(j); !ok {
							t.Errorf("%s/%s: join property %s is not on %s", setName, n.name, j, setName)
						}
						if target != nil {
							if _, ok := target.template.get(j); !ok {
								t.Errorf("%s/%s: join property %s is not on %s", setName, n.name, j, n.target)
							}
						}
					}
				}
			}
		}
	}
}
