package sap

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

// The states of a service as its $metadata shows it.
const (
	// ServiceOK: the service answers with its $metadata and declares what
	// the gateway calls.
	ServiceOK = "ok"
	// ServiceNoPost: API_SUPPLIERINVOICE_PROCESS_SRV answers but declares
	// no function import Post (an older release): invoices cannot be
	// posted.
	ServiceNoPost = "no_post"
	// ServiceNotFound: 404, the service is not published at the URL or
	// not activated. Every call to it then fails at once as a fault of
	// configuration, without reaching the ERP, until a read of its
	// $metadata succeeds.
	ServiceNotFound = "not_found"
	// ServiceUnauthorized: 401, the credentials are refused.
	ServiceUnauthorized = "unauthorized"
	// ServiceForbidden: 403, the user lacks the authorisation for the
	// service (on S/4HANA Cloud: it is not in the communication
	// arrangement).
	ServiceForbidden = "forbidden"
	// ServiceTokenRefused: the OAuth 2.0 token endpoint refused the
	// client.
	ServiceTokenRefused = "token_refused"
	// ServiceTLSFailed: the TLS handshake failed: the ERP's certificate is
	// not trusted, or the ERP refused the client certificate.
	ServiceTLSFailed = "tls_failed"
	// ServiceInvalid: the answer was no $metadata document, as from a
	// login page.
	ServiceInvalid = "invalid"
	// ServiceUnreachable: no answer, a timeout, a 429 or a 5xx.
	ServiceUnreachable = "unreachable"
	// ServiceFailed: any other answer.
	ServiceFailed = "failed"
)

// postFunction is the function import that posts a supplier invoice.
const postFunction = "Post"

// MetadataRecheck is how long ServiceStatus waits after a read of the
// $metadata that found a service not ok before it starts another.
const MetadataRecheck = time.Minute

// ServiceInfo is what one service's $metadata told the gateway.
type ServiceInfo struct {
	// Status is one of the Service* states.
	Status string
	// EntitySets and Functions are the entity sets and function imports
	// the service declares, sorted; empty when it could not be read.
	EntitySets []string
	Functions  []string
	// Err is why the service is not ok, for the log; nil when it is.
	Err error
}

// Declares reports whether the service declares the function import.
func (i ServiceInfo) Declares(function string) bool {
	_, found := slices.BinarySearch(i.Functions, function)
	return found
}

// metadataCache holds the last read of every service's $metadata; the
// zero value has none.
type metadataCache struct {
	mu      sync.Mutex
	infos   map[erp.Service]ServiceInfo // nil before the first read
	at      time.Time                   // when the last read ended
	reading bool                        // a read started by recheckLocked runs
	now     func() time.Time            // nil means time.Now
	// missing holds the services a read found missing and no later read
	// has found since; nil when there are none. It is read without mu on
	// every call, and replaced, never changed.
	missing atomic.Pointer[map[erp.Service]bool]
}

func (m *metadataCache) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// ReadMetadata reads the $metadata of every service the gateway calls, at
// once, and keeps what it found for ServiceStatus, CanPost and the calls
// themselves: a call to a service it found missing fails without reaching
// the ERP. The error is nil when every service is ok, else it joins why
// each other is not; the map always has every service.
func (c *Client) ReadMetadata(ctx context.Context) (map[erp.Service]ServiceInfo, error) {
	infos := make(map[erp.Service]ServiceInfo, len(erp.Services))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, svc := range erp.Services {
		wg.Go(func() {
			info := c.readService(ctx, svc)
			mu.Lock()
			infos[svc] = info
			mu.Unlock()
		})
	}
	wg.Wait()

	c.meta.mu.Lock()
	c.meta.infos = infos
	c.meta.at = c.meta.clock()
	c.meta.setMissing(infos)
	c.meta.mu.Unlock()

	var errs []error
	for _, svc := range erp.Services {
		if err := infos[svc].Err; err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", svc, infos[svc].Status, err))
		}
	}
	return cloneInfos(infos), errors.Join(errs...)
}

