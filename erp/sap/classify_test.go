package sap

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/erpgate/erpgate/erp"
	"github.com/erpgate/erpgate/retry"
)

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	tests := []struct {
		err   error
		write bool
		want  retry.Class
	}{
		{&erp.UpstreamError{Status: 503, Transient: true}, false, retry.Transient},
		{&erp.UpstreamError{Status: 502, Transient: true}, false, retry.Transient},
		{&erp.UpstreamError{Status: 502, Transient: true}, true, retry.OutcomeUnknown},
		{&erp.UpstreamError{Status: 504, Transient: true}, true, retry.OutcomeUnknown},
		{&erp.UpstreamError{Status: 429, Transient: true}, true, retry.Transient},
		{&erp.UpstreamError{Transient: true, Err: dial}, true, retry.Transient},
		{&erp.UpstreamError{Status: 200}, false, retry.Transient},
		{&erp.UpstreamError{Status: 200}, true, retry.OutcomeUnknown},
		{&erp.UpstreamError{Status: 200, Err: &erp.DataError{Entity: erp.EntityInvoice}}, false, retry.Permanent},
		{&retry.Error{Attempts: 1, Err: &erp.UpstreamError{Status: 200, Err: &erp.DataError{}}}, false, retry.Permanent},
		{&erp.UpstreamError{Status: 200, Err: &erp.DataError{}}, true, retry.OutcomeUnknown},
		{&erp.DataError{Entity: erp.EntitySupplier}, false, retry.Permanent},
		{&erp.UpstreamError{Timeout: true}, false, retry.Transient},
		{&erp.UpstreamError{Status: 400}, true, retry.Permanent},
		{&erp.UpstreamError{Status: 401, Config: true}, false, retry.Permanent},
		{&erp.UpstreamError{Timeout: true, Err: context.Canceled}, false, retry.Permanent},
		{&erp.NotFoundError{Entity: erp.EntityInvoice, ID: "1"}, false, retry.Permanent},
		{errors.New("other"), false, retry.Permanent},
	}
	for _, tt := range tests {
		if got := Classify(tt.err, tt.write); got != tt.want {
			t.Errorf("Classify(%v, write=%v) = %s, want %s", tt.err, tt.write, got, tt.want)
		}
	}
}

func TestResult(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{&erp.UpstreamError{Status: 400, MessageIDs: []string{"M8/108"}}, "business"},
		{&erp.NotFoundError{Entity: erp.EntityInvoice, ID: "1"}, "business"},
		{&erp.UpstreamError{Status: 503, Transient: true}, "transient"},
		{&erp.UpstreamError{Timeout: true}, "timeout"},
		{&erp.UpstreamError{Err: errors.New("tls: bad certificate")}, "error"},
		{&erp.UpstreamError{Status: 200, Err: &erp.DataError{Entity: erp.EntityInvoice}}, "error"},
	}
	for _, tt := range tests {
		if got := Result(tt.err); got != tt.want {
			t.Errorf("Result(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
