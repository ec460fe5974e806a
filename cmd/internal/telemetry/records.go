package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/erpgate/erpgate/erp/records"
)

// Records wraps store so that each of its writes on a call's way (an
// idempotency key's claim and settlement, a write's invoice lease, an
// approval, a hold, a handover, a case's count) is a client span of the
// call's trace, named "records <Method>" with db.system.name and
// db.operation.name. Reads, and writes made outside any span (the
// background work), make no span.
func Records(store records.Store, tracer trace.Tracer) records.Store {
	system := store.Engine()
	if system == "postgres" {
		system = "postgresql"
	}
	return tracedStore{Store: store, tracer: tracer, system: attribute.String("db.system.name", system)}
}

type tracedStore struct {
	records.Store
	tracer trace.Tracer
	system attribute.KeyValue
}

// start starts the span of method when ctx is in a trace; end ends it
// with err.
func (s tracedStore) start(ctx context.Context, method string) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, nil
	}
	return s.tracer.Start(ctx, "records "+method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(s.system, attribute.String("db.operation.name", method)))
}

func end(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, "")
		span.SetAttributes(attribute.String("error.type", errorType(err)))
	}
	span.End()
}

// errorType names a store error without its text, which may hold SQL.
func errorType(err error) string {
	switch {
	case errors.Is(err, records.ErrNotFound):
		return "not_found"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "store_error"
}

func (s tracedStore) ClaimKey(ctx context.Context, k records.Key, now time.Time, opts records.KeyOptions) (c records.KeyClaim, err error) {
	ctx, span := s.start(ctx, "ClaimKey")
	defer func() { end(span, err) }()
	return s.Store.ClaimKey(ctx, k, now, opts)
}

func (s tracedStore) CompleteKey(ctx context.Context, client, key string, resp records.Response, expires time.Time) (err error) {
	ctx, span := s.start(ctx, "CompleteKey")
	defer func() { end(span, err) }()
	return s.Store.CompleteKey(ctx, client, key, resp, expires)
}

func (s tracedStore) ReleaseKey(ctx context.Context, client, key string) (err error) {
	ctx, span := s.start(ctx, "ReleaseKey")
	defer func() { end(span, err) }()
	return s.Store.ReleaseKey(ctx, client, key)
}

func (s tracedStore) ClaimWrite(ctx context.Context, c records.WriteClaim, now time.Time) (w records.WriteClaimed, err error) {
	ctx, span := s.start(ctx, "ClaimWrite")
	defer func() { end(span, err) }()
	return s.Store.ClaimWrite(ctx, c, now)
}

func (s tracedStore) Settle(ctx context.Context, st records.Settlement) (err error) {
	ctx, span := s.start(ctx, "Settle")
	defer func() { end(span, err) }()
	return s.Store.Settle(ctx, st)
}

func (s tracedStore) ClaimInvoice(ctx context.Context, l records.InvoiceLease, now time.Time, lease time.Duration) (c records.LeaseClaim, err error) {
	ctx, span := s.start(ctx, "ClaimInvoice")
	defer func() { end(span, err) }()
	return s.Store.ClaimInvoice(ctx, l, now, lease)
}

func (s tracedStore) ReleaseInvoice(ctx context.Context, invoiceID, holder string) (err error) {
	ctx, span := s.start(ctx, "ReleaseInvoice")
	defer func() { end(span, err) }()
	return s.Store.ReleaseInvoice(ctx, invoiceID, holder)
}

func (s tracedStore) CreateApproval(ctx context.Context, a records.Approval, notify bool) (_ records.Approval, created bool, err error) {
	ctx, span := s.start(ctx, "CreateApproval")
	defer func() { end(span, err) }()
	return s.Store.CreateApproval(ctx, a, notify)
}

func (s tracedStore) DecideApproval(ctx context.Context, id, status, decidedBy, reason string, at time.Time) (_ records.Approval, err error) {
	ctx, span := s.start(ctx, "DecideApproval")
	defer func() { end(span, err) }()
	return s.Store.DecideApproval(ctx, id, status, decidedBy, reason, at)
}

func (s tracedStore) CreateHold(ctx context.Context, h records.Hold) (_ records.Hold, created bool, err error) {
	ctx, span := s.start(ctx, "CreateHold")
	defer func() { end(span, err) }()
	return s.Store.CreateHold(ctx, h)
}

func (s tracedStore) ReleaseHold(ctx context.Context, ev records.HoldEvent) (err error) {
	ctx, span := s.start(ctx, "ReleaseHold")
	defer func() { end(span, err) }()
	return s.Store.ReleaseHold(ctx, ev)
}

func (s tracedStore) CreateHandover(ctx context.Context, h records.Handover, notify bool) (_ records.Handover, created bool, err error) {
	ctx, span := s.start(ctx, "CreateHandover")
	defer func() { end(span, err) }()
	return s.Store.CreateHandover(ctx, h, notify)
}

func (s tracedStore) TouchCase(ctx context.Context, ref records.CaseRef, runID string) (_ records.Case, err error) {
	ctx, span := s.start(ctx, "TouchCase")
	defer func() { end(span, err) }()
	return s.Store.TouchCase(ctx, ref, runID)
}

func (s tracedStore) RecordPosting(ctx context.Context, invoiceID, approvalID, runID string, at time.Time) (_ records.Case, err error) {
	ctx, span := s.start(ctx, "RecordPosting")
	defer func() { end(span, err) }()
	return s.Store.RecordPosting(ctx, invoiceID, approvalID, runID, at)
}