// setMissing records which services infos, a new read, found missing. A
// service stays missing until a read gets its $metadata: a read that got
// no answer, or one that says nothing of the service (a 401, a login
// page), does not find it.
func (m *metadataCache) setMissing(infos map[erp.Service]ServiceInfo) {
	var before map[erp.Service]bool
	if p := m.missing.Load(); p != nil {
		before = *p
	}
	var missing map[erp.Service]bool
	for _, svc := range erp.Services {
		switch infos[svc].Status {
		case ServiceOK, ServiceNoPost:
			continue
		case ServiceNotFound:
		default:
			if !before[svc] {
				continue
			}
		}
		if missing == nil {
			missing = make(map[erp.Service]bool, len(erp.Services))
		}
		missing[svc] = true
	}
	if missing == nil {
		m.missing.Store(nil)
		return
	}
	m.missing.Store(&missing)
}

// refuseMissing fails a call to a service that the last read of the
// $metadata found missing, before it reaches the ERP: on a system where
// the service is not published, whatever answers in its place (a Web
// Dispatcher's 404 page, another service's error) must not be read as a
// business answer. Each refusal may start a new read, as ServiceStatus
// does, so that the service is called again once it is published even
// when nothing asks for the readiness.
func (c *Client) refuseMissing(r request) error {
	p := c.meta.missing.Load()
	if p == nil || r.metadata || !(*p)[r.call.Service] {
		return nil
	}
	c.meta.mu.Lock()
	c.recheckLocked()
	c.meta.mu.Unlock()
	return r.upstream(http.StatusNotFound, func(up *erp.UpstreamError) {
		up.Config = true
		up.Text = "not called: the last read of " + servicePaths[r.call.Service] +
			"'s $metadata found the service missing (404); it is called again once a read finds it"
	})
}

// readService reads one service's $metadata.
func (c *Client) readService(ctx context.Context, svc erp.Service) ServiceInfo {
	r := request{
		call:     retry.Call{Service: svc, Operation: "read metadata"},
		method:   http.MethodGet,
		url:      c.url(svc, "$metadata"),
		header:   http.Header{"Accept": {"application/xml"}},
		root:     true,
		metadata: true,
	}
	var info ServiceInfo
	_, err := c.do(ctx, r, func(_ http.Header, body []byte) error {
		sets, functions, err := parseMetadata(body)
		if err != nil {
			return err
		}
		info.EntitySets, info.Functions = sets, functions
		return nil
	})
	if err != nil {
		return ServiceInfo{Status: metadataStatus(err), Err: err}
	}
	info.Status = ServiceOK
	if svc == erp.ServiceSupplierInvoice && !info.Declares(postFunction) {
		info.Status = ServiceNoPost
		info.Err = errors.New("the $metadata declares no function import " + postFunction)
	}
	return info
}

// metadataStatus names the state of a service whose $metadata read failed.
func metadataStatus(err error) string {
	var up *erp.UpstreamError
	if !errors.As(err, &up) {
		return ServiceFailed
	}
	var retrieve *oauth2.RetrieveError
	switch {
	case up.Status == http.StatusNotFound:
		return ServiceNotFound
	case up.Status == http.StatusUnauthorized:
		return ServiceUnauthorized
	case up.Status == http.StatusForbidden:
		return ServiceForbidden
	case up.Config && errors.As(err, &retrieve):
		return ServiceTokenRefused
	case up.Status >= 200 && up.Status < 300:
		return ServiceInvalid
	case up.Config:
		return ServiceTLSFailed
	case up.Status == 0 || up.Transient || up.Status >= 500:
		return ServiceUnreachable
	}
	return ServiceFailed
}

