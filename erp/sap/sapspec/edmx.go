package sapspec

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// XML namespaces of OData v2 $metadata documents.
const (
	nsEdmx = "http://schemas.microsoft.com/ado/2007/06/edmx"
	nsM    = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
	nsSAP  = "http://www.sap.com/Protocols/SAPData"
)

type xEdmx struct {
	XMLName      xml.Name `xml:"Edmx"`
	DataServices struct {
		Schemas []xSchema `xml:"Schema"`
	} `xml:"DataServices"`
}

type xSchema struct {
	Namespace    string         `xml:"Namespace,attr"`
	EntityTypes  []xEntityType  `xml:"EntityType"`
	ComplexTypes []xComplexType `xml:"ComplexType"`
	Associations []xAssociation `xml:"Association"`
	Containers   []xContainer   `xml:"EntityContainer"`
}

type xProperty struct {
	Name       string `xml:"Name,attr"`
	Type       string `xml:"Type,attr"`
	Nullable   string `xml:"Nullable,attr"`
	MaxLength  string `xml:"MaxLength,attr"`
	Precision  string `xml:"Precision,attr"`
	Scale      string `xml:"Scale,attr"`
	Creatable  string `xml:"http://www.sap.com/Protocols/SAPData creatable,attr"`
	Updatable  string `xml:"http://www.sap.com/Protocols/SAPData updatable,attr"`
	Filterable string `xml:"http://www.sap.com/Protocols/SAPData filterable,attr"`
	Sortable   string `xml:"http://www.sap.com/Protocols/SAPData sortable,attr"`
}

type xEntityType struct {
	Name string `xml:"Name,attr"`
	Key  struct {
		Refs []struct {
			Name string `xml:"Name,attr"`
		} `xml:"PropertyRef"`
	} `xml:"Key"`
	Properties  []xProperty `xml:"Property"`
	Navigations []struct {
		Name         string `xml:"Name,attr"`
		Relationship string `xml:"Relationship,attr"`
		FromRole     string `xml:"FromRole,attr"`
		ToRole       string `xml:"ToRole,attr"`
	} `xml:"NavigationProperty"`
}

type xComplexType struct {
	Name       string      `xml:"Name,attr"`
	Properties []xProperty `xml:"Property"`
}

type xAssociation struct {
	Name string `xml:"Name,attr"`
	Ends []struct {
		Role         string `xml:"Role,attr"`
		Type         string `xml:"Type,attr"`
		Multiplicity string `xml:"Multiplicity,attr"`
	} `xml:"End"`
}

type xContainer struct {
	Name       string `xml:"Name,attr"`
	EntitySets []struct {
		Name       string `xml:"Name,attr"`
		EntityType string `xml:"EntityType,attr"`
		Creatable  string `xml:"http://www.sap.com/Protocols/SAPData creatable,attr"`
		Updatable  string `xml:"http://www.sap.com/Protocols/SAPData updatable,attr"`
		Deletable  string `xml:"http://www.sap.com/Protocols/SAPData deletable,attr"`
	} `xml:"EntitySet"`
	AssociationSets []struct {
		Name        string `xml:"Name,attr"`
		Association string `xml:"Association,attr"`
		Creatable   string `xml:"http://www.sap.com/Protocols/SAPData creatable,attr"`
		Updatable   string `xml:"http://www.sap.com/Protocols/SAPData updatable,attr"`
		Deletable   string `xml:"http://www.sap.com/Protocols/SAPData deletable,attr"`
		Ends        []struct {
			Role      string `xml:"Role,attr"`
			EntitySet string `xml:"EntitySet,attr"`
		} `xml:"End"`
	} `xml:"AssociationSet"`
	FunctionImports []struct {
		Name       string `xml:"Name,attr"`
		ReturnType string `xml:"ReturnType,attr"`
		EntitySet  string `xml:"EntitySet,attr"`
		HTTPMethod string `xml:"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata HttpMethod,attr"`
		Parameters []struct {
			Name      string `xml:"Name,attr"`
			Type      string `xml:"Type,attr"`
			Mode      string `xml:"Mode,attr"`
			Nullable  string `xml:"Nullable,attr"`
			MaxLength string `xml:"MaxLength,attr"`
		} `xml:"Parameter"`
	} `xml:"FunctionImport"`
}

