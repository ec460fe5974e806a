// Package sapspec holds OData requests and answers to SAP's published
// $metadata (EDMX, OData v2) of the services the SAP client speaks:
// API_SUPPLIERINVOICE_PROCESS_SRV, API_PURCHASEORDER_PROCESS_SRV,
// API_MATERIAL_DOCUMENT_SRV and API_BUSINESS_PARTNER.
//
// Load reads the *.edmx files of a directory into a Spec: per service its
// entity types (properties with their Edm types and facets, key
// properties, navigation properties and their targets), complex types,
// associations, entity sets, association sets and function imports.
// Spec.Check lists every way one HTTP request departs from the metadata,
// Spec.CheckDecoded every property a decoder reads that the type does not
// declare, and Spec.CheckEntity every property of a JSON answer that is
// not declared or not in its Edm type's JSON form. Transport runs Check on
// every request an http.Client sends; CheckedTransport and CheckedHTTPClient
// turn what it finds into test failures.
//
// SAP's files are not part of the repository: they are read from
// shared/sapspecs beside it (Dir), and a test that needs them fails when
// they are missing.
//
// Two files may describe one service: SAP's on-premise variant
// (OP_API_*.edmx) and the cloud one (API_*.edmx). The service is the
// Namespace of the schema that holds the entity container, so both read as
// the same service; Load keeps the file whose name does not start with
// OP_ and drops the other (Service.Shadowed names it). The on-premise
// variants of these services declare a subset of the same properties, so
// nothing that holds against the kept file is lost.
package sapspec

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Services are the OData services the SAP client calls; LoadShared fails
// when SAP's metadata of one of them is missing.
var Services = []string{
	"API_SUPPLIERINVOICE_PROCESS_SRV",
	"API_PURCHASEORDER_PROCESS_SRV",
	"API_MATERIAL_DOCUMENT_SRV",
	"API_BUSINESS_PARTNER",
}

// ServicePrefix is the path below which SAP's gateway publishes OData v2
// services: /sap/opu/odata/sap/<SERVICE>/...
const ServicePrefix = "/sap/opu/odata/sap/"

// Spec is the metadata of a set of OData services, keyed by service name.
type Spec struct {
	Services map[string]*Service
}

// Service is one service's $metadata.
type Service struct {
	Name      string // the schema namespace, which is the service's name in the URL
	File      string // the EDMX file it was read from
	Shadowed  []string
	Container string

	EntityTypes     map[string]*EntityType // by unqualified name
	ComplexTypes    map[string]*ComplexType
	Associations    map[string]*Association
	EntitySets      map[string]*EntitySet
	AssociationSets map[string]*AssociationSet
	FunctionImports map[string]*FunctionImport
}

// Property is a property of an entity or complex type.
type Property struct {
	Name      string
	Type      string // Edm.String, Edm.Decimal, ... or a qualified complex type
	Nullable  bool   // CSDL's default: true unless Nullable="false"
	MaxLength int    // 0: none
	Precision string
	Scale     string

	// SAP annotations, true unless the attribute says "false".
	Creatable  bool
	Updatable  bool
	Filterable bool
	Sortable   bool
}

// EntityType is an entity type with its key.
type EntityType struct {
	Service     string
	Name        string
	Key         []string
	Properties  map[string]*Property
	Order       []string // property names in document order
	Navigations map[string]*NavigationProperty
}

// QualifiedName is Namespace.Name.
func (t *EntityType) QualifiedName() string { return t.Service + "." + t.Name }

// ComplexType is a complex type, such as a function import's result.
type ComplexType struct {
	Service    string
	Name       string
	Properties map[string]*Property
	Order      []string
}

// QualifiedName is Namespace.Name.
func (t *ComplexType) QualifiedName() string { return t.Service + "." + t.Name }

// NavigationProperty leads from an entity type to the entities of Target.
type NavigationProperty struct {
	Name         string
	Relationship string // qualified association name
	FromRole     string
	ToRole       string
	Target       string // unqualified entity type name of the ToRole end
	Many         bool   // the ToRole end's multiplicity is *
}

// Association is an association with its two ends.
type Association struct {
	Name string
	Ends []AssociationEnd
}

// AssociationEnd is one end of an association.
type AssociationEnd struct {
	Role         string
	Type         string // unqualified entity type name
	Multiplicity string // 1, 0..1 or *
}

// AssociationSet binds an association to entity sets.
type AssociationSet struct {
	Name        string
	Association string // unqualified association name
	Ends        []AssociationSetEnd
	Creatable   bool
	Updatable   bool
	Deletable   bool
}

// AssociationSetEnd is one end of an association set.
type AssociationSetEnd struct {
	Role      string
	EntitySet string
}

// EntitySet is an entity set with SAP's capability annotations.
type EntitySet struct {
	Name       string
	EntityType string // unqualified
	Creatable  bool
	Updatable  bool
	Deletable  bool
}

// FunctionImport is a function import.
type FunctionImport struct {
	Name       string
	HTTPMethod string // m:HttpMethod; GET when the attribute is absent
	ReturnType string // as written, e.g. NS.Type or Collection(NS.Type); "" for none
	EntitySet  string
	Parameters []*Parameter
}

// Parameter is a function import parameter. SAP's gateway marks the
// optional ones Nullable="true" and writes no Nullable attribute on the
// mandatory ones, so a parameter is Nullable only when the attribute says
// "true" (SAP's API Hub OpenAPI files mark exactly those required).
type Parameter struct {
	Name      string
	Type      string
	Nullable  bool
	Mode      string
	MaxLength int
}

