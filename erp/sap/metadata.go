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
	// not activated.
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
	reading bool                        // a read started by ServiceStatus runs
	now     func() time.Time            // nil means time.Now
}

func (m *metadataCache) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// ReadMetadata reads the $metadata of every service the gateway calls, at
// once, and keeps what it found for ServiceStatus and CanPost. The error is
// nil when every service is ok, else it joins why each other is not; the
// map always has every service.
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
	c.meta.mu.Unlock()

	var errs []error
	for _, svc := range erp.Services {
		if err := infos[svc].Err; err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", svc, infos[svc].Status, err))
		}
	}
	return cloneInfos(infos), errors.Join(errs...)
}

// readService reads one service's $metadata.
func (c *Client) readService(ctx context.Context, svc erp.Service) ServiceInfo {
	r := request{
		call:   retry.Call{Service: svc, Operation: "read metadata"},
		method: http.MethodGet,
		url:    c.url(svc, "$metadata"),
		header: http.Header{"Accept": {"application/xml"}},
		root:   true,
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
	case up.Config:
		return ServiceTLSFailed
	case up.Status >= 200 && up.Status < 300:
		return ServiceInvalid
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
	out := make(map[erp.Service]string, len(m.infos))
	allOK := true
	for svc, info := range m.infos {
		out[svc] = info.Status
		allOK = allOK && info.Status == ServiceOK
	}
	if !allOK && !m.reading && m.clock().Sub(m.at) >= MetadataRecheck {
		m.reading = true
		go c.rereadMetadata(out)
	}
	return out, true
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
