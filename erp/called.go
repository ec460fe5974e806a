package erp

import (
	"context"
	"strings"
	"sync"
)

// CalledKey is the context key of a *Called: the ERP's services and
// resources that the calls made in the context reached, which the
// gateway's access log lists for each request. A context type that
// answers Value itself may answer this key with a *Called it holds.
type CalledKey struct{}

// Target is one resource of the ERP a call reached: the service (SAP's
// OData service, "API_SUPPLIERINVOICE_PROCESS_SRV") and the entity set or
// function import in it ("A_SupplierInvoice"), "" for the service itself.
type Target struct {
	Service, Resource string
}

// String is the target as the access log writes it: service/resource, or
// the service alone.
func (t Target) String() string {
	if t.Resource == "" {
		return t.Service
	}
	return t.Service + "/" + t.Resource
}

// Called collects the targets of the ERP calls made for one request, each
// once, in the order first called. Its zero value is ready; it is safe for
// concurrent use, as a three-way match reads in parallel.
type Called struct {
	mu   sync.Mutex
	list []Target
}

// Add records a call of resource in service, unless it is recorded.
func (c *Called) Add(service, resource string) {
	t := Target{Service: service, Resource: resource}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, have := range c.list {
		if have == t {
			return
		}
	}
	c.list = append(c.list, t)
}

// Targets returns a copy of what was called, in the order first called.
func (c *Called) Targets() []Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.list) == 0 {
		return nil
	}
	return append([]Target(nil), c.list...)
}

// String is what was called, in the order first called, separated by
// commas: "API_SUPPLIERINVOICE_PROCESS_SRV/A_SupplierInvoice,…"; "" for
// nothing.
func (c *Called) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch len(c.list) {
	case 0:
		return ""
	case 1:
		return c.list[0].String()
	}
	var b strings.Builder
	for i, t := range c.list {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.Service)
		if t.Resource != "" {
			b.WriteByte('/')
			b.WriteString(t.Resource)
		}
	}
	return b.String()
}

// WithCalled returns a context whose ERP calls are recorded in c.
func WithCalled(ctx context.Context, c *Called) context.Context {
	return context.WithValue(ctx, CalledKey{}, c)
}

// CalledFrom returns the collector ctx carries, or nil.
func CalledFrom(ctx context.Context) *Called {
	c, _ := ctx.Value(CalledKey{}).(*Called)
	return c
}