// Parameter returns the named parameter, or nil.
func (f *FunctionImport) Parameter(name string) *Parameter {
	for _, p := range f.Parameters {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Load reads every *.edmx file in dir. Files that describe the same
// service are resolved as the package documentation says.
func Load(dir string) (*Spec, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sapspec: SAP's published $metadata files: %w", err)
	}
	spec := &Spec{Services: map[string]*Service{}}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".edmx") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	// Non-OP_ files first, so that they win.
	sort.SliceStable(names, func(i, j int) bool { return !isOP(names[i]) && isOP(names[j]) })
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("sapspec: %w", err)
		}
		svc, err := Parse(name, data)
		if err != nil {
			return nil, err
		}
		if have, ok := spec.Services[svc.Name]; ok {
			have.Shadowed = append(have.Shadowed, name)
			continue
		}
		spec.Services[svc.Name] = svc
	}
	if len(spec.Services) == 0 {
		return nil, fmt.Errorf("sapspec: no *.edmx file in %s", dir)
	}
	return spec, nil
}

func isOP(name string) bool { return strings.HasPrefix(strings.ToUpper(name), "OP_") }

// Dir returns SAP's published specification directory: shared/sapspecs
// beside the repository, whose root is the first directory upwards from
// the working directory that holds go.mod. It fails when there is no such
// directory.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("sapspec: %w", err)
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(filepath.Dir(d), "shared", "sapspecs")
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return "", fmt.Errorf("sapspec: SAP's published $metadata and OpenAPI files are missing: "+
					"no directory %s (shared/sapspecs beside the repository %s)", dir, d)
			}
			return dir, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("sapspec: no go.mod in %s or above it, so the repository and shared/sapspecs beside it cannot be found", wd)
		}
		d = up
	}
}

// LoadShared loads Dir and checks that every one of Services is there.
func LoadShared() (*Spec, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	spec, err := Load(dir)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range Services {
		if spec.Services[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sapspec: SAP's $metadata of %s is missing in %s", strings.Join(missing, ", "), dir)
	}
	return spec, nil
}

var shared = sync.OnceValues(LoadShared)

// Default returns the Spec of LoadShared, read once per process.
func Default() (*Spec, error) { return shared() }

// Check runs Spec.Check with Default.
func Check(req *http.Request, body []byte) error {
	spec, err := Default()
	if err != nil {
		return err
	}
	return spec.Check(req, body)
}

// CheckDecoded runs Spec.CheckDecoded with Default.
func CheckDecoded(typeName string, jsonNames []string) error {
	spec, err := Default()
	if err != nil {
		return err
	}
	return spec.CheckDecoded(typeName, jsonNames)
}

// structured is what entity and complex types have in common.
type structured struct {
	qualified  string
	properties map[string]*Property
	navs       map[string]*NavigationProperty // nil for a complex type
	svc        *Service
}

// lookup finds an entity or complex type by name: qualified
// (Namespace.Name), or unqualified when only one service has it. An entity
// set's name stands for its entity type.
func (s *Spec) lookup(name string) (structured, error) {
	if ns, local, ok := strings.Cut(name, "."); ok {
		svc := s.Services[ns]
		if svc == nil {
			return structured{}, fmt.Errorf("no service %s for type %s", ns, name)
		}
		if st, ok := svc.structured(local); ok {
			return st, nil
		}
		return structured{}, fmt.Errorf("service %s declares no entity or complex type %s", ns, local)
	}
	var found []structured
	for _, svcName := range s.serviceNames() {
		svc := s.Services[svcName]
		if st, ok := svc.structured(name); ok {
			found = append(found, st)
		} else if set := svc.EntitySets[name]; set != nil {
			if st, ok := svc.structured(set.EntityType); ok {
				found = append(found, st)
			}
		}
	}
	switch len(found) {
	case 0:
		return structured{}, fmt.Errorf("no service declares an entity type, complex type or entity set %s", name)
	case 1:
		return found[0], nil
	}
	var qs []string
	for _, f := range found {
		qs = append(qs, f.qualified)
	}
	return structured{}, fmt.Errorf("%s is ambiguous: %s", name, strings.Join(qs, ", "))
}

func (svc *Service) structured(name string) (structured, bool) {
	if et := svc.EntityTypes[name]; et != nil {
		return structured{qualified: et.QualifiedName(), properties: et.Properties, navs: et.Navigations, svc: svc}, true
	}
	if ct := svc.ComplexTypes[name]; ct != nil {
		return structured{qualified: ct.QualifiedName(), properties: ct.Properties, svc: svc}, true
	}
	return structured{}, false
}

// Property returns the property of an entity or complex type (named as
// CheckDecoded takes it), or nil.
func (s *Spec) Property(typeName, property string) *Property {
	st, err := s.lookup(typeName)
	if err != nil {
		return nil
	}
	return st.properties[property]
}

func (s *Spec) serviceNames() []string {
	names := make([]string, 0, len(s.Services))
	for n := range s.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// MismatchError lists the mismatches of one check, each a complete
// sentence that names the request or type.
type MismatchError struct {
	Mismatches []string
}

func (e *MismatchError) Error() string { return strings.Join(e.Mismatches, "\n") }

// Mismatches returns the list of a *MismatchError, or the error's text as
// the only entry of any other non-nil error.
func Mismatches(err error) []string {
	if err == nil {
		return nil
	}
	var me *MismatchError
	if errors.As(err, &me) {
		return me.Mismatches
	}
	return []string{err.Error()}
}

func mismatchError(list []string) error {
	if len(list) == 0 {
		return nil
	}
	return &MismatchError{Mismatches: list}
}
