package sap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// edmx is a $metadata document with the entity sets and function imports.
func edmx(sets []string, functions ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx"` +
		` xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" xmlns:sap="http://www.sap.com/Protocols/SAPData">` +
		`<edmx:DataServices m:DataServiceVersion="2.0"><Schema Namespace="S" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">` +
		`<EntityType Name="T" sap:content-version="1"><Key><PropertyRef Name="K"/></Key><Property Name="K" Type="Edm.String"/></EntityType>` +
		`<EntityContainer Name="S_Entities" m:IsDefaultEntityContainer="true">`)
	for _, s := range sets {
		fmt.Fprintf(&b, `<EntitySet Name="%s" EntityType="S.T" sap:creatable="false"/>`, s)
	}
	for _, f := range functions {
		fmt.Fprintf(&b, `<FunctionImport Name="%s" ReturnType="S.T" m:HttpMethod="POST"><Parameter Name="SupplierInvoice" Type="Edm.String" Mode="In"/></FunctionImport>`, f)
	}
	b.WriteString(`</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`)
	return b.String()
}

func TestReadMetadataOfTheSimulator(t *testing.T) {
	_, c := newSim(t, sim.Options{}, retry.Policy{})
	if _, read := c.ServiceStatus(); read {
		t.Fatal("ServiceStatus reports states before any read")
	}
	if err := c.CanPost(); err != nil {
		t.Fatalf("CanPost before any read: %v, want nil", err)
	}
	infos, err := c.ReadMetadata(context.Background())
	if err != nil {
		t.Fatalf("ReadMetadata: %v", err)
	}
	if len(infos) != len(erp.Services) {
		t.Fatalf("%d services, want %d", len(infos), len(erp.Services))
	}
	for svc, info := range infos {
		if info.Status != ServiceOK || info.Err != nil || len(info.EntitySets) == 0 {
			t.Errorf("%s: %+v, want ok with its entity sets", svc, info)
		}
	}
	inv := infos[erp.ServiceSupplierInvoice]
	if !inv.Declares("Post") || !slices.Contains(inv.EntitySets, "A_SupplierInvoice") {
		t.Errorf("supplier invoice service: %+v, want Post and A_SupplierInvoice", inv)
	}
	if err := c.CanPost(); err != nil {
		t.Errorf("CanPost: %v, want nil", err)
	}
	states, read := c.ServiceStatus()
	if !read || states[erp.ServiceBusinessPartner] != ServiceOK || len(states) != len(erp.Services) {
		t.Errorf("ServiceStatus = %v %v", states, read)
	}
}

// metaServer answers $metadata of each service with status and body from
// answer, and counts the reads.
type metaServer struct {
	*fakeSAP
	mu     sync.Mutex
	answer func(service string) (int, string)
	reads  int
}

func newMetaServer(t *testing.T, answer func(service string) (int, string)) *metaServer {
	m := &metaServer{answer: answer}
	m.fakeSAP = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/$metadata") {
			writeJSON(w, http.StatusNotFound, `{}`)
			return
		}
		svc := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, odataRoot), "/$metadata")
		m.mu.Lock()
		m.reads++
		answer := m.answer
		m.mu.Unlock()
		status, body := answer(svc)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	})
	return m
}

func (m *metaServer) set(answer func(string) (int, string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.answer = answer
}

func (m *metaServer) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reads
}

// allOK answers every service's $metadata, the supplier invoice service
// with functions.
func allOK(functions ...string) func(string) (int, string) {
	return func(svc string) (int, string) {
		if svc == "API_SUPPLIERINVOICE_PROCESS_SRV" {
			return http.StatusOK, edmx([]string{"A_SupplierInvoice"}, functions...)
		}
		return http.StatusOK, edmx([]string{"A_Set"})
	}
}

