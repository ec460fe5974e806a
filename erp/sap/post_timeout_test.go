package sap

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sap/sapspec"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/errmap"
	"github.com/erpgate/erpgate/retry"
)

// stillClock gives p a clock that stands still but for the runner's
// waits, which pass at once: the reads made while a write may still be
// running take no time.
func stillClock(p retry.Policy) retry.Policy {
	var mu sync.Mutex
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	p.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
		return ctx.Err()
	}
	return p
}

// TestSlowPostIsWaitedFor: a Post that takes far longer than a read may
// is waited for, under the write timeout, and sent once.
func TestSlowPostIsWaitedFor(t *testing.T) {
	rule := sim.FaultRule{Service: erp.ServiceSupplierInvoice, Kind: sim.FaultHang, Method: http.MethodPost, Path: "Post",
		DelayMS: 1500}
	s, c := newSim(t, sim.Options{Faults: []sim.FaultRule{rule}, RecordCalls: true},
		retry.Policy{AttemptTimeout: 200 * time.Millisecond, MaxAttempts: 3})
	start := time.Now()
	p, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600101", FiscalYear: "2026"}, "k")
	took := time.Since(start)
	if err != nil || p.Status != erp.InvoicePosted || p.AlreadyPosted {
		t.Fatalf("got %+v, %v, want posted by this call", p, err)
	}
	t.Logf("a Post that takes 1.5 s, with 200 ms for a read: posted in %v", took.Round(time.Millisecond))
	wantCalls(t, "post", simCalls(s), "GET  +fetch", postCall, readBackCall("5105600101"))
	if n := len(s.Ledger().Postings); n != 1 {
		t.Errorf("postings: %d, want 1", n)
	}
}

// stillPosting is an ERP whose Post goes on after the client gives up:
// the invoice reads as posted once the posting is done, and a Post of a
// posted invoice is answered M8/255.
type stillPosting struct {
	mu       sync.Mutex
	postedAt time.Time // zero until a Post came
	posts    int
	reads    int
	// takes is how long a posting takes; breaks closes the connection at
	// once instead of keeping it until the posting is done.
	takes  time.Duration
	breaks bool
}

