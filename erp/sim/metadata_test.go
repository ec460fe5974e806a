package sim

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/erpgate/erpgate/erp/sap/sapspec"
)

// sapSpecsDir holds SAP's published $metadata documents (*.edmx), relative
// to this package's directory: the directory shared/sapspecs beside the
// repository.
const sapSpecsDir = "../../../shared/sapspecs"

// edmx is the part of an OData v2 $metadata document the test compares.
// Element and attribute names match in any XML namespace.
type edmx struct {
	XMLName xml.Name `xml:"http://schemas.microsoft.com/ado/2007/06/edmx Edmx"`
	Schemas []struct {
		Namespace  string `xml:"Namespace,attr"`
		Containers []struct {
			Name string `xml:"Name,attr"`
			Sets []struct {
				Name       string `xml:"Name,attr"`
				EntityType string `xml:"EntityType,attr"`
			} `xml:"EntitySet"`
			Functions []struct {
				Name       string `xml:"Name,attr"`
				HTTPMethod string `xml:"HttpMethod,attr"`
			} `xml:"FunctionImport"`
		} `xml:"EntityContainer"`
	} `xml:"DataServices>Schema"`
}

// edmxContent is what one $metadata document declares.
type edmxContent struct {
	file       string
	namespaces []string
	containers []string
	sets       map[string]string // entity set -> entity type
	functions  map[string]string // function import -> HTTP method
}

func parseEDMX(file string, data []byte) (edmxContent, error) {
	var doc edmx
	if err := xml.Unmarshal(data, &doc); err != nil {
		return edmxContent{}, err
	}
	c := edmxContent{file: file, sets: map[string]string{}, functions: map[string]string{}}
	for _, s := range doc.Schemas {
		c.namespaces = append(c.namespaces, s.Namespace)
		for _, ec := range s.Containers {
			c.containers = append(c.containers, ec.Name)
			for _, set := range ec.Sets {
				c.sets[set.Name] = set.EntityType
			}
			for _, fn := range ec.Functions {
				c.functions[fn.Name] = fn.HTTPMethod
			}
		}
	}
	return c, nil
}

// specKey is the service name an EDMX file is for: its name without
// .edmx, without the OP_ prefix of SAP's on-premise variants and without a
// trailing _SRV, so OP_API_BUSINESS_PARTNER_SRV.edmx is API_BUSINESS_PARTNER.
func specKey(name string) string {
	name = strings.TrimSuffix(name, ".edmx")
	name = strings.TrimPrefix(name, "OP_")
	return strings.TrimSuffix(name, "_SRV")
}

// loadSAPSpecs reads every *.edmx in sapSpecsDir, keyed by specKey.
func loadSAPSpecs(t *testing.T) map[string][]edmxContent {
	t.Helper()
	abs, _ := filepath.Abs(sapSpecsDir)
	entries, err := os.ReadDir(sapSpecsDir)
	if err != nil {
		t.Fatalf("SAP's published $metadata files are missing: cannot read %s (%s): %v; "+
			"the test compares the simulator's $metadata with them and cannot run without them", sapSpecsDir, abs, err)
	}
	specs := map[string][]edmxContent{}
	for _, e := range entries {
		if e.IsDir() || !strings.EqualFold(filepath.Ext(e.Name()), ".edmx") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(sapSpecsDir, e.Name()))
		if err != nil {
			t.Fatalf("reading SAP's %s: %v", e.Name(), err)
		}
		c, err := parseEDMX(e.Name(), data)
		if err != nil {
			t.Fatalf("SAP's %s is not an EDMX document: %v", e.Name(), err)
		}
		if len(c.sets) == 0 {
			t.Fatalf("SAP's %s declares no entity set: the file does not read as OData v2 $metadata", e.Name())
		}
		key := specKey(e.Name())
		specs[key] = append(specs[key], c)
	}
	if len(specs) == 0 {
		t.Fatalf("SAP's published $metadata files are missing: no *.edmx in %s (%s)", sapSpecsDir, abs)
	}
	return specs
}

