package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/erpgate/erpgate/erp/records"
)

// storeWork is the time one request spent inside the records store: the
// sum over its store calls, from entry to return, in all and by method.
type storeWork struct {
	mu       sync.Mutex
	total    time.Duration
	calls    int
	byMethod map[string]time.Duration
}

func (w *storeWork) add(method string, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total += d
	w.calls++
	if w.byMethod == nil {
		w.byMethod = map[string]time.Duration{}
	}
	w.byMethod[method] += d
}

type storeWorkKey struct{}

// storeClock is a records.Store that adds the time of every call to the
// storeWork of the request the call's context belongs to. Calls without
// one (the background work) are passed on untimed.
type storeClock struct {
	records.Store
}

var _ records.Store = storeClock{}

// since adds the time from start to now, spent in method, to ctx's
// request, if any.
func since(ctx context.Context, method string, start time.Time) {
	if w, ok := ctx.Value(storeWorkKey{}).(*storeWork); ok {
		w.add(method, time.Since(start))
	}
}

func (s storeClock) CreateApproval(ctx context.Context, a records.Approval, notify bool) (records.Approval, bool, error) {
	defer since(ctx, "CreateApproval", time.Now())
	return s.Store.CreateApproval(ctx, a, notify)
}

func (s storeClock) Approval(ctx context.Context, id string) (records.Approval, error) {
	defer since(ctx, "Approval", time.Now())
	return s.Store.Approval(ctx, id)
}

func (s storeClock) DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (records.Approval, error) {
	defer since(ctx, "DecideApproval", time.Now())
	return s.Store.DecideApproval(ctx, id, status, decidedBy, reason, at)
}

func (s storeClock) ListApprovals(ctx context.Context, f records.ApprovalFilter) ([]records.Approval, error) {
	defer since(ctx, "ListApprovals", time.Now())
	return s.Store.ListApprovals(ctx, f)
}

func (s storeClock) CreateHold(ctx context.Context, h records.Hold) (records.Hold, bool, error) {
	defer since(ctx, "CreateHold", time.Now())
	return s.Store.CreateHold(ctx, h)
}

func (s storeClock) Hold(ctx context.Context, id string) (records.Hold, error) {
	defer since(ctx, "Hold", time.Now())
	return s.Store.Hold(ctx, id)
}

func (s storeClock) ListHolds(ctx context.Context, f records.HoldFilter) ([]records.Hold, error) {
	defer since(ctx, "ListHolds", time.Now())
	return s.Store.ListHolds(ctx, f)
}

func (s storeClock) ClaimDueHolds(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]records.Hold, error) {
	defer since(ctx, "ClaimDueHolds", time.Now())
	return s.Store.ClaimDueHolds(ctx, now, limit, lease)
}

func (s storeClock) RescheduleHold(ctx context.Context, id string, next time.Time, checked bool, at time.Time) error {
	defer since(ctx, "RescheduleHold", time.Now())
	return s.Store.RescheduleHold(ctx, id, next, checked, at)
}

func (s storeClock) ReleaseHold(ctx context.Context, ev records.HoldEvent) error {
	defer since(ctx, "ReleaseHold", time.Now())
	return s.Store.ReleaseHold(ctx, ev)
}

func (s storeClock) HoldAwaiting(ctx context.Context, holdID string, awaiting []records.POItemRef, at time.Time) error {
	defer since(ctx, "HoldAwaiting", time.Now())
	return s.Store.HoldAwaiting(ctx, holdID, awaiting, at)
}

func (s storeClock) HoldEvents(ctx context.Context, holdID string) ([]records.HoldEvent, error) {
	defer since(ctx, "HoldEvents", time.Now())
	return s.Store.HoldEvents(ctx, holdID)
}

func (s storeClock) CreateHandover(ctx context.Context, h records.Handover, notify bool) (records.Handover, bool, error) {
	defer since(ctx, "CreateHandover", time.Now())
	return s.Store.CreateHandover(ctx, h, notify)
}

func (s storeClock) Handover(ctx context.Context, id string) (records.Handover, error) {
	defer since(ctx, "Handover", time.Now())
	return s.Store.Handover(ctx, id)
}

func (s storeClock) ListHandovers(ctx context.Context, f records.HandoverFilter) ([]records.Handover, error) {
	defer since(ctx, "ListHandovers", time.Now())
	return s.Store.ListHandovers(ctx, f)
}

func (s storeClock) TakeHandover(ctx context.Context, id, by string, at time.Time) (records.Handover, error) {
	defer since(ctx, "TakeHandover", time.Now())
	return s.Store.TakeHandover(ctx, id, by, at)
}

func (s storeClock) ResolveHandover(ctx context.Context, id, by, note string, at time.Time) (records.Handover, error) {
	defer since(ctx, "ResolveHandover", time.Now())
	return s.Store.ResolveHandover(ctx, id, by, note, at)
}

func (s storeClock) ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]records.Delivery, error) {
	defer since(ctx, "ClaimDeliveries", time.Now())
	return s.Store.ClaimDeliveries(ctx, now, limit, lease)
}

func (s storeClock) DeliveryDone(ctx context.Context, id string, at time.Time) error {
	defer since(ctx, "DeliveryDone", time.Now())
	return s.Store.DeliveryDone(ctx, id, at)
}

func (s storeClock) DeliveryFailed(ctx context.Context, id string, next time.Time, lastErr string) error {
	defer since(ctx, "DeliveryFailed", time.Now())
	return s.Store.DeliveryFailed(ctx, id, next, lastErr)
}