func (e *stillPosting) handle(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	posted := !e.postedAt.IsZero() && !time.Now().Before(e.postedAt)
	if r.Method == http.MethodGet {
		e.reads++
		e.mu.Unlock()
		status := "A"
		if posted {
			status = "5"
		}
		if strings.HasSuffix(r.URL.Path, "A_SupplierInvoice") {
			writeJSON(w, 200, list(invoiceJSON("5105600102", "2026", status, "")))
			return
		}
		writeJSON(w, 200, entityJSON(invoiceJSON("5105600102", "2026", status, "")))
		return
	}
	e.posts++
	if posted {
		e.mu.Unlock()
		writeJSON(w, 400, alreadyPostedJSON)
		return
	}
	if e.postedAt.IsZero() {
		e.postedAt = time.Now().Add(e.takes)
	}
	done := e.postedAt
	e.mu.Unlock()
	if e.breaks {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	select {
	case <-time.After(time.Until(done)):
		writeJSON(w, 200, functionJSON(functionPost, true))
	case <-r.Context().Done():
	}
}

func (e *stillPosting) counts() (posts, reads int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.posts, e.reads
}

// TestPostStillRunningIsWaitedFor: a Post whose connection breaks while
// the ERP goes on posting is never sent again; the reads of the invoice
// wait for the posting and settle it.
func TestPostStillRunningIsWaitedFor(t *testing.T) {
	e := &stillPosting{takes: 300 * time.Millisecond, breaks: true}
	f := newFake(t, e.handle)
	c := f.client(Options{Runner: retry.New(retry.Policy{AttemptTimeout: time.Second, WriteTimeout: 5 * time.Second,
		InitialInterval: 20 * time.Millisecond, MaxInterval: 50 * time.Millisecond, Breaker: retry.BreakerSettings{Disabled: true}}, nil)})
	p, err := c.PostInvoice(context.Background(), erp.Invoice{ID: "5105600102", FiscalYear: "2026"}, "k")
	if err != nil || p.Status != erp.InvoicePosted || p.AlreadyPosted {
		t.Fatalf("got %+v, %v, want posted by this call", p, err)
	}
	if posts, reads := e.counts(); posts != 1 || reads < 2 {
		t.Errorf("%d Posts and %d reads, want one Post and the reads that waited for it", posts, reads)
	}
}

// TestPostTimedOutStaysUnknown: a Post that outlasts the write timeout,
// while the ERP goes on posting, is not sent again: it is
// ERP_OUTCOME_UNKNOWN, hold and re-check. A repeat reads the invoice
// posted, and a Post of it is settled as posted before.
func TestPostTimedOutStaysUnknown(t *testing.T) {
	e := &stillPosting{takes: time.Minute}
	f := newFake(t, e.handle)
	c := f.client(Options{Runner: retry.New(retry.Policy{AttemptTimeout: time.Second,
		WriteTimeout: 200 * time.Millisecond, Breaker: retry.BreakerSettings{Disabled: true}}, nil)})
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	_, err := c.PostInvoice(context.Background(), inv, "k")
	var re *retry.Error
	if !errors.As(err, &re) || !re.Unconfirmed || re.Attempts != 1 {
		t.Fatalf("got %v, want one unconfirmed attempt", err)
	}
	if e := errmap.Map(err); e.Code != errmap.ERPOutcomeUnknown || e.NextAction != errmap.HoldAndRecheck || e.Retryable {
		t.Errorf("mapped to %s %s retryable %v, want ERP_OUTCOME_UNKNOWN, hold_and_recheck, not retryable", e.Code, e.NextAction, e.Retryable)
	}
	// The attempt had the write's time: one read settles what it can.
	if posts, reads := e.counts(); posts != 1 || reads != 1 {
		t.Errorf("%d Posts and %d reads, want one of each", posts, reads)
	}

	// The ERP finishes the posting later.
	e.mu.Lock()
	e.postedAt = time.Now()
	e.mu.Unlock()
	got, err := c.InvoiceForWrite(context.Background(), inv.ID)
	if err != nil || got.Status != erp.InvoicePosted {
		t.Fatalf("read before a repeat: %q, %v, want posted", got.Status, err)
	}
	p, err := c.PostInvoice(context.Background(), inv, "k")
	if err != nil || !p.AlreadyPosted || p.Status != erp.InvoicePosted {
		t.Errorf("Post of the posted invoice: %+v, %v, want settled as posted before", p, err)
	}
}

// TestPostWithoutCSRF: an ERP that hands out no CSRF token (SAP CAP, a
// system with the check switched off) gets its writes without one; the
// read before the first write and one fetch find that out, and later
// writes fetch nothing. The client says so once.
func TestPostWithoutCSRF(t *testing.T) {
	s := sim.New(sim.Options{NoCSRF: true, RecordCalls: true})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	c, err := New(srv.URL, Options{Runner: retry.New(retry.Policy{MaxAttempts: 1}, nil), HTTPClient: sapspec.CheckedHTTPClient(t),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, id := range []string{"5105600101", "5105600102"} {
		inv, err := c.InvoiceForWrite(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.PostInvoice(ctx, inv, "")
		if err != nil || p.Status != erp.InvoicePosted || p.AlreadyPosted {
			t.Fatalf("post %s: %+v, %v, want posted", id, p, err)
		}
		if i == 0 {
			wantCalls(t, "first post", simCalls(s), readInvoiceCall+" +fetch", "GET  +fetch", postCall, readBackCall(id))
		} else {
			wantCalls(t, "second post", simCalls(s), readInvoiceCall, postCall, readBackCall(id))
		}
	}
	if n := len(s.Ledger().Postings); n != 2 {
		t.Errorf("postings: %d, want 2", n)
	}
	if n := strings.Count(logs.String(), "no CSRF token"); n != 1 || !strings.Contains(logs.String(), "service=supplier_invoice") {
		t.Errorf("log: %q, want one warning naming the service", logs.String())
	}
}

// switchableCSRF is an ERP whose CSRF check can be switched on: off, a
// fetch brings no token and a write needs none; on, a write needs the
// token a fetch hands out.
type switchableCSRF struct {
	mu      sync.Mutex
	on      bool
	fetches int
	writes  []string // the token each write carried
}

func (e *switchableCSRF) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.Method == http.MethodGet {
		if r.Header.Get("X-CSRF-Token") == "Fetch" {
			e.fetches++
			if e.on {
				w.Header().Set("X-CSRF-Token", "tok")
			}
		}
		writeJSON(w, 200, entityJSON(invoiceJSON("5105600102", "2026", "5", "")))
		return
	}
	tok := r.Header.Get("X-CSRF-Token")
	e.writes = append(e.writes, tok)
	if e.on && tok != "tok" {
		w.Header().Set("X-CSRF-Token", "Required")
		writeJSON(w, http.StatusForbidden, `{"error":{"code":"/IWFND/CM_CSRF/001","message":{"lang":"en","value":"CSRF token validation failed"}}}`)
		return
	}
	writeJSON(w, 200, functionJSON(functionPost, true))
}

// TestCSRFSwitchedOn: a system that took writes without a token and then
// asks for one gets a fresh fetch and the write once more, with the token.
func TestCSRFSwitchedOn(t *testing.T) {
	e := &switchableCSRF{}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, Options{Runner: retry.New(oneAttempt(2*time.Second), nil)})
	if err != nil {
		t.Fatal(err)
	}
	inv := erp.Invoice{ID: "5105600102", FiscalYear: "2026"}
	if _, err := c.PostInvoice(context.Background(), inv, ""); err != nil {
		t.Fatalf("post without CSRF: %v", err)
	}
	e.mu.Lock()
	e.on = true
	e.mu.Unlock()
	if _, err := c.PostInvoice(context.Background(), inv, ""); err != nil {
		t.Fatalf("post once the check is on: %v", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fetches != 2 || !slices.Equal(e.writes, []string{"", "", "tok"}) {
		t.Errorf("%d fetches, writes with tokens %q; want 2 fetches and the refused write repeated with the token", e.fetches, e.writes)
	}
}
