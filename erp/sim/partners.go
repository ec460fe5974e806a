package sim

import (
	"strconv"
	"time"
)

// Row renderers of API_BUSINESS_PARTNER's A_BusinessPartner and
// A_BusinessPartnerAddress, in SAP's property order.

func partnerRow(bp *businessPartner) obj {
	return obj{
		{"BusinessPartner", bp.id},
		{"Customer", bp.customer},
		{"Supplier", bp.supplier},
		{"BusinessPartnerCategory", bp.category},
		{"BusinessPartnerFullName", bp.fullName()},
		{"BusinessPartnerName", bp.fullName()},
		{"OrganizationBPName1", bp.name1},
		{"OrganizationBPName2", bp.name2},
		{"SearchTerm1", bp.searchTerm1},
		{"SearchTerm2", bp.searchTerm2},
	}
}

func partnerAddressRow(bp *businessPartner, a bpAddress) obj {
	return obj{
		{"BusinessPartner", bp.id},
		{"AddressID", a.id},
		{"ValidityStartDate", wireDateTimeOffset(a.validFrom)},
		{"ValidityEndDate", wireDateTimeOffset(a.validTo)},
		{"CityName", a.city},
		{"Country", a.country},
		{"HouseNumber", a.house},
		{"PostalCode", a.postalCode},
		{"StreetName", a.street},
	}
}

// wireDateTimeOffset formats t as an OData v2 JSON Edm.DateTimeOffset,
// which SAP's gateway writes with the offset: "/Date(ms+0000)/".
func wireDateTimeOffset(t time.Time) string {
	return "/Date(" + strconv.FormatInt(t.UnixMilli(), 10) + "+0000)/"
}

// openEnd is the validity end SAP gives a record valid until further
// notice: 9999-12-31 23:59:59 UTC.
var openEnd = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)
