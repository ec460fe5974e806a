package sap

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// dispatcher404 is what a Web Dispatcher answers for a path it routes
// nowhere.
const dispatcher404 = `<html><head><title>404 Not Found</title></head><body>Service cannot be reached</body></html>`

// missingERP serves the $metadata of every service but those missing,
// which it answers with a Web Dispatcher's 404 page, as it does every
// other request to them; the other services answer their calls.
type missingERP struct {
	*fakeSAP
	mu      sync.Mutex
	missing map[string]bool // OData service name -> answered 404
	down    bool            // every $metadata read answers 503
}

func newMissingERP(t *testing.T, missing ...string) *missingERP {
	m := &missingERP{missing: map[string]bool{}}
	for _, svc := range missing {
		m.missing[svc] = true
	}
	m.fakeSAP = newFake(t, func(w http.ResponseWriter, r *http.Request) {
		svc, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, odataRoot), "/")
		m.mu.Lock()
		missing, down := m.missing[svc], m.down
		m.mu.Unlock()
		switch {
		case down && strings.HasSuffix(r.URL.Path, "/$metadata"):
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("Service Unavailable"))
		case missing:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(dispatcher404))
		case strings.HasSuffix(r.URL.Path, "/$metadata"):
			status, body := allOK("Post")(svc)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(status)
			w.Write([]byte(body))
		default:
			writeJSON(w, http.StatusOK, `{"d":{"results":[]}}`)
		}
	})
	return m
}

func (m *missingERP) set(svc string, missing bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.missing[svc] = missing
}

func (m *missingERP) setDown(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

// calls counts the requests that were no $metadata read.
func (m *missingERP) calls() int {
	n := 0
	for _, s := range m.requests() {
		if !strings.HasSuffix(s.path, "/$metadata") {
			n++
		}
	}
	return n
}

func (m *missingERP) requests() []seen {
	m.fakeSAP.mu.Lock()
	defer m.fakeSAP.mu.Unlock()
	return append([]seen(nil), m.fakeSAP.requests...)
}

// wantMissing holds err to a configuration fault of the service that
// reached no ERP, and to ERP_CONFIGURATION naming the service.
func wantMissing(t *testing.T, err error, svc erp.Service) {
	t.Helper()
	var up *erp.UpstreamError
	if !errors.As(err, &up) || !up.Config || up.Service != svc || up.Transient {
		t.Fatalf("got %v, want a configuration fault of %s", err, svc)
	}
	e := errmap.Map(err)
	if e.Code != errmap.ERPConfiguration || e.Details["service"] != string(svc) {
		t.Errorf("maps to %s %v, want ERP_CONFIGURATION naming %s", e.Code, e.Details, svc)
	}
}

// TestMissingServiceRefusesWithoutACall: a service whose $metadata the
// start-up read found missing fails every read and write at once, without
// a request to the ERP, while the other services are called; a later read
// that finds it lifts that.
func TestMissingServiceRefusesWithoutACall(t *testing.T) {
	m := newMissingERP(t, "API_BUSINESS_PARTNER", "API_SUPPLIERINVOICE_PROCESS_SRV")
	c := m.client(Options{})
	ctx := context.Background()
	infos, err := c.ReadMetadata(ctx)
	if err == nil || infos[erp.ServiceBusinessPartner].Status != ServiceNotFound {
		t.Fatalf("ReadMetadata: %v %v, want business_partner not_found", infos, err)
	}
	before := m.calls()

	_, err = c.Supplier(ctx, "100042")
	wantMissing(t, err, erp.ServiceBusinessPartner)
	_, err = c.SearchSuppliers(ctx, "Acme", 10)
	wantMissing(t, err, erp.ServiceBusinessPartner)
	_, err = c.Invoice(ctx, "5105600101")
	wantMissing(t, err, erp.ServiceSupplierInvoice)
	_, err = c.PostInvoice(ctx, erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "post-1")
	wantMissing(t, err, erp.ServiceSupplierInvoice)
	if e := errmap.Map(err); e.Details["invoice_id"] != "5105600101" {
		t.Errorf("refused post: details %v, want the invoice id", e.Details)
	}
	if n := m.calls() - before; n != 0 {
		t.Fatalf("%d requests reached the ERP for services found missing, want none", n)
	}
	// The services that are there are called.
	if _, err := c.GoodsReceipts(ctx, "4500018822", "10"); err != nil || m.calls() != before+1 {
		t.Errorf("a read of a service found ok: %v after %d requests, want it sent", err, m.calls()-before)
	}

	// Published now: the next read of the $metadata finds it, and calls
	// go out again.
	m.set("API_BUSINESS_PARTNER", false)
	m.set("API_SUPPLIERINVOICE_PROCESS_SRV", false)
	if _, err := c.ReadMetadata(ctx); err != nil {
		t.Fatal(err)
	}
	before = m.calls()
	if _, err := c.SearchSuppliers(ctx, "Acme", 10); err != nil {
		t.Errorf("search after the service was found: %v", err)
	}
	if m.calls() == before {
		t.Error("no request after the service was found")
	}
}

// TestMissingServiceNotMarkedByATransientFailure: a $metadata read that
// times out or answers 503 says nothing of whether the service exists: it
// neither marks a service missing nor lifts the mark.
func TestMissingServiceNotMarkedByATransientFailure(t *testing.T) {
	m := newMissingERP(t)
	m.setDown(true)
	c := m.client(Options{})
	ctx := context.Background()
	infos, err := c.ReadMetadata(ctx)
	if err == nil || infos[erp.ServiceBusinessPartner].Status != ServiceUnreachable {
		t.Fatalf("ReadMetadata: %v %v, want unreachable", infos, err)
	}
	before := m.calls()
	if _, err := c.SearchSuppliers(ctx, "Acme", 10); err != nil {
		t.Errorf("search after a 503 on $metadata: %v, want it sent", err)
	}
	if m.calls() != before+1 {
		t.Error("a 503 on $metadata kept the call from the ERP")
	}

	// A timeout does not mark it either.
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	slow := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/$metadata") {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		writeJSON(w, http.StatusOK, `{"d":{"results":[]}}`)
	})
	sc := slow.client(Options{Runner: retry.New(oneAttempt(150*time.Millisecond), nil)})
	infos, _ = sc.ReadMetadata(ctx)
	if infos[erp.ServiceBusinessPartner].Status != ServiceUnreachable {
		t.Fatalf("after a timeout: %v, want unreachable", infos)
	}
	if _, err := sc.SearchSuppliers(ctx, "Acme", 10); err != nil {
		t.Errorf("search after a $metadata timeout: %v, want it sent", err)
	}

	// Found missing, then a re-read that gets a 503: still missing.
	m.setDown(false)
	m.set("API_BUSINESS_PARTNER", true)
	if _, err := c.ReadMetadata(ctx); err == nil {
		t.Fatal("ReadMetadata: no error with a service missing")
	}
	m.setDown(true)
	if _, err := c.ReadMetadata(ctx); err == nil {
		t.Fatal("ReadMetadata: no error with the ERP down")
	}
	_, err = c.SearchSuppliers(ctx, "Acme", 10)
	wantMissing(t, err, erp.ServiceBusinessPartner)
}