func TestReadMetadataWithoutPost(t *testing.T) {
	m := newMetaServer(t, allOK("Release", "Cancel"))
	c := m.client(Options{Client: "100"})
	infos, err := c.ReadMetadata(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Post") {
		t.Errorf("ReadMetadata error %v, want it to say Post is missing", err)
	}
	if got := infos[erp.ServiceSupplierInvoice]; got.Status != ServiceNoPost || !got.Declares("Release") || got.Declares("Post") {
		t.Errorf("supplier invoice service: %+v, want no_post", got)
	}
	if got := infos[erp.ServicePurchaseOrder].Status; got != ServiceOK {
		t.Errorf("purchase order service: %s, want ok", got)
	}
	err = c.CanPost()
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Config || up.Service != erp.ServiceSupplierInvoice {
		t.Fatalf("CanPost = %v, want a configuration fault of the supplier invoice service", err)
	}
	if e := errmap.Map(err); e.Code != errmap.ERPConfiguration || e.NextAction != errmap.StopAndEscalate {
		t.Errorf("CanPost maps to %s %s, want ERP_CONFIGURATION stop_and_escalate", e.Code, e.NextAction)
	}
	for _, s := range m.requests {
		if s.header.Get("Accept") != "application/xml" || fmt.Sprint(s.query["sap-client"]) != "[100]" {
			t.Errorf("%s: Accept %q sap-client %v, want application/xml and 100", s.path, s.header.Get("Accept"), s.query["sap-client"])
		}
	}
	// A system that gains Post is seen on the next read.
	m.set(allOK("Post", "Release"))
	if _, err := c.ReadMetadata(context.Background()); err != nil || c.CanPost() != nil {
		t.Errorf("after an upgrade: %v, CanPost %v", err, c.CanPost())
	}
}

func TestReadMetadataStates(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string
	}{
		{http.StatusNotFound, `{"error":{"code":"/IWFND/MED/170","message":{"lang":"en","value":"No service found"}}}`, ServiceNotFound},
		{http.StatusUnauthorized, `Unauthorized`, ServiceUnauthorized},
		{http.StatusForbidden, `{"error":{"code":"/IWFND/CM_CONSUMER/004"}}`, ServiceForbidden},
		{http.StatusOK, `<!DOCTYPE html><html><body>Logon</body></html>`, ServiceInvalid},
		{http.StatusOK, ``, ServiceInvalid},
		{http.StatusServiceUnavailable, `down`, ServiceUnreachable},
		{http.StatusBadRequest, `{}`, ServiceFailed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.want), func(t *testing.T) {
			m := newMetaServer(t, func(svc string) (int, string) {
				if svc == "API_MATERIAL_DOCUMENT_SRV" {
					return tt.status, tt.body
				}
				return allOK("Post")(svc)
			})
			infos, err := m.client(Options{}).ReadMetadata(context.Background())
			got := infos[erp.ServiceMaterialDocument]
			if got.Status != tt.want || got.Err == nil || err == nil {
				t.Errorf("material document service: %+v (%v), want %s", got, err, tt.want)
			}
			if infos[erp.ServiceSupplierInvoice].Status != ServiceOK {
				t.Errorf("the other services: %+v", infos)
			}
			if tt.status == http.StatusNotFound || tt.status == http.StatusForbidden {
				var up *erp.UpstreamError
				if !errors.As(got.Err, &up) || !up.Config {
					t.Errorf("a %d on $metadata is not a configuration fault: %v", tt.status, got.Err)
				}
			}
		})
	}
	// A system that does not answer at all.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := New(url, Options{Runner: retry.New(oneAttempt(time.Second), nil)})
	if err != nil {
		t.Fatal(err)
	}
	infos, err := c.ReadMetadata(context.Background())
	if err == nil || infos[erp.ServiceSupplierInvoice].Status != ServiceUnreachable {
		t.Errorf("unreachable ERP: %v %v", infos, err)
	}
	if c.CanPost() != nil {
		t.Errorf("CanPost with the ERP unreachable: %v, want nil (the call finds out)", c.CanPost())
	}
}

