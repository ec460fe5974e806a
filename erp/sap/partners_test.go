package sap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// partnerJSON is an A_BusinessPartner as SAP sends it with
// $expand=to_Supplier,to_BusinessPartnerAddress; supplier and addresses
// are the expanded values.
func partnerJSON(bp, searchTerm, supplier, addresses string) string {
	return fmt.Sprintf(`{"__metadata":{"type":"API_BUSINESS_PARTNER.A_BusinessPartnerType"},
"BusinessPartner":%q,"Customer":"","Supplier":%q,"BusinessPartnerCategory":"2","BusinessPartnerFullName":"Partner %s",
"SearchTerm1":%q,"to_Supplier":%s,"to_BusinessPartnerAddress":%s}`, bp, supplierOf(supplier), bp, searchTerm, supplier, addresses)
}

// supplierOf is the Supplier number in an expanded to_Supplier, "" for none.
func supplierOf(supplier string) string {
	_, rest, ok := strings.Cut(supplier, `"Supplier":"`)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

func supplierRoleJSON(id, name string, blocked, deleted bool) string {
	return fmt.Sprintf(`{"__metadata":{"type":"API_BUSINESS_PARTNER.A_SupplierType"},"Supplier":%q,"PostingIsBlocked":%t,"SupplierName":%q,"DeletionIndicator":%t}`,
		id, blocked, name, deleted)
}

// addressJSON is an A_BusinessPartnerAddress valid from from to to
// (Edm.DateTimeOffset, as SAP sends it).
func addressJSON(id, country string, from, to time.Time) string {
	return fmt.Sprintf(`{"BusinessPartner":"x","AddressID":%q,"ValidityStartDate":"/Date(%d+0000)/","ValidityEndDate":"/Date(%d+0000)/","CityName":"c","Country":%q}`,
		id, from.UnixMilli(), to.UnixMilli(), country)
}

func addressesJSON(addrs ...string) string { return `{"results":[` + strings.Join(addrs, ",") + `]}` }

var (
	validFrom = day(2020, 1, 1)
	openEnd   = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)
)

// supplierJSON is supplier 100042 read from its business partner.
var supplierJSON = partnerJSON("100042", "ACME",
	supplierRoleJSON("100042", "Acme Industrial Supplies GmbH", false, false),
	addressesJSON(addressJSON("23001", "DE", validFrom, openEnd)))

func TestSupplier(t *testing.T) {
	f := newFake(t, respond(200, list(supplierJSON)))
	got, err := f.client(Options{}).Supplier(context.Background(), "100042")
	if err != nil {
		t.Fatalf("Supplier: got error %v, want nil", err)
	}
	same(t, "supplier", got, erp.Supplier{ID: "100042", Name: "Acme Industrial Supplies GmbH", Country: "DE"})
	reqs := f.odata()
	if len(reqs) != 1 {
		t.Fatalf("requests: got %d, want 1: supplier and address come in one answer", len(reqs))
	}
	r := reqs[0]
	if r.path != bpPath+"A_BusinessPartner" {
		t.Errorf("path: got %q, want %q", r.path, bpPath+"A_BusinessPartner")
	}
	if got := r.query["$filter"]; !slices.Equal(got, []string{"Supplier eq '100042'"}) {
		t.Errorf("$filter: got %q, want Supplier eq '100042'", got)
	}
	if got := r.query["$expand"]; !slices.Equal(got, []string{"to_Supplier,to_BusinessPartnerAddress"}) {
		t.Errorf("$expand: got %q, want to_Supplier,to_BusinessPartnerAddress", got)
	}
}

func TestSupplierFlagsAndNumbers(t *testing.T) {
	// The partner number need not be the supplier number.
	body := list(partnerJSON("1000050", "BALTIC", supplierRoleJSON("100050", "Baltic Trading OÜ", true, true),
		addressesJSON(addressJSON("23003", "EE", validFrom, openEnd))))
	got, err := newFake(t, respond(200, body)).client(Options{}).Supplier(context.Background(), "100050")
	if err != nil {
		t.Fatalf("Supplier: %v", err)
	}
	same(t, "supplier", got, erp.Supplier{ID: "100050", Name: "Baltic Trading OÜ", Country: "EE", PostingBlocked: true, Deleted: true})

	// Without a SupplierName the partner's full name is the name.
	body = list(partnerJSON("100042", "ACME", supplierRoleJSON("100042", "", false, false), addressesJSON()))
	got, err = newFake(t, respond(200, body)).client(Options{}).Supplier(context.Background(), "100042")
	if err != nil || got.Name != "Partner 100042" {
		t.Errorf("no SupplierName: got %+v, %v, want the partner's full name", got, err)
	}
}

