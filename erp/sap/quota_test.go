package sap

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/erp/sim"
	"github.com/erpgate/erpgate/retry"
)

// countingQuota is the ERP's quota, counting per service the slots it
// gave and the requests it was told were written.
type countingQuota struct {
	q retry.Quota

	mu                sync.Mutex
	acquired, written map[retry.Service]int
}

func (c *countingQuota) Acquire(ctx context.Context, svc retry.Service, wait, hold time.Duration) (func(), func(), error) {
	sent, release, err := c.q.Acquire(ctx, svc, wait, hold)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	c.acquired[svc]++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.written[svc]++
			c.mu.Unlock()
		})
		sent()
	}, release, nil
}

// TestQuotaCountsEveryRequest: every request the client sends toward a
// service takes a slot of the ERP's quota and is told to it as written:
// reads, the CSRF token fetched with a read and on its own after a stale
// token, the Post and its read back, the repeated Post, and a retry.
func TestQuotaCountsEveryRequest(t *testing.T) {
	cq := &countingQuota{q: retry.NewLocalQuota(retry.QuotaSettings{Rate: 1000}),
		acquired: map[retry.Service]int{}, written: map[retry.Service]int{}}
	s, c := newSim(t, sim.Options{RecordCalls: true}, retry.Policy{MaxAttempts: 3, InitialInterval: time.Millisecond,
		MaxInterval: time.Millisecond, Quota: cq})
	ctx := context.Background()
	post := func(id string) {
		t.Helper()
		inv, err := c.InvoiceForWrite(ctx, id)
		if err == nil {
			_, err = c.PostInvoice(ctx, inv, "key-"+id)
		}
		if err != nil {
			t.Fatalf("post %s: %v", id, err)
		}
	}
	if _, err := c.PurchaseOrder(ctx, "4500018822"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Supplier(ctx, "100042"); err != nil {
		t.Fatal(err)
	}
	post("5105600101")
	s.ExpireTokens()
	post("5105600102")
	if err := s.InjectFault(sim.FaultRule{Service: erp.ServicePurchaseOrder, Status: http.StatusServiceUnavailable, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PurchaseOrder(ctx, "4500018822"); err != nil {
		t.Fatalf("purchase order after one 503: %v", err)
	}

	atERP := map[retry.Service]int{}
	fetches := 0
	for _, call := range s.Calls() {
		atERP[retry.Service(call.Service)]++
		if call.Fetch {
			fetches++
		}
	}
	if fetches < 2 {
		t.Errorf("%d CSRF token fetches, want the one with the first read and the one after the stale token", fetches)
	}
	if atERP[retry.Service(erp.ServicePurchaseOrder)] != 3 {
		t.Errorf("%d purchase order requests, want 3 (a read, and a read retried once)", atERP[retry.Service(erp.ServicePurchaseOrder)])
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	for svc, n := range atERP {
		if cq.acquired[svc] != n || cq.written[svc] != n {
			t.Errorf("%s: the ERP saw %d requests, the quota gave %d slots and was told of %d written", svc, n, cq.acquired[svc], cq.written[svc])
		}
	}
	t.Logf("requests at the ERP by service %v, CSRF fetches %d", atERP, fetches)
}
