package sap

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap/sapspec"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// wireEntityTypes maps every struct the client decodes OData answers into
// to the entity or complex types of SAP's $metadata it reads. A wire
// struct is a named struct type of this package (outside tests) with json
// tags; notWire lists those that are no entity.
var wireEntityTypes = map[string][]string{
	"wireInvoice":                {"API_SUPPLIERINVOICE_PROCESS_SRV.A_SupplierInvoiceType"},
	"wireInvoiceItemRef":         {"API_SUPPLIERINVOICE_PROCESS_SRV.A_SuplrInvcItemPurOrdRefType"},
	"wireSuccess":                {"API_SUPPLIERINVOICE_PROCESS_SRV.PostInvoiceExportParameters", "API_SUPPLIERINVOICE_PROCESS_SRV.ReleaseInvoiceExportParameters"},
	"wirePurchaseOrder":          {"API_PURCHASEORDER_PROCESS_SRV.A_PurchaseOrderType"},
	"wirePOItem":                 {"API_PURCHASEORDER_PROCESS_SRV.A_PurchaseOrderItemType"},
	"wireMaterialDocumentItem":   {"API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentItemType"},
	"wireMaterialDocumentHeader": {"API_MATERIAL_DOCUMENT_SRV.A_MaterialDocumentHeaderType"},
	"wireBusinessPartner":        {"API_BUSINESS_PARTNER.A_BusinessPartnerType"},
	"wireSupplier":               {"API_BUSINESS_PARTNER.A_SupplierType"},
	"wireBPAddress":              {"API_BUSINESS_PARTNER.A_BusinessPartnerAddressType"},
}

// notWire are structs with json tags that hold no entity: the expanded
// list wrapper and the OData error envelope.
var notWire = map[string]bool{"results": true, "errorBody": true, "errorDetail": true}

// edmOfGo are the Edm types a field of each Go type may read.
var edmOfGo = map[string][]string{
	"string":     {"Edm.String", "Edm.Guid"},
	"bool":       {"Edm.Boolean"},
	"sapDecimal": {"Edm.Decimal", "Edm.Double", "Edm.Single", "Edm.Int64"},
	"sapDate":    {"Edm.DateTime", "Edm.DateTimeOffset"},
	"int":        {"Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32"},
	"int32":      {"Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32"},
	"int64":      {"Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32"},
}

// wireField is one JSON member a wire struct reads.
type wireField struct {
	goName, json string
	goType       string // the named type, after *, [] and results[...]
	many         bool   // a list: []T or results[T]
}

// wireStructs reads the package's non-test sources and returns every
// named struct type with json tags, with the members it reads. Reading
// the sources, not reflect, lets the table above name the types without
// compiling against them.
func wireStructs(t *testing.T) map[string][]wireField {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	structs := map[string][]wireField{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			var fields []wireField
			tagged := false
			for _, fl := range st.Fields.List {
				name, many := typeName(fl.Type)
				tag := ""
				if fl.Tag != nil {
					raw, _ := strconv.Unquote(fl.Tag.Value)
					tag = reflect.StructTag(raw).Get("json")
					tagged = tagged || tag != ""
				}
				jsonName, _, _ := strings.Cut(tag, ",")
				if jsonName == "-" {
					continue
				}
				if len(fl.Names) == 0 { // embedded
					fields = append(fields, wireField{goName: name, json: "", goType: name})
					continue
				}
				for _, id := range fl.Names {
					if !id.IsExported() {
						continue
					}
					j := jsonName
					if j == "" {
						j = id.Name
					}
					fields = append(fields, wireField{goName: id.Name, json: j, goType: name, many: many})
				}
			}
			if tagged {
				structs[ts.Name.Name] = fields
			}
			return true
		})
	}
	return structs
}

// typeName is the named type of a field type expression.
func typeName(e ast.Expr) (name string, many bool) {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name, false
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.ArrayType:
		n, _ := typeName(x.Elt)
		return n, true
	case *ast.IndexExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "results" {
			n, _ := typeName(x.Index)
			return n, true
		}
		return typeName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name, false
	}
	return "", false
}