func TestSupplierCountry(t *testing.T) {
	past := time.Date(2023, time.December, 31, 23, 59, 59, 0, time.UTC)
	future := time.Now().AddDate(1, 0, 0)
	tests := []struct {
		name, addresses, want string
	}{
		{"one address", addressesJSON(addressJSON("1", "DE", validFrom, openEnd)), "DE"},
		{"moved: the valid address, not the first",
			addressesJSON(addressJSON("1", "AT", day(2015, 3, 1), past), addressJSON("2", "DE", day(2024, 1, 1), openEnd)), "DE"},
		{"not yet valid", addressesJSON(addressJSON("1", "FR", future, openEnd), addressJSON("2", "DE", validFrom, openEnd)), "DE"},
		{"none valid: the first with a country",
			addressesJSON(addressJSON("1", "", validFrom, past), addressJSON("2", "AT", validFrom, past), addressJSON("3", "CH", validFrom, past)), "AT"},
		{"open validity", addressesJSON(`{"AddressID":"1","Country":"PL"}`), "PL"},
		{"no address", addressesJSON(), ""},
		{"addresses not expanded", `{"__deferred":{"uri":"x"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := list(partnerJSON("100042", "ACME", supplierRoleJSON("100042", "Acme", false, false), tt.addresses))
			got, err := newFake(t, respond(200, body)).client(Options{}).Supplier(context.Background(), "100042")
			if err != nil || got.Country != tt.want {
				t.Errorf("got %q, %v, want %q", got.Country, err, tt.want)
			}
		})
	}
}

func TestSupplierNotFound(t *testing.T) {
	bodies := map[string]string{
		"no partner": list(),
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			_, err := newFake(t, respond(200, body)).client(Options{}).Supplier(context.Background(), "100999")
			var nf *erp.NotFoundError
			if !errors.As(err, &nf) || nf.Entity != erp.EntitySupplier || nf.ID != "100999" {
				t.Fatalf("got %v, want NotFoundError supplier 100999", err)
			}
		})
	}
}

// TestSupplierWithoutRole checks that a partner read without its supplier
// role is malformed: its posting block and deletion flag are unknown, not
// false.
func TestSupplierWithoutRole(t *testing.T) {
	for name, role := range map[string]string{"null": `null`, "not expanded": `{"__deferred":{"uri":"x"}}`} {
		t.Run(name, func(t *testing.T) {
			body := list(partnerJSON("100042", "ACME", role, addressesJSON()))
			_, err := newFake(t, respond(200, body)).client(Options{}).Supplier(context.Background(), "100042")
			var up *erp.UpstreamError
			if !errors.As(err, &up) || up.Text != "malformed response" || up.Operation != "read supplier" {
				t.Fatalf("got %v, want a malformed-response UpstreamError", err)
			}
		})
	}
}

func TestSearchSuppliers(t *testing.T) {
	blocked := partnerJSON("100044", "ACME", supplierRoleJSON("100044", "Acme Office Furniture Ltd", true, true),
		addressesJSON(addressJSON("23002", "GB", validFrom, openEnd)))
	f := newFake(t, respond(200, list(supplierJSON, blocked)))
	got, err := f.client(Options{}).SearchSuppliers(context.Background(), "acme", 10)
	if err != nil {
		t.Fatalf("SearchSuppliers: got error %v, want nil", err)
	}
	same(t, "suppliers", got, []erp.Supplier{
		{ID: "100042", Name: "Acme Industrial Supplies GmbH", Country: "DE"},
		{ID: "100044", Name: "Acme Office Furniture Ltd", Country: "GB", PostingBlocked: true, Deleted: true},
	})
	r := f.odata()[0]
	if r.path != bpPath+"A_BusinessPartner" {
		t.Errorf("path: got %q, want %q", r.path, bpPath+"A_BusinessPartner")
	}
	if got, want := r.query["$filter"], "substringof('ACME',SearchTerm1) eq true and Supplier ne ''"; !slices.Equal(got, []string{want}) {
		t.Errorf("$filter: got %q, want %q", got, want)
	}
	if got := r.query["$expand"]; !slices.Equal(got, []string{"to_Supplier,to_BusinessPartnerAddress"}) {
		t.Errorf("$expand: got %q, want to_Supplier,to_BusinessPartnerAddress", got)
	}
	if got := r.query["$top"]; !slices.Equal(got, []string{"10"}) {
		t.Errorf("$top: got %q, want 10", got)
	}

	// The text is upper-cased as SAP upper-cases search terms, and stays a
	// quoted literal.
	for in, want := range map[string]string{"O'Brien": "'O''BRIEN'", "müller": "'MÜLLER'", "Acme') or ('1": "'ACME'') OR (''1'"} {
		f := newFake(t, respond(200, list()))
		found, err := f.client(Options{}).SearchSuppliers(context.Background(), in, 0)
		if err != nil || found == nil || len(found) != 0 {
			t.Errorf("SearchSuppliers(%q): got %v, %v, want an empty slice", in, found, err)
		}
		r := f.odata()[0]
		if got := r.query["$filter"]; !slices.Equal(got, []string{"substringof(" + want + ",SearchTerm1) eq true and Supplier ne ''"}) {
			t.Errorf("SearchSuppliers(%q): $filter %q, want the literal %s", in, got, want)
		}
		if _, ok := r.query["$top"]; ok {
			t.Errorf("SearchSuppliers(%q, 0): sent $top", in)
		}
	}
}

// TestSimSupplierMasterData reads the golden set's suppliers from the
// simulator, which keeps the country on the partner's address, compares
// substringof case-sensitively as SAP Gateway does and keeps SearchTerm1 in
// upper case.
func TestSimSupplierMasterData(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	ctx := context.Background()
	for _, want := range []erp.Supplier{
		{ID: "100042", Name: "Acme Industrial Supplies GmbH", Country: "DE"},
		{ID: "100043", Name: "Nordwind Logistik AG", Country: "DE"}, // moved from AT
		{ID: "100044", Name: "Acme Office Furniture Ltd", Country: "GB"},
		{ID: "100050", Name: "Baltic Trading OÜ", Country: "EE", PostingBlocked: true}, // partner 1000050
	} {
		got, err := c.Supplier(ctx, want.ID)
		if err != nil {
			t.Errorf("Supplier(%s): %v", want.ID, err)
			continue
		}
		same(t, "supplier "+want.ID, got, want)
	}
	for _, id := range []string{"100999", "100070"} { // 100070 is a customer, not a supplier
		_, err := c.Supplier(ctx, id)
		var nf *erp.NotFoundError
		if !errors.As(err, &nf) || nf.Entity != erp.EntitySupplier || nf.ID != id {
			t.Errorf("Supplier(%s): got %v, want NotFoundError supplier", id, err)
		}
	}

	search := func(name string, limit int) []string {
		t.Helper()
		found, err := c.SearchSuppliers(ctx, name, limit)
		if err != nil || found == nil {
			t.Fatalf("SearchSuppliers(%q): got %v, %v", name, found, err)
		}
		ids := []string{}
		for _, s := range found {
			ids = append(ids, s.ID)
			if s.Country == "" {
				t.Errorf("SearchSuppliers(%q): supplier %s without a country", name, s.ID)
			}
		}
		return ids
	}
	tests := []struct {
		name  string
		limit int
		want  []string
	}{
		{"acme", 10, []string{"100042", "100044"}},
		{"ACME", 10, []string{"100042", "100044"}},
		{"Acme", 10, []string{"100042", "100044"}},
		{"cme", 10, []string{"100042", "100044"}},
		{"acme", 1, []string{"100042"}},
		{"nordwind", 10, []string{"100043"}},
		{"baltic", 10, []string{"100050"}},
		{"zeppelin", 10, []string{}},
		// The search term, not the name: "Industrial" is in a name only.
		{"industrial", 10, []string{}},
	}
	for _, tt := range tests {
		if got := search(tt.name, tt.limit); !slices.Equal(got, tt.want) {
			t.Errorf("SearchSuppliers(%q, %d): got %q, want %q", tt.name, tt.limit, got, tt.want)
		}
	}
}
