package sim

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/erpgate/erpgate/erp"
)

// servicePrefix is where SAP's gateway publishes OData v2 services.
const servicePrefix = "/sap/opu/odata/sap/"

// service is one OData service with its entity sets and function imports.
type service struct {
	name      string
	id        erp.Service
	component string // application component, for error envelopes
	sets      map[string]*entitySet
	setOrder  []string
	functions map[string]functionImport
}

// entitySet describes one entity set of a service. Entity sets are
// read-only: writes go to function imports.
type entitySet struct {
	name     string
	typ      string // entity type name within the service namespace
	keys     []string
	navs     []nav
	template obj // a zero entity: the properties and their JSON types
	rows     func(st *state) []obj
	notFound func(segment string, key map[string]string) *apiError
}

// nav is a navigation property to the entities of target whose join
// properties equal the parent's. single is a navigation of multiplicity 1
// or 0..1: expanded, it is the entity itself or null, not a results list.
type nav struct {
	name   string
	target string
	join   []string
	single bool
}

// functionImport is an OData v2 function import; every one the simulator has
// is a POST and a write.
type functionImport func(s *Server, st *state, w writeRequest) (response, *apiError)

// writeRequest is what a write handler gets from the HTTP request.
type writeRequest struct {
	svc   *service
	query url.Values
	body  []byte
	base  string // service base URL, for Location headers
}

// resourceNotFound is the gateway's answer for a missing entity.
func resourceNotFound(segment string, _ map[string]string) *apiError {
	return newError(http.StatusNotFound, "/IWBEP/CM_MGW_RT/020",
		fmt.Sprintf("Resource not found for segment '%s'", segment))
}

func newService(name string, id erp.Service, component string, sets ...*entitySet) *service {
	svc := &service{name: name, id: id, component: component, sets: map[string]*entitySet{}, functions: map[string]functionImport{}}
	for _, set := range sets {
		if set.notFound == nil {
			set.notFound = resourceNotFound
		}
		svc.sets[set.name] = set
		svc.setOrder = append(svc.setOrder, set.name)
	}
	return svc
}