func (s storeClock) ClaimKey(ctx context.Context, k records.Key, now time.Time, opts records.KeyOptions) (records.KeyClaim, error) {
	defer since(ctx, "ClaimKey", time.Now())
	return s.Store.ClaimKey(ctx, k, now, opts)
}

func (s storeClock) CompleteKey(ctx context.Context, client, key string, resp records.Response, expires time.Time) error {
	defer since(ctx, "CompleteKey", time.Now())
	return s.Store.CompleteKey(ctx, client, key, resp, expires)
}

func (s storeClock) ReleaseKey(ctx context.Context, client, key string) error {
	defer since(ctx, "ReleaseKey", time.Now())
	return s.Store.ReleaseKey(ctx, client, key)
}

func (s storeClock) DeleteExpiredKeys(ctx context.Context, now time.Time) (int, error) {
	defer since(ctx, "DeleteExpiredKeys", time.Now())
	return s.Store.DeleteExpiredKeys(ctx, now)
}

func (s storeClock) ClaimInvoice(ctx context.Context, l records.InvoiceLease, now time.Time, lease time.Duration) (records.LeaseClaim, error) {
	defer since(ctx, "ClaimInvoice", time.Now())
	return s.Store.ClaimInvoice(ctx, l, now, lease)
}

func (s storeClock) ReleaseInvoice(ctx context.Context, invoiceID, holder string) error {
	defer since(ctx, "ReleaseInvoice", time.Now())
	return s.Store.ReleaseInvoice(ctx, invoiceID, holder)
}

func (s storeClock) ClaimWrite(ctx context.Context, c records.WriteClaim, now time.Time) (records.WriteClaimed, error) {
	defer since(ctx, "ClaimWrite", time.Now())
	return s.Store.ClaimWrite(ctx, c, now)
}

func (s storeClock) Settle(ctx context.Context, st records.Settlement) error {
	defer since(ctx, "Settle", time.Now())
	return s.Store.Settle(ctx, st)
}

func (s storeClock) Case(ctx context.Context, invoiceID string) (records.Case, error) {
	defer since(ctx, "Case", time.Now())
	return s.Store.Case(ctx, invoiceID)
}

func (s storeClock) CaseEvents(ctx context.Context, invoiceID string, limit int) ([]records.CaseEvent, error) {
	defer since(ctx, "CaseEvents", time.Now())
	return s.Store.CaseEvents(ctx, invoiceID, limit)
}

func (s storeClock) TouchCase(ctx context.Context, ref records.CaseRef, runID string) (records.Case, error) {
	defer since(ctx, "TouchCase", time.Now())
	return s.Store.TouchCase(ctx, ref, runID)
}

func (s storeClock) RecordPosting(ctx context.Context, invoiceID, approvalID, runID string, at time.Time) (records.Case, error) {
	defer since(ctx, "RecordPosting", time.Now())
	return s.Store.RecordPosting(ctx, invoiceID, approvalID, runID, at)
}

func (s storeClock) AppendAudit(ctx context.Context, e records.AuditEntry) error {
	defer since(ctx, "AppendAudit", time.Now())
	return s.Store.AppendAudit(ctx, e)
}

func (s storeClock) Audit(ctx context.Context, f records.AuditFilter) ([]records.AuditEntry, error) {
	defer since(ctx, "Audit", time.Now())
	return s.Store.Audit(ctx, f)
}

func (s storeClock) Ping(ctx context.Context) error {
	defer since(ctx, "Ping", time.Now())
	return s.Store.Ping(ctx)
}

// workLog gives every request a storeWork and keeps it under the
// request's X-Request-Id once the request is served, for the client to
// join with the latency it measured.
type workLog struct {
	next http.Handler
	mu   sync.Mutex
	byID map[string]*storeWork
}

func newWorkLog(next http.Handler) *workLog {
	return &workLog{next: next, byID: map[string]*storeWork{}}
}

func (l *workLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &storeWork{}
	l.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), storeWorkKey{}, sw)))
	if id := r.Header.Get("X-Request-Id"); id != "" {
		l.mu.Lock()
		l.byID[id] = sw
		l.mu.Unlock()
	}
}

// take returns and forgets the store work of the request with id. The
// handler keeps it before its answer is flushed, so it is there once the
// client has the answer; take waits a little all the same.
func (l *workLog) take(id string) (*storeWork, bool) {
	for range 100 {
		l.mu.Lock()
		sw, ok := l.byID[id]
		delete(l.byID, id)
		l.mu.Unlock()
		if ok {
			return sw, true
		}
		time.Sleep(time.Millisecond)
	}
	return nil, false
}

func (s storeClock) CountApprovals(ctx context.Context, f records.ApprovalFilter) (int, error) {
	defer since(ctx, "CountApprovals", time.Now())
	return s.Store.CountApprovals(ctx, f)
}

func (s storeClock) CreateSession(ctx context.Context, token string, ss records.Session) error {
	defer since(ctx, "CreateSession", time.Now())
	return s.Store.CreateSession(ctx, token, ss)
}

func (s storeClock) Session(ctx context.Context, token string) (records.Session, error) {
	defer since(ctx, "Session", time.Now())
	return s.Store.Session(ctx, token)
}

func (s storeClock) EndSession(ctx context.Context, token string, at time.Time) error {
	defer since(ctx, "EndSession", time.Now())
	return s.Store.EndSession(ctx, token, at)
}

func (s storeClock) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	defer since(ctx, "DeleteExpiredSessions", time.Now())
	return s.Store.DeleteExpiredSessions(ctx, now)
}