// TestServiceStatusRereads: while a service is not ok, ServiceStatus
// reads the $metadata again, at most once per MetadataRecheck.
func TestServiceStatusRereads(t *testing.T) {
	m := newMetaServer(t, func(svc string) (int, string) {
		if svc == "API_BUSINESS_PARTNER" {
			return http.StatusServiceUnavailable, "down"
		}
		return allOK("Post")(svc)
	})
	c := m.client(Options{})
	var clockMu sync.Mutex
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	c.meta.now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }

	if _, err := c.ReadMetadata(context.Background()); err == nil {
		t.Fatal("ReadMetadata: nil error with a service down")
	}
	first := m.count()
	states, _ := c.ServiceStatus()
	if states[erp.ServiceBusinessPartner] != ServiceUnreachable {
		t.Fatalf("states %v, want business_partner unreachable", states)
	}
	advance(30 * time.Second)
	c.ServiceStatus()
	time.Sleep(50 * time.Millisecond)
	if m.count() != first {
		t.Fatalf("read again within a minute: %d reads, want %d", m.count(), first)
	}

	m.set(allOK("Post"))
	advance(31 * time.Second)
	for range 5 {
		c.ServiceStatus() // one read starts, however often it is asked
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		states, _ = c.ServiceStatus()
		if states[erp.ServiceBusinessPartner] == ServiceOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("states %v after the service came back, want it ok", states)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := m.count() - first; got != len(erp.Services) {
		t.Errorf("%d $metadata reads for the recheck, want one per service (%d)", got, len(erp.Services))
	}
	// Once every service is ok, nothing is read again.
	advance(time.Hour)
	c.ServiceStatus()
	time.Sleep(50 * time.Millisecond)
	if got := m.count() - first; got != len(erp.Services) {
		t.Errorf("%d reads after all were ok, want none more", got-len(erp.Services))
	}
}

func TestParseMetadata(t *testing.T) {
	sets, fns, err := parseMetadata([]byte(edmx([]string{"B", "A", "A"}, "Release", "Post")))
	if err != nil || fmt.Sprint(sets) != "[A B]" || fmt.Sprint(fns) != "[Post Release]" {
		t.Errorf("got %v %v %v", sets, fns, err)
	}
	for _, body := range []string{``, `<html><body>Logon</body></html>`, `{"d":{}}`, `<edmx:Edmx><unclosed`} {
		if _, _, err := parseMetadata([]byte(body)); err == nil {
			t.Errorf("%q read as $metadata", body)
		}
	}
}

// TestCSRFFetch404IsConfiguration: a write whose token fetch finds no
// service is a configuration fault, not the entity's 404; an entity read's
// 404 stays NotFound.
func TestCSRFFetch404IsConfiguration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, `{"error":{"code":"/IWFND/MED/170","message":{"lang":"en","value":"No service found for namespace '/SAP/', name 'API_SUPPLIERINVOICE_PROCESS_SRV'"}}}`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, Options{Runner: quickRunner()})
	if err != nil {
		t.Fatal(err)
	}
	r := request{call: retry.Call{Service: erp.ServiceSupplierInvoice, Operation: "post invoice", Write: true},
		method: http.MethodPost, url: c.url(erp.ServiceSupplierInvoice, "Post"),
		keys:     map[string]string{"invoice_id": "5105600101"},
		notFound: &erp.NotFoundError{Entity: erp.EntityInvoice, ID: "5105600101"}}
	_, err = c.write(context.Background(), r, nil)
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Config || up.Status != http.StatusNotFound || up.Operation != "fetch csrf token" {
		t.Fatalf("got %v, want a configuration fault of the token fetch", err)
	}
	if e := errmap.Map(err); e.Code != errmap.ERPConfiguration || e.Details["service"] != "supplier_invoice" {
		t.Errorf("maps to %s %v, want ERP_CONFIGURATION of supplier_invoice", e.Code, e.Details)
	}
	// The same 404 on an entity read names the service too.
	read := request{call: retry.Call{Service: erp.ServicePurchaseOrder, Operation: "read purchase order"}, method: http.MethodGet,
		url:  c.url(erp.ServicePurchaseOrder, entityKey("A_PurchaseOrder", "4500018822")),
		keys: map[string]string{"po_id": "4500018822"}, notFound: &erp.NotFoundError{Entity: erp.EntityPurchaseOrder, ID: "4500018822"}}
	if _, err := c.do(context.Background(), read, nil); !errors.As(err, &up) || !up.Config {
		t.Errorf("entity read on a missing service: %v, want a configuration fault", err)
	}
	// An entity's own 404 is NotFound.
	f := newFake(t, respond(http.StatusNotFound, `{"error":{"code":"/IWBEP/CM_MGW_RT/020","message":{"lang":"en","value":"Resource not found"}}}`))
	fc := f.client(Options{})
	read.url = fc.url(erp.ServicePurchaseOrder, entityKey("A_PurchaseOrder", "4500018822"))
	var nf *erp.NotFoundError
	if _, err := fc.do(context.Background(), read, nil); !errors.As(err, &nf) {
		t.Errorf("entity 404: %v, want NotFound", err)
	}
}