// TestMissingServiceRecheckedByItsCalls: the /readyz re-check lifts the
// mark, and so do the refused calls themselves, which start the same
// re-read once MetadataRecheck has passed.
func TestMissingServiceRecheckedByItsCalls(t *testing.T) {
	for _, via := range []string{"readiness", "calls"} {
		t.Run(via, func(t *testing.T) {
			m := newMissingERP(t, "API_MATERIAL_DOCUMENT_SRV")
			c := m.client(Options{})
			var clockMu sync.Mutex
			now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			c.meta.now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
			ctx := context.Background()
			if _, err := c.ReadMetadata(ctx); err == nil {
				t.Fatal("ReadMetadata: no error with a service missing")
			}
			_, err := c.GoodsReceipts(ctx, "4500018822", "10")
			wantMissing(t, err, erp.ServiceMaterialDocument)

			m.set("API_MATERIAL_DOCUMENT_SRV", false)
			clockMu.Lock()
			now = now.Add(MetadataRecheck)
			clockMu.Unlock()
			deadline := time.Now().Add(5 * time.Second)
			for {
				var err error
				if via == "readiness" {
					if states, _ := c.ServiceStatus(); states[erp.ServiceMaterialDocument] == ServiceOK {
						_, err = c.GoodsReceipts(ctx, "4500018822", "10")
						if err != nil {
							t.Fatalf("read after the re-check found the service: %v", err)
						}
						break
					}
				} else if _, err = c.GoodsReceipts(ctx, "4500018822", "10"); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still refused after the service was published: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if states, _ := c.ServiceStatus(); states[erp.ServiceMaterialDocument] != ServiceOK {
				t.Errorf("states %v, want material_document ok", states)
			}
		})
	}
}