// parseMetadata reads an EDMX document: the names of its entity sets and
// function imports, sorted. A body that is not EDMX is an error.
func parseMetadata(body []byte) (sets, functions []string, err error) {
	d := xml.NewDecoder(bytes.NewReader(body))
	root := true
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("$metadata: %w", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root {
			if el.Name.Local != "Edmx" {
				return nil, nil, fmt.Errorf("$metadata: the document is <%s>, not an EDMX document", el.Name.Local)
			}
			root = false
			continue
		}
		switch el.Name.Local {
		case "EntitySet":
			sets = appendName(sets, el)
		case "FunctionImport":
			functions = appendName(functions, el)
		}
	}
	if root {
		return nil, nil, errors.New("$metadata: empty document")
	}
	slices.Sort(sets)
	slices.Sort(functions)
	return slices.Compact(sets), slices.Compact(functions), nil
}

func appendName(names []string, el xml.StartElement) []string {
	for _, a := range el.Attr {
		if a.Name.Local == "Name" && a.Name.Space == "" && a.Value != "" {
			return append(names, a.Value)
		}
	}
	return names
}

// ServiceStatus returns the state of every service as the last read of the
// $metadata found it (one of the Service* states), and false before any
// read. While a service is not ok, it starts a new read in the background
// once MetadataRecheck has passed since the last one, so that a system
// that was down or misconfigured at the start is seen again when fixed;
// the read's outcome is logged when a state changes.
func (c *Client) ServiceStatus() (map[erp.Service]string, bool) {
	m := &c.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.infos == nil {
		return nil, false
	}
	c.recheckLocked()
	return states(m.infos), true
}

// states is each service's state in infos.
func states(infos map[erp.Service]ServiceInfo) map[erp.Service]string {
	out := make(map[erp.Service]string, len(infos))
	for svc, info := range infos {
		out[svc] = info.Status
	}
	return out
}

// recheckLocked starts a new read of the $metadata in the background when
// a service is not ok, none runs, and MetadataRecheck has passed since
// the last one. c.meta.mu must be held.
func (c *Client) recheckLocked() {
	m := &c.meta
	if m.reading || m.infos == nil || m.clock().Sub(m.at) < MetadataRecheck {
		return
	}
	for _, info := range m.infos {
		if info.Status != ServiceOK {
			m.reading = true
			go c.rereadMetadata(states(m.infos))
			return
		}
	}
}

// rereadMetadata reads the $metadata again and logs the states that
// changed from before.
func (c *Client) rereadMetadata(before map[erp.Service]string) {
	defer func() {
		c.meta.mu.Lock()
		c.meta.reading = false
		c.meta.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*c.runner.Policy().CallTimeout)
	defer cancel()
	infos, _ := c.ReadMetadata(ctx)
	for _, svc := range erp.Services {
		info := infos[svc]
		if info.Status == before[svc] {
			continue
		}
		if info.Err != nil {
			c.log.WarnContext(ctx, "sap: service state changed", "service", string(svc), "was", before[svc],
				"state", info.Status, "error", info.Err)
		} else {
			c.log.InfoContext(ctx, "sap: service state changed", "service", string(svc), "was", before[svc],
				"state", info.Status)
		}
	}
}

// CanPost reports whether supplier invoices can be posted with the Post
// function import. It is nil unless the last read of
// API_SUPPLIERINVOICE_PROCESS_SRV's $metadata found the service without
// Post: then it is an *erp.UpstreamError with Config set, and the posting
// must call nothing. Before any read, or when the read failed, it is nil:
// the call itself finds out.
func (c *Client) CanPost() error {
	c.meta.mu.Lock()
	info, ok := c.meta.infos[erp.ServiceSupplierInvoice]
	c.meta.mu.Unlock()
	if !ok || info.Status != ServiceNoPost {
		return nil
	}
	return &erp.UpstreamError{Service: erp.ServiceSupplierInvoice, Operation: "post invoice", Write: true,
		Config: true, Text: "API_SUPPLIERINVOICE_PROCESS_SRV's $metadata declares no function import Post"}
}

func cloneInfos(in map[erp.Service]ServiceInfo) map[erp.Service]ServiceInfo {
	out := make(map[erp.Service]ServiceInfo, len(in))
	for k, v := range in {
		v.EntitySets = slices.Clone(v.EntitySets)
		v.Functions = slices.Clone(v.Functions)
		out[k] = v
	}
	return out
}