// decoderMismatches holds every wire struct to the types it reads: every
// JSON member a property or navigation property of the type (by
// sapspec.CheckDecoded), of an Edm type its Go type can hold, and every
// navigation read into the wire struct of its target type. The table is
// held to the sources: every wire struct is in it, and it names no struct
// the package no longer has.
func decoderMismatches(t *testing.T) []string {
	t.Helper()
	spec, err := sapspec.Default()
	if err != nil {
		t.Fatal(err)
	}
	structs := wireStructs(t)
	names := make([]string, 0, len(structs))
	for n := range structs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, ok := wireEntityTypes[n]; !ok && !notWire[n] {
			t.Errorf("struct %s has json tags but is not in wireEntityTypes: add the SAP entity or complex type it decodes (or, if it holds no entity, put it in notWire)", n)
		}
	}
	for n := range wireEntityTypes {
		if _, ok := structs[n]; !ok {
			t.Errorf("wireEntityTypes names %s, which the package no longer declares: remove it", n)
		}
	}
	var out []string
	for _, n := range names {
		for _, typ := range wireEntityTypes[n] {
			fields := structs[n]
			var jsonNames []string
			for _, f := range fields {
				if f.json != "" {
					jsonNames = append(jsonNames, f.json)
				}
			}
			out = append(out, sapspec.Mismatches(spec.CheckDecoded(typ, jsonNames))...)
			for _, f := range fields {
				if f.json == "" {
					t.Errorf("%s embeds %s: the check reads no embedded fields", n, f.goName)
					continue
				}
				if p := spec.Property(typ, f.json); p != nil {
					if allowed, known := edmOfGo[f.goType]; known && !slices.Contains(allowed, p.Type) {
						out = append(out, n+"."+f.goName+" is a Go "+f.goType+" and reads "+typ+"."+f.json+", an "+p.Type)
					}
					continue
				}
				targets, isWire := wireEntityTypes[f.goType]
				if !isWire {
					continue
				}
				// A navigation read into a wire struct: its target type must
				// be the one the table gives that struct.
				target, many := navTarget(t, spec, typ, f.json)
				switch {
				case target == "":
				case !slices.Contains(targets, target):
					out = append(out, n+"."+f.goName+" reads navigation "+f.json+" of "+typ+" into "+f.goType+" ("+strings.Join(targets, ", ")+"); it leads to "+target)
				case many != f.many:
					out = append(out, n+"."+f.goName+" reads navigation "+f.json+" of "+typ+" as "+map[bool]string{true: "a list", false: "one entity"}[f.many]+"; it leads to "+map[bool]string{true: "many entities", false: "one entity"}[many])
				}
			}
		}
	}
	return out
}

// navTarget is the qualified target type of a navigation property of an
// entity type, and whether it leads to many; "" when it is none.
func navTarget(t *testing.T, spec *sapspec.Spec, typ, nav string) (string, bool) {
	t.Helper()
	svcName, local, _ := strings.Cut(typ, ".")
	svc := spec.Services[svcName]
	if svc == nil {
		return "", false
	}
	et := svc.EntityTypes[local]
	if et == nil || et.Navigations[nav] == nil {
		return "", false
	}
	n := et.Navigations[nav]
	return svcName + "." + n.Target, n.Many
}

// TestWireTypesMatchSAPMetadata: the properties the decoders read are the
// ones SAP's $metadata declares on the types they decode, beyond the
// known mismatches (sapspec.KnownMismatches).
func TestWireTypesMatchSAPMetadata(t *testing.T) {
	for _, m := range decoderMismatches(t) {
		if !slices.Contains(sapspec.KnownMismatches, m) {
			t.Errorf("decoder off SAP's published $metadata: %s", m)
		}
	}
}

// TestKnownSAPSpecMismatchesStillOccur: every entry of
// sapspec.KnownMismatches still occurs in the golden walk against the
// simulator or in the decoders; one that no longer does has been fixed
// and must leave the list.
func TestKnownSAPSpecMismatchesStillOccur(t *testing.T) {
	s := sim.New(sim.Options{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	hc := sapspec.CheckedHTTPClient(t)
	tr := hc.Transport.(*sapspec.Transport)
	c, err := New(srv.URL, Options{HTTPClient: hc,
		Runner: retry.New(retry.Policy{AttemptTimeout: 5 * time.Second, MaxAttempts: 1, Breaker: retry.BreakerSettings{Disabled: true}}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	logErr := func(what string, err error) {
		if err != nil {
			t.Logf("%s: %v", what, err)
		}
	}
	for i := 100; i <= 109; i++ {
		_, err := c.Invoice(ctx, "5105600"+strconv.Itoa(i))
		logErr("invoice", err)
	}
	_, err = c.InvoicesBySupplierRef(ctx, "100043", "INV-88120")
	logErr("invoices by supplier reference", err)
	for _, po := range []string{"4500018822", "4500018823", "4500018830", "4500018840", "4500018850", "4500018860"} {
		_, err := c.PurchaseOrder(ctx, po)
		logErr("purchase order", err)
	}
	_, err = c.GoodsReceipts(ctx, "4500018822", "10")
	logErr("goods receipts", err)
	_, err = c.Supplier(ctx, "100042")
	logErr("supplier", err)
	_, err = c.SearchSuppliers(ctx, "acme", 10)
	logErr("supplier search", err)
	_, err = c.PostInvoice(ctx, erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "known-mismatches")
	logErr("post invoice", err)

	seen := append(tr.Mismatches(), decoderMismatches(t)...)
	for _, m := range sapspec.KnownMismatches {
		if !slices.Contains(seen, m) {
			t.Errorf("known mismatch no longer occurs (fixed): remove it from sapspec.KnownMismatches: %q", m)
		}
	}
}