// Parse reads one $metadata document. file names it in errors and in
// Service.File. The service is the schema that holds the entity
// container; a document with no container, or with several schemas that
// hold one, is an error. Types of other schemas in the same document are
// not read.
func Parse(file string, data []byte) (*Service, error) {
	var doc xEdmx
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("sapspec: %s is not an EDMX document: %w", file, err)
	}
	if doc.XMLName.Space != nsEdmx {
		return nil, fmt.Errorf("sapspec: %s: root element is {%s}%s, want {%s}Edmx", file, doc.XMLName.Space, doc.XMLName.Local, nsEdmx)
	}
	var schema *xSchema
	for i := range doc.DataServices.Schemas {
		if len(doc.DataServices.Schemas[i].Containers) > 0 {
			if schema != nil {
				return nil, fmt.Errorf("sapspec: %s: more than one schema has an entity container", file)
			}
			schema = &doc.DataServices.Schemas[i]
		}
	}
	if schema == nil {
		return nil, fmt.Errorf("sapspec: %s declares no entity container: not OData v2 $metadata of a service", file)
	}
	if len(schema.Containers) != 1 {
		return nil, fmt.Errorf("sapspec: %s: schema %s has %d entity containers, want 1", file, schema.Namespace, len(schema.Containers))
	}
	ns := schema.Namespace
	svc := &Service{
		Name:            ns,
		File:            file,
		Container:       schema.Containers[0].Name,
		EntityTypes:     map[string]*EntityType{},
		ComplexTypes:    map[string]*ComplexType{},
		Associations:    map[string]*Association{},
		EntitySets:      map[string]*EntitySet{},
		AssociationSets: map[string]*AssociationSet{},
		FunctionImports: map[string]*FunctionImport{},
	}
	local := func(qualified string) string { return strings.TrimPrefix(qualified, ns+".") }

	for _, xa := range schema.Associations {
		a := &Association{Name: xa.Name}
		for _, e := range xa.Ends {
			a.Ends = append(a.Ends, AssociationEnd{Role: e.Role, Type: local(e.Type), Multiplicity: e.Multiplicity})
		}
		svc.Associations[a.Name] = a
	}
	for _, xt := range schema.ComplexTypes {
		ct := &ComplexType{Service: ns, Name: xt.Name, Properties: map[string]*Property{}}
		for _, xp := range xt.Properties {
			p, err := property(file, xt.Name, xp)
			if err != nil {
				return nil, err
			}
			ct.Properties[p.Name] = p
			ct.Order = append(ct.Order, p.Name)
		}
		svc.ComplexTypes[ct.Name] = ct
	}
	for _, xt := range schema.EntityTypes {
		et := &EntityType{Service: ns, Name: xt.Name, Properties: map[string]*Property{}, Navigations: map[string]*NavigationProperty{}}
		for _, xp := range xt.Properties {
			p, err := property(file, xt.Name, xp)
			if err != nil {
				return nil, err
			}
			et.Properties[p.Name] = p
			et.Order = append(et.Order, p.Name)
		}
		for _, r := range xt.Key.Refs {
			if et.Properties[r.Name] == nil {
				return nil, fmt.Errorf("sapspec: %s: key property %s of %s is not a property", file, r.Name, xt.Name)
			}
			et.Key = append(et.Key, r.Name)
		}
		if len(et.Key) == 0 {
			return nil, fmt.Errorf("sapspec: %s: entity type %s has no key", file, xt.Name)
		}
		for _, xn := range xt.Navigations {
			a := svc.Associations[local(xn.Relationship)]
			if a == nil {
				return nil, fmt.Errorf("sapspec: %s: navigation %s.%s names association %s, which is not declared", file, xt.Name, xn.Name, xn.Relationship)
			}
			n := &NavigationProperty{Name: xn.Name, Relationship: xn.Relationship, FromRole: xn.FromRole, ToRole: xn.ToRole}
			for _, e := range a.Ends {
				if e.Role == xn.ToRole {
					n.Target, n.Many = e.Type, e.Multiplicity == "*"
				}
			}
			if n.Target == "" {
				return nil, fmt.Errorf("sapspec: %s: navigation %s.%s: association %s has no end %s", file, xt.Name, xn.Name, a.Name, xn.ToRole)
			}
			et.Navigations[n.Name] = n
		}
		svc.EntityTypes[et.Name] = et
	}
	for _, et := range svc.EntityTypes {
		for _, n := range et.Navigations {
			if svc.EntityTypes[n.Target] == nil {
				return nil, fmt.Errorf("sapspec: %s: navigation %s.%s leads to %s, which is not an entity type of %s", file, et.Name, n.Name, n.Target, ns)
			}
		}
	}

	c := schema.Containers[0]
	for _, xs := range c.EntitySets {
		set := &EntitySet{Name: xs.Name, EntityType: local(xs.EntityType),
			Creatable: notFalse(xs.Creatable), Updatable: notFalse(xs.Updatable), Deletable: notFalse(xs.Deletable)}
		if svc.EntityTypes[set.EntityType] == nil {
			return nil, fmt.Errorf("sapspec: %s: entity set %s has entity type %s, which is not declared", file, xs.Name, xs.EntityType)
		}
		svc.EntitySets[set.Name] = set
	}
	for _, xs := range c.AssociationSets {
		as := &AssociationSet{Name: xs.Name, Association: local(xs.Association),
			Creatable: notFalse(xs.Creatable), Updatable: notFalse(xs.Updatable), Deletable: notFalse(xs.Deletable)}
		for _, e := range xs.Ends {
			as.Ends = append(as.Ends, AssociationSetEnd{Role: e.Role, EntitySet: e.EntitySet})
		}
		svc.AssociationSets[as.Name] = as
	}
	for _, xf := range c.FunctionImports {
		f := &FunctionImport{Name: xf.Name, ReturnType: xf.ReturnType, EntitySet: xf.EntitySet, HTTPMethod: strings.ToUpper(xf.HTTPMethod)}
		if f.HTTPMethod == "" {
			f.HTTPMethod = "GET"
		}
		for _, xp := range xf.Parameters {
			ml, err := maxLength(xp.MaxLength)
			if err != nil {
				return nil, fmt.Errorf("sapspec: %s: parameter %s of %s: %w", file, xp.Name, xf.Name, err)
			}
			f.Parameters = append(f.Parameters, &Parameter{Name: xp.Name, Type: xp.Type, Mode: xp.Mode,
				Nullable: strings.EqualFold(xp.Nullable, "true"), MaxLength: ml})
		}
		svc.FunctionImports[f.Name] = f
	}
	if len(svc.EntitySets) == 0 && len(svc.FunctionImports) == 0 {
		return nil, fmt.Errorf("sapspec: %s declares no entity set and no function import", file)
	}
	return svc, nil
}

func property(file, typ string, xp xProperty) (*Property, error) {
	ml, err := maxLength(xp.MaxLength)
	if err != nil {
		return nil, fmt.Errorf("sapspec: %s: property %s of %s: %w", file, xp.Name, typ, err)
	}
	if xp.Name == "" || xp.Type == "" {
		return nil, fmt.Errorf("sapspec: %s: a property of %s has no name or no type", file, typ)
	}
	return &Property{
		Name: xp.Name, Type: xp.Type, Nullable: !strings.EqualFold(xp.Nullable, "false"),
		MaxLength: ml, Precision: xp.Precision, Scale: xp.Scale,
		Creatable: notFalse(xp.Creatable), Updatable: notFalse(xp.Updatable),
		Filterable: notFalse(xp.Filterable), Sortable: notFalse(xp.Sortable),
	}, nil
}

func maxLength(s string) (int, error) {
	if s == "" || strings.EqualFold(s, "Max") {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("MaxLength %q is not a length", s)
	}
	return n, nil
}

// notFalse reads an SAP capability annotation, which defaults to true.
func notFalse(s string) bool { return !strings.EqualFold(s, "false") }
