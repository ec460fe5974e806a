package erp

import (
	"context"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// RunReads is a Client whose invoice reads one agent run shares between its
// requests: the invoice a run's get_invoice read is the invoice its
// three-way match and its approval request decide on, if they come within
// the TTL, so that deciding an invoice reads it from the ERP once instead
// of once per step. Only requests marked with ShareRunRead are answered
// from what the run read, and only what the same run read: a run never
// sees another's reads. A request marked with KeepRunRead reads the ERP and
// keeps the answer for its run. An unmarked request, which is every write
// and its read-back, and every call of the gateway's own, reads the ERP.
//
// A posting is never decided on a shared read: PostInvoice reads the
// invoice afresh and posts only while it holds the approved amount. A
// posting through RunReads forgets the invoice for every run.
type RunReads struct {
	Client
	ttl     time.Duration
	now     func() time.Time
	observe func(hit bool)
	kept    *lru.Cache[string, runRead]
	// posted is when each invoice was last posted through c: a read
	// begun before then is not kept, since it may precede the posting.
	posted *lru.Cache[string, time.Time]
}

// runRead is an invoice as one run read it.
type runRead struct {
	run string
	at  time.Time
	inv Invoice
}

// RunReadsOptions configures NewRunReads.
type RunReadsOptions struct {
	// TTL is how long a run's read serves its next requests. Required
	// (a RunReads without one would share nothing).
	TTL time.Duration
	// Size bounds the invoices kept, the least recently used going first.
	// Zero: DefaultRunReadsSize.
	Size int
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// Observe, when not nil, is told of every marked read whether the
	// run's read answered it.
	Observe func(hit bool)
}

// DefaultRunReadsSize is how many invoices a RunReads keeps at most by
// default: a few KiB each, a few tens of MiB at most.
const DefaultRunReadsSize = 10_000

// NewRunReads returns c sharing invoice reads within a run.
func NewRunReads(c Client, opts RunReadsOptions) *RunReads {
	if opts.Size <= 0 {
		opts.Size = DefaultRunReadsSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	kept, err := lru.New[string, runRead](opts.Size)
	if err != nil {
		panic(err) // only for a size below one, ruled out above
	}
	posted, err := lru.New[string, time.Time](opts.Size)
	if err != nil {
		panic(err)
	}
	return &RunReads{Client: c, ttl: opts.TTL, now: opts.Now, observe: opts.Observe, kept: kept, posted: posted}
}

type runReadKey struct{}

// runMark is how a request reads the invoice for its run.
type runMark struct {
	run   string
	share bool
}

// KeepRunRead marks a request of the run that reads the invoice from the
// ERP and keeps it for the run's next requests. run identifies the run
// (the caller's client and run id); "" leaves ctx as it is.
func KeepRunRead(ctx context.Context, run string) context.Context {
	if run == "" {
		return ctx
	}
	return context.WithValue(ctx, runReadKey{}, runMark{run: run})
}

// ShareRunRead marks a request of the run that may decide on the invoice
// as the run read it within the TTL; what it reads from the ERP it keeps.
// "" leaves ctx as it is.
func ShareRunRead(ctx context.Context, run string) context.Context {
	if run == "" {
		return ctx
	}
	return context.WithValue(ctx, runReadKey{}, runMark{run: run, share: true})
}

// Invoice answers a request marked with ShareRunRead from its run's read
// when that is fresh, and otherwise reads the ERP, keeping the answer for
// a marked request's run.
func (c *RunReads) Invoice(ctx context.Context, id string) (Invoice, error) {
	mark, _ := ctx.Value(runReadKey{}).(runMark)
	if mark.run == "" {
		return c.Client.Invoice(ctx, id)
	}
	if mark.share {
		r, ok := c.kept.Get(id)
		hit := ok && r.run == mark.run && c.now().Sub(r.at) < c.ttl
		if c.observe != nil {
			c.observe(hit)
		}
		if hit {
			return copyInvoice(r.inv), nil
		}
	}
	at := c.now()
	inv, err := c.Client.Invoice(ctx, id)
	if err != nil {
		return inv, err
	}
	if t, ok := c.posted.Get(id); !ok || t.Before(at) {
		c.kept.Add(id, runRead{run: mark.run, at: at, inv: copyInvoice(inv)})
	}
	return inv, nil
}

// InvoiceForWrite reads the invoice a write follows from the ERP, as the
// wrapped Client does.
func (c *RunReads) InvoiceForWrite(ctx context.Context, id string) (Invoice, error) {
	if w, ok := c.Client.(invoiceForWriter); ok {
		return w.InvoiceForWrite(ctx, id)
	}
	return c.Client.Invoice(ctx, id)
}

// PostInvoice posts the invoice and forgets every run's read of it, before
// the post and after it, and a read begun before the post ended is not
// kept when it ends: no run decides on the invoice as it was before it was
// posted.
func (c *RunReads) PostInvoice(ctx context.Context, inv Invoice, key string) (Posting, error) {
	c.posted.Add(inv.ID, c.now())
	c.kept.Remove(inv.ID)
	p, err := c.Client.PostInvoice(ctx, inv, key)
	c.posted.Add(inv.ID, c.now())
	c.kept.Remove(inv.ID)
	return p, err
}

func copyInvoice(inv Invoice) Invoice {
	inv.Lines = slices.Clone(inv.Lines)
	return inv
}
