package sapspec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testEDMX is a small hand-written $metadata document with what SAP's
// services use: a two-part key, navigations to one and to many, SAP
// capability annotations and function imports with mandatory and optional
// parameters.
const testEDMX = `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" xmlns:sap="http://www.sap.com/Protocols/SAPData">
 <edmx:DataServices m:DataServiceVersion="2.0">
  <Schema Namespace="TEST_SRV" xml:lang="en" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
   <EntityType Name="OrderType">
    <Key><PropertyRef Name="OrderID"/></Key>
    <Property Name="OrderID" Type="Edm.String" Nullable="false" MaxLength="10" sap:creatable="false"/>
    <Property Name="Amount" Type="Edm.Decimal" Precision="13" Scale="2"/>
    <Property Name="Created" Type="Edm.DateTime" Precision="0"/>
    <Property Name="Open" Type="Edm.Boolean"/>
    <Property Name="Token" Type="Edm.Guid"/>
    <Property Name="Lines" Type="Edm.Int32"/>
    <Property Name="Secret" Type="Edm.String" sap:filterable="false" sap:sortable="false"/>
    <NavigationProperty Name="to_Items" Relationship="TEST_SRV.assoc_items" FromRole="FromRole_items" ToRole="ToRole_items"/>
    <NavigationProperty Name="to_Customer" Relationship="TEST_SRV.assoc_customer" FromRole="FromRole_customer" ToRole="ToRole_customer"/>
   </EntityType>
   <EntityType Name="ItemType">
    <Key><PropertyRef Name="OrderID"/><PropertyRef Name="Item"/></Key>
    <Property Name="OrderID" Type="Edm.String" Nullable="false" MaxLength="10"/>
    <Property Name="Item" Type="Edm.String" Nullable="false" MaxLength="5"/>
    <Property Name="Quantity" Type="Edm.Decimal" Precision="13" Scale="3"/>
    <NavigationProperty Name="to_Order" Relationship="TEST_SRV.assoc_items" FromRole="ToRole_items" ToRole="FromRole_items"/>
   </EntityType>
   <EntityType Name="CustomerType">
    <Key><PropertyRef Name="CustomerUUID"/></Key>
    <Property Name="CustomerUUID" Type="Edm.Guid" Nullable="false"/>
    <Property Name="Name" Type="Edm.String" MaxLength="40"/>
   </EntityType>
   <ComplexType Name="ApproveResult">
    <Property Name="Success" Type="Edm.Boolean" Nullable="false"/>
   </ComplexType>
   <Association Name="assoc_items">
    <End Type="TEST_SRV.OrderType" Multiplicity="1" Role="FromRole_items"/>
    <End Type="TEST_SRV.ItemType" Multiplicity="*" Role="ToRole_items"/>
   </Association>
   <Association Name="assoc_customer">
    <End Type="TEST_SRV.OrderType" Multiplicity="*" Role="FromRole_customer"/>
    <End Type="TEST_SRV.CustomerType" Multiplicity="0..1" Role="ToRole_customer"/>
   </Association>
   <EntityContainer Name="TEST_SRV_Entities" m:IsDefaultEntityContainer="true">
    <EntitySet Name="Orders" EntityType="TEST_SRV.OrderType"/>
    <EntitySet Name="Items" EntityType="TEST_SRV.ItemType" sap:creatable="false" sap:updatable="false" sap:deletable="false"/>
    <EntitySet Name="Customers" EntityType="TEST_SRV.CustomerType" sap:creatable="false"/>
    <AssociationSet Name="assoc_items_set" Association="TEST_SRV.assoc_items" sap:creatable="false">
     <End EntitySet="Orders" Role="FromRole_items"/>
     <End EntitySet="Items" Role="ToRole_items"/>
    </AssociationSet>
    <AssociationSet Name="assoc_customer_set" Association="TEST_SRV.assoc_customer">
     <End EntitySet="Orders" Role="FromRole_customer"/>
     <End EntitySet="Customers" Role="ToRole_customer"/>
    </AssociationSet>
    <FunctionImport Name="Approve" ReturnType="TEST_SRV.ApproveResult" m:HttpMethod="POST">
     <Parameter Name="OrderID" Type="Edm.String" Mode="In" MaxLength="10"/>
     <Parameter Name="ShiftDays" Type="Edm.Boolean" Mode="In"/>
     <Parameter Name="Note" Type="Edm.String" Mode="In" Nullable="true"/>
    </FunctionImport>
    <FunctionImport Name="OrdersSince" ReturnType="Collection(TEST_SRV.OrderType)" EntitySet="Orders" m:HttpMethod="GET">
     <Parameter Name="Since" Type="Edm.DateTime" Mode="In"/>
     <Parameter Name="Customer" Type="Edm.Guid" Mode="In" Nullable="true"/>
    </FunctionImport>
   </EntityContainer>
  </Schema>
 </edmx:DataServices>
</edmx:Edmx>`

func testSpec(t *testing.T) *Spec {
	t.Helper()
	spec, err := parseTestSpec()
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return spec
}