// TestMetadataOnlySAPPublished holds the $metadata of every service the
// simulator serves to SAP's published $metadata of that service: no
// service, entity set or function import of the simulator's own, and none
// named ZERPGATE.
func TestMetadataOnlySAPPublished(t *testing.T) {
	specs := loadSAPSpecs(t)
	s := New(Options{})
	names := make([]string, 0, len(s.services))
	for name := range s.services {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		t.Fatal("the simulator serves no service")
	}
	for _, name := range names {
		svc := s.services[name]
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, servicePrefix+name+"/$metadata", nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), "xml") {
				t.Fatalf("GET $metadata: got %d %q, want 200 XML: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			got, err := parseEDMX(name, rec.Body.Bytes())
			if err != nil {
				t.Fatalf("$metadata is not an EDMX document: %v\n%s", err, rec.Body)
			}
			// Guard against a document that reads as empty.
			if len(got.sets) != len(svc.setOrder) || len(got.functions) != len(svc.functions) || len(got.namespaces) != 1 {
				t.Fatalf("$metadata read as %d entity sets, %d function imports, %d schemas; the service has %d, %d, 1:\n%s",
					len(got.sets), len(got.functions), len(got.namespaces), len(svc.setOrder), len(svc.functions), rec.Body)
			}

			type declaration struct{ kind, name string }
			declared := []declaration{{"service", name}}
			for _, ns := range got.namespaces {
				declared = append(declared, declaration{"schema namespace", ns})
			}
			for _, ec := range got.containers {
				declared = append(declared, declaration{"entity container", ec})
			}
			for set := range got.sets {
				declared = append(declared, declaration{"entity set", set})
			}
			for fn := range got.functions {
				declared = append(declared, declaration{"function import", fn})
			}
			for _, d := range declared {
				if strings.Contains(strings.ToUpper(d.name), "ZERPGATE") {
					t.Errorf("declares %s %s: ZERPGATE is no SAP service", d.kind, d.name)
				}
			}

			published := specs[specKey(name)]
			files := "published files"
			if len(published) == 0 {
				t.Errorf("service %s is not among SAP's published services: no %s.edmx or OP_%s.edmx in %s", name, name, name, sapSpecsDir)
			} else {
				var fs []string
				for _, p := range published {
					fs = append(fs, p.file)
				}
				files = strings.Join(fs, ", ")
			}
			// find returns the published files that satisfy ok.
			find := func(ok func(edmxContent) bool) []string {
				var in []string
				for _, p := range published {
					if ok(p) {
						in = append(in, p.file)
					}
				}
				return in
			}
			for _, ns := range got.namespaces {
				if len(find(func(p edmxContent) bool { return slices.Contains(p.namespaces, ns) })) == 0 {
					t.Errorf("schema namespace %s is not in SAP's %s", ns, files)
				}
			}
			for set, typ := range got.sets {
				if len(find(func(p edmxContent) bool { _, ok := p.sets[set]; return ok })) == 0 {
					t.Errorf("entity set %s is not in SAP's %s", set, files)
					continue
				}
				if len(find(func(p edmxContent) bool { return p.sets[set] == typ })) == 0 {
					t.Errorf("entity set %s has entity type %s; SAP's %s give another", set, typ, files)
				}
			}
			for fn, method := range got.functions {
				if len(find(func(p edmxContent) bool { _, ok := p.functions[fn]; return ok })) == 0 {
					t.Errorf("function import %s is not in SAP's %s", fn, files)
					continue
				}
				if len(find(func(p edmxContent) bool { return strings.EqualFold(p.functions[fn], method) })) == 0 {
					t.Errorf("function import %s is called with %s; SAP's %s give another method", fn, method, files)
				}
			}
		})
	}

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, servicePrefix+"ZERPGATE_PROCESS_SRV/$metadata", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET ZERPGATE_PROCESS_SRV/$metadata: got %d, want 404", rec.Code)
	}
}