// services builds the four OData services the simulator publishes, keyed by
// technical service name.
func services() map[string]*service {
	invoices := newService("API_SUPPLIERINVOICE_PROCESS_SRV", erp.ServiceSupplierInvoice, "MM-IV-INT",
		&entitySet{
			name: "A_SupplierInvoice", typ: "A_SupplierInvoiceType",
			keys:     []string{"SupplierInvoice", "FiscalYear"},
			navs:     []nav{{name: "to_SuplrInvcItemPurOrdRef", target: "A_SuplrInvcItemPurOrdRef", join: []string{"SupplierInvoice", "FiscalYear"}}},
			template: invoiceRow(&invoice{}),
			rows: func(st *state) []obj {
				out := make([]obj, 0, len(st.invoices))
				for _, inv := range st.invoices {
					out = append(out, invoiceRow(inv))
				}
				return out
			},
		},
		&entitySet{
			name: "A_SuplrInvcItemPurOrdRef", typ: "A_SuplrInvcItemPurOrdRefType",
			keys:     []string{"SupplierInvoice", "FiscalYear", "SupplierInvoiceItem", "PurchaseOrder", "PurchaseOrderItem"},
			template: invoiceItemRow(&invoice{}, invoiceLine{}),
			rows: func(st *state) []obj {
				var out []obj
				for _, inv := range st.invoices {
					for _, l := range inv.lines {
						out = append(out, invoiceItemRow(inv, l))
					}
				}
				return out
			},
		},
	)
	invoices.functions["Post"] = (*Server).post
	invoices.functions["Release"] = (*Server).release

	orders := newService("API_PURCHASEORDER_PROCESS_SRV", erp.ServicePurchaseOrder, "MM-PUR-PO",
		&entitySet{
			name: "A_PurchaseOrder", typ: "A_PurchaseOrderType",
			keys:     []string{"PurchaseOrder"},
			navs:     []nav{{name: "to_PurchaseOrderItem", target: "A_PurchaseOrderItem", join: []string{"PurchaseOrder"}}},
			template: orderRow(&purchaseOrder{}),
			rows: func(st *state) []obj {
				out := make([]obj, 0, len(st.orders))
				for _, po := range st.orders {
					out = append(out, orderRow(po))
				}
				return out
			},
			notFound: func(_ string, key map[string]string) *apiError {
				return newError(http.StatusNotFound, "06/019", fmt.Sprintf("Purchase order %s does not exist", key["PurchaseOrder"]))
			},
		},
		&entitySet{
			name: "A_PurchaseOrderItem", typ: "A_PurchaseOrderItemType",
			keys:     []string{"PurchaseOrder", "PurchaseOrderItem"},
			template: orderItemRow(&purchaseOrder{}, poItem{}),
			rows: func(st *state) []obj {
				var out []obj
				for _, po := range st.orders {
					for _, it := range po.items {
						out = append(out, orderItemRow(po, it))
					}
				}
				return out
			},
		},
	)

	materials := newService("API_MATERIAL_DOCUMENT_SRV", erp.ServiceMaterialDocument, "MM-IM-GF",
		&entitySet{
			name: "A_MaterialDocumentHeader", typ: "A_MaterialDocumentHeaderType",
			keys:     []string{"MaterialDocumentYear", "MaterialDocument"},
			navs:     []nav{{name: "to_MaterialDocumentItem", target: "A_MaterialDocumentItem", join: []string{"MaterialDocumentYear", "MaterialDocument"}}},
			template: materialDocumentRow(&materialDocument{}),
			rows: func(st *state) []obj {
				out := make([]obj, 0, len(st.materialDocs))
				for _, h := range st.materialDocs {
					out = append(out, materialDocumentRow(h))
				}
				return out
			},
		},
		&entitySet{
			name: "A_MaterialDocumentItem", typ: "A_MaterialDocumentItemType",
			keys: []string{"MaterialDocumentYear", "MaterialDocument", "MaterialDocumentItem"},
			navs: []nav{{name: "to_MaterialDocumentHeader", target: "A_MaterialDocumentHeader",
				join: []string{"MaterialDocumentYear", "MaterialDocument"}, single: true}},
			template: receiptRow(&receipt{header: &materialDocument{}}),
			rows: func(st *state) []obj {
				out := make([]obj, 0, len(st.receipts))
				for _, r := range st.receipts {
					out = append(out, receiptRow(r))
				}
				return out
			},
		},
	)

	partners := newService("API_BUSINESS_PARTNER", erp.ServiceBusinessPartner, "LO-MD-BP",
		&entitySet{
			name: "A_BusinessPartner", typ: "A_BusinessPartnerType",
			keys: []string{"BusinessPartner"},
			navs: []nav{
				{name: "to_BusinessPartnerAddress", target: "A_BusinessPartnerAddress", join: []string{"BusinessPartner"}},
				{name: "to_Supplier", target: "A_Supplier", join: []string{"Supplier"}, single: true},
			},
			template: partnerRow(&businessPartner{}),
			rows: func(st *state) []obj {
				out := make([]obj, 0, len(st.partners))
				for _, bp := range st.partners {
					out = append(out, partnerRow(bp))
				}
				return out
			},
		},
		&entitySet{
			name: "A_BusinessPartnerAddress", typ: "A_BusinessPartnerAddressType",
			keys:     []string{"BusinessPartner", "AddressID"},
			template: partnerAddressRow(&businessPartner{}, bpAddress{}),
			rows: func(st *state) []obj {
				var out []obj
				for _, bp := range st.partners {
					for _, a := range bp.addresses {
						out = append(out, partnerAddressRow(bp, a))
					}
				}
				return out
			},
		},
		&entitySet{
			name: "A_Supplier", typ: "A_SupplierType",
			keys:     []string{"Supplier"},
			template: supplierRow(&supplier{}),
			rows: func(st *state) []obj {
				out := make([]obj, 0, len(st.suppliers))
				for _, s := range st.suppliers {
					out = append(out, supplierRow(s))
				}
				return out
			},
		},
	)

	all := map[string]*service{}
	for _, svc := range []*service{invoices, orders, materials, partners} {
		all[svc.name] = svc
	}
	return all
}