func TestParse(t *testing.T) {
	svc := testSpec(t).Services["TEST_SRV"]
	if svc.Name != "TEST_SRV" || svc.Container != "TEST_SRV_Entities" || svc.File != "test.edmx" {
		t.Fatalf("service: got %q %q %q", svc.Name, svc.Container, svc.File)
	}
	order := svc.EntityTypes["OrderType"]
	if order == nil {
		t.Fatal("no OrderType")
	}
	if !slices.Equal(order.Key, []string{"OrderID"}) {
		t.Errorf("OrderType key: got %q", order.Key)
	}
	if got := order.Order; !slices.Equal(got, []string{"OrderID", "Amount", "Created", "Open", "Token", "Lines", "Secret"}) {
		t.Errorf("OrderType properties: got %q", got)
	}
	id := order.Properties["OrderID"]
	if id.Type != "Edm.String" || id.Nullable || id.MaxLength != 10 || id.Creatable || !id.Updatable || !id.Filterable {
		t.Errorf("OrderID: got %+v", id)
	}
	if s := order.Properties["Secret"]; s.Filterable || s.Sortable || !s.Nullable {
		t.Errorf("Secret: got %+v", s)
	}
	if a := order.Properties["Amount"]; a.Type != "Edm.Decimal" || a.Precision != "13" || a.Scale != "2" {
		t.Errorf("Amount: got %+v", a)
	}
	items := order.Navigations["to_Items"]
	if items == nil || items.Target != "ItemType" || !items.Many {
		t.Errorf("to_Items: got %+v", items)
	}
	cust := order.Navigations["to_Customer"]
	if cust == nil || cust.Target != "CustomerType" || cust.Many {
		t.Errorf("to_Customer: got %+v", cust)
	}
	if back := svc.EntityTypes["ItemType"].Navigations["to_Order"]; back == nil || back.Target != "OrderType" || back.Many {
		t.Errorf("to_Order: got %+v", back)
	}
	if k := svc.EntityTypes["ItemType"].Key; !slices.Equal(k, []string{"OrderID", "Item"}) {
		t.Errorf("ItemType key: got %q", k)
	}
	if s := svc.EntitySets["Orders"]; s == nil || s.EntityType != "OrderType" || !s.Creatable || !s.Updatable || !s.Deletable {
		t.Errorf("Orders: got %+v", s)
	}
	if s := svc.EntitySets["Items"]; s == nil || s.Creatable || s.Updatable || s.Deletable {
		t.Errorf("Items: got %+v", s)
	}
	as := svc.AssociationSets["assoc_items_set"]
	if as == nil || as.Association != "assoc_items" || as.Creatable || len(as.Ends) != 2 || as.Ends[1].EntitySet != "Items" {
		t.Errorf("assoc_items_set: got %+v", as)
	}
	if a := svc.Associations["assoc_customer"]; a == nil || a.Ends[1].Multiplicity != "0..1" {
		t.Errorf("assoc_customer: got %+v", a)
	}
	ap := svc.FunctionImports["Approve"]
	if ap == nil || ap.HTTPMethod != "POST" || ap.ReturnType != "TEST_SRV.ApproveResult" || len(ap.Parameters) != 3 {
		t.Fatalf("Approve: got %+v", ap)
	}
	if p := ap.Parameter("OrderID"); p.Type != "Edm.String" || p.Nullable || p.MaxLength != 10 || p.Mode != "In" {
		t.Errorf("Approve OrderID: got %+v", p)
	}
	if p := ap.Parameter("Note"); !p.Nullable {
		t.Errorf("Approve Note: got %+v, want nullable", p)
	}
	if ct := svc.ComplexTypes["ApproveResult"]; ct == nil || ct.Properties["Success"] == nil || ct.Properties["Success"].Nullable {
		t.Errorf("ApproveResult: got %+v", ct)
	}
	if f := svc.FunctionImports["OrdersSince"]; f.HTTPMethod != "GET" || f.EntitySet != "Orders" || f.ReturnType != "Collection(TEST_SRV.OrderType)" {
		t.Errorf("OrdersSince: got %+v", f)
	}
}

func TestParseRefusesBrokenDocuments(t *testing.T) {
	tests := map[string]string{
		"not XML":         "not xml",
		"no container":    strings.Replace(testEDMX, `<EntityContainer Name="TEST_SRV_Entities" m:IsDefaultEntityContainer="true">`, `<Nothing>`, 1),
		"undeclared set":  strings.Replace(testEDMX, `EntityType="TEST_SRV.ItemType" sap:creatable`, `EntityType="TEST_SRV.NoType" sap:creatable`, 1),
		"no association":  strings.Replace(testEDMX, `Relationship="TEST_SRV.assoc_customer"`, `Relationship="TEST_SRV.assoc_none"`, 1),
		"bad key":         strings.Replace(testEDMX, `<PropertyRef Name="CustomerUUID"/>`, `<PropertyRef Name="Nobody"/>`, 1),
		"wrong namespace": strings.Replace(testEDMX, `xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"`, `xmlns:edmx="urn:other"`, 1),
	}
	for name, doc := range tests {
		if name == "no container" {
			doc = strings.Replace(doc, `</EntityContainer>`, `</Nothing>`, 1)
		}
		if _, err := Parse(name, []byte(doc)); err == nil {
			t.Errorf("%s: Parse gave no error", name)
		}
	}
}