// knownSimShapeMismatches are the ways the simulator's answers depart from
// SAP's published $metadata that are known and not yet fixed, exactly as
// sapspec words them. TestAnswersHaveSAPShapes lets these through, fails on
// any other, and fails on an entry that no longer occurs, so that the list
// only shrinks.
var knownSimShapeMismatches = []string{}

// shapeQuery is a query string with the characters a $filter has escaped.
func shapeQuery(options ...string) string {
	r := strings.NewReplacer(" ", "%20", "'", "%27", ",", "%2C")
	for i, o := range options {
		name, value, _ := strings.Cut(o, "=")
		options[i] = name + "=" + r.Replace(value)
	}
	return "?" + strings.Join(options, "&")
}

// TestAnswersHaveSAPShapes holds what the simulator answers to SAP's
// shapes: for every entity set it serves, golden entities are read (the
// invoices 5105600101 to 5105600109, PO 4500018822, supplier 100042 and its
// business partner, the material documents of PO 4500018822 item 10), once
// with every navigation the set has expanded and once without, and every
// entity is checked with sapspec: each property outside __metadata and
// deferred navigations is declared on SAP's entity type and has its Edm
// type's OData v2 JSON form (Edm.String a string within MaxLength,
// Edm.Decimal a string, Edm.DateTime "/Date(ms)/", Edm.Boolean true or
// false, ...), __metadata.type is SAP's type, and expanded navigations hold
// entities of their target type, checked the same way.
func TestAnswersHaveSAPShapes(t *testing.T) {
	spec, err := sapspec.LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{})

	// get reads a path below a service and returns the entities of the
	// answer, which must be 200 with at least one entity.
	get := func(svc, path string) (body []byte, entities []map[string]json.RawMessage) {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, servicePrefix+svc+"/"+path, nil)
		req.Header.Set("Accept", "application/json")
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s/%s: got %d, want 200: %s", svc, path, rec.Code, rec.Body)
			return nil, nil
		}
		var env struct {
			D json.RawMessage `json:"d"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Errorf("GET %s/%s: not OData JSON: %v", svc, path, err)
			return nil, nil
		}
		var list struct {
			Results []map[string]json.RawMessage `json:"results"`
		}
		var one map[string]json.RawMessage
		if json.Unmarshal(env.D, &list) == nil && list.Results != nil {
			entities = list.Results
		} else if json.Unmarshal(env.D, &one) == nil && one != nil {
			entities = []map[string]json.RawMessage{one}
		}
		if len(entities) == 0 {
			t.Errorf("GET %s/%s: no entity in the answer, want golden ones: %s", svc, path, rec.Body)
		}
		return rec.Body.Bytes(), entities
	}
	str := func(e map[string]json.RawMessage, name string) string {
		var v string
		_ = json.Unmarshal(e[name], &v)
		return v
	}

	const (
		siSrv = "API_SUPPLIERINVOICE_PROCESS_SRV"
		poSrv = "API_PURCHASEORDER_PROCESS_SRV"
		mdSrv = "API_MATERIAL_DOCUMENT_SRV"
		bpSrv = "API_BUSINESS_PARTNER"
	)
	var invoices []string
	for i := 101; i <= 109; i++ {
		invoices = append(invoices, strconv.Itoa(5105600000+i))
	}
	// golden gives, for each entity set the simulator serves, the paths
	// (with their queries) that read its golden entities.
	golden := map[string]func() []string{
		"A_SupplierInvoice": func() []string {
			var out []string
			for _, id := range invoices {
				out = append(out, "A_SupplierInvoice"+shapeQuery("$filter=SupplierInvoice eq '"+id+"'"))
			}
			return out
		},
		"A_SuplrInvcItemPurOrdRef": func() []string {
			var out []string
			for _, id := range invoices {
				out = append(out, "A_SuplrInvcItemPurOrdRef"+shapeQuery("$filter=SupplierInvoice eq '"+id+"'"))
			}
			return out
		},
		"A_PurchaseOrder": func() []string { return []string{"A_PurchaseOrder('4500018822')"} },
		"A_PurchaseOrderItem": func() []string {
			return []string{"A_PurchaseOrderItem" + shapeQuery("$filter=PurchaseOrder eq '4500018822'")}
		},
		"A_MaterialDocumentItem": func() []string {
			return []string{"A_MaterialDocumentItem" + shapeQuery("$filter=PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '10'")}
		},
		"A_MaterialDocumentHeader": func() []string {
			_, items := get(mdSrv, "A_MaterialDocumentItem"+shapeQuery("$filter=PurchaseOrder eq '4500018822' and PurchaseOrderItem eq '10'"))
			var out []string
			for _, it := range items {
				out = append(out, "A_MaterialDocumentHeader"+shapeQuery("$filter=MaterialDocumentYear eq '"+str(it, "MaterialDocumentYear")+
					"' and MaterialDocument eq '"+str(it, "MaterialDocument")+"'"))
			}
			return out
		},
		"A_Supplier":        func() []string { return []string{"A_Supplier('100042')"} },
		"A_BusinessPartner": func() []string { return []string{"A_BusinessPartner" + shapeQuery("$filter=Supplier eq '100042'")} },
		"A_BusinessPartnerAddress": func() []string {
			_, bps := get(bpSrv, "A_BusinessPartner"+shapeQuery("$filter=Supplier eq '100042'"))
			var out []string
			for _, bp := range bps {
				out = append(out, "A_BusinessPartnerAddress"+shapeQuery("$filter=BusinessPartner eq '"+str(bp, "BusinessPartner")+"'"))
			}
			return out
		},
	}

	seen := map[string]bool{}
	checked := 0
	svcNames := make([]string, 0, len(s.services))
	for name := range s.services {
		svcNames = append(svcNames, name)
	}
	slices.Sort(svcNames)
	for _, svcName := range svcNames {
		svc := s.services[svcName]
		published := spec.Services[svcName]
		if published == nil {
			t.Errorf("the simulator serves %s, which SAP does not publish", svcName)
			continue
		}
		for _, setName := range svc.setOrder {
			paths, ok := golden[setName]
			if !ok {
				t.Errorf("the simulator serves %s/%s, which this test does not read: add its golden entities to the table", svcName, setName)
				continue
			}
			set := published.EntitySets[setName]
			if set == nil {
				t.Errorf("the simulator serves %s/%s, which SAP's %s does not declare", svcName, setName, published.File)
				continue
			}
			typ := svcName + "." + set.EntityType
			var expand []string
			for _, n := range svc.sets[setName].navs {
				expand = append(expand, n.name)
			}
			ps := paths()
			if len(ps) == 0 {
				t.Errorf("%s/%s: no golden entity to read", svcName, setName)
			}
			for _, path := range ps {
				variants := []string{path}
				if len(expand) > 0 {
					sep := "?"
					if strings.Contains(path, "?") {
						sep = "&"
					}
					variants = append(variants, path+sep+"$expand="+strings.Join(expand, ","))
				}
				for _, p := range variants {
					body, entities := get(svcName, p)
					if body == nil {
						continue
					}
					checked += len(entities)
					for _, m := range sapspec.Mismatches(spec.CheckAnswer(typ, body)) {
						seen[m] = true
						if !slices.Contains(knownSimShapeMismatches, m) {
							t.Errorf("GET %s/%s: answer off SAP's shape: %s", svcName, p, m)
						}
					}
				}
			}
		}
	}
	for _, m := range knownSimShapeMismatches {
		if !seen[m] {
			t.Errorf("known mismatch no longer occurs (fixed): remove it from knownSimShapeMismatches: %q", m)
		}
	}
	t.Logf("%d entities checked, not counting expanded ones", checked)
}