// TestSharedSpecs reads SAP's published files: the four services the
// client speaks, each from the file that is not the on-premise variant.
func TestSharedSpecs(t *testing.T) {
	spec, err := LoadShared()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ file, shadowed string }{
		"API_SUPPLIERINVOICE_PROCESS_SRV": {"API_SUPPLIERINVOICE_PROCESS_SRV.edmx", "OP_API_SUPPLIERINVOICE_PROCESS_SRV.edmx"},
		"API_PURCHASEORDER_PROCESS_SRV":   {"API_PURCHASEORDER_PROCESS_SRV.edmx", ""},
		"API_MATERIAL_DOCUMENT_SRV":       {"API_MATERIAL_DOCUMENT_SRV.edmx", ""},
		"API_BUSINESS_PARTNER":            {"API_BUSINESS_PARTNER.edmx", "OP_API_BUSINESS_PARTNER_SRV.edmx"},
	}
	for name, w := range want {
		svc := spec.Services[name]
		if svc == nil {
			t.Errorf("no service %s", name)
			continue
		}
		var shadowed string
		if len(svc.Shadowed) > 0 {
			shadowed = strings.Join(svc.Shadowed, ",")
		}
		if svc.File != w.file || shadowed != w.shadowed {
			t.Errorf("%s: read from %s (shadowing %q), want %s (shadowing %q)", name, svc.File, shadowed, w.file, w.shadowed)
		}
	}
	si := spec.Services["API_SUPPLIERINVOICE_PROCESS_SRV"]
	inv := si.EntityTypes["A_SupplierInvoiceType"]
	if inv == nil || !slices.Equal(inv.Key, []string{"SupplierInvoice", "FiscalYear"}) {
		t.Fatalf("A_SupplierInvoiceType: got %+v", inv)
	}
	if nav := inv.Navigations["to_SuplrInvcItemPurOrdRef"]; nav == nil || nav.Target != "A_SuplrInvcItemPurOrdRefType" || !nav.Many {
		t.Errorf("to_SuplrInvcItemPurOrdRef: got %+v", nav)
	}
	if p := inv.Properties["InvoiceGrossAmount"]; p == nil || p.Type != "Edm.Decimal" {
		t.Errorf("InvoiceGrossAmount: got %+v", p)
	}
	rel := si.FunctionImports["Release"]
	if rel == nil || rel.HTTPMethod != "POST" || len(rel.Parameters) != 3 {
		t.Fatalf("Release: got %+v", rel)
	}
	if p := rel.Parameter("DiscountDaysHaveToBeShifted"); p == nil || p.Type != "Edm.Boolean" || p.Nullable {
		t.Errorf("Release DiscountDaysHaveToBeShifted: got %+v, want a mandatory Edm.Boolean", p)
	}
	if s := si.EntitySets["A_SuplrInvcItemPurOrdRef"]; s == nil || s.Creatable {
		t.Errorf("A_SuplrInvcItemPurOrdRef: got %+v, want not creatable", s)
	}
	md := spec.Services["API_MATERIAL_DOCUMENT_SRV"].EntityTypes["A_MaterialDocumentItemType"]
	if md == nil || md.Properties["PostingDate"] != nil || md.Properties["GoodsMovementIsCancelled"] == nil {
		t.Errorf("A_MaterialDocumentItemType: got %+v, want GoodsMovementIsCancelled and no PostingDate", md)
	}
	if f := spec.Services["API_MATERIAL_DOCUMENT_SRV"].FunctionImports["CancelItem"]; f == nil || !f.Parameter("PostingDate").Nullable || f.Parameter("MaterialDocument").Nullable {
		t.Errorf("CancelItem: got %+v", f)
	}
	sup := spec.Services["API_BUSINESS_PARTNER"].EntityTypes["A_SupplierType"]
	if sup == nil || sup.Properties["Country"] != nil || sup.Properties["SupplierName"] == nil {
		t.Errorf("A_SupplierType: got %+v, want SupplierName and no Country", sup)
	}
	if s := spec.Services["API_BUSINESS_PARTNER"].EntitySets["A_Supplier"]; s == nil || s.Creatable || !s.Updatable {
		t.Errorf("A_Supplier: got %+v", s)
	}
}

// TestDirMissing: without shared/sapspecs beside the repository, loading
// fails and says what is missing.
func TestDirMissing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(root, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(root, "pkg"))
	_, err := LoadShared()
	if err == nil || !strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), filepath.Join("shared", "sapspecs")) {
		t.Fatalf("LoadShared without shared/sapspecs: got %v, want an error naming the missing directory", err)
	}
}
