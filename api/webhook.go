package api

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Webhook delivers handovers to a URL, for a ticketing or chat system.
// Each delivery is a POST of JSON, repeated with exponential backoff on a
// network error, a 429 or a 5xx.
type Webhook struct {
	// URL receives the POSTs. Required.
	URL string
	// Client makes the requests. Default: a client with a 5s timeout.
	Client *http.Client
	// Attempts bounds the tries of one delivery. Default 3.
	Attempts int
	// Logger receives a line per failed delivery. Default: discard.
	Logger *slog.Logger
}

// Deliver POSTs payload, retrying transient failures.
func (w *Webhook) Deliver(ctx context.Context, payload any) error {
	body, err := marshal(payload)
	if err != nil {
		return err
	}
	client := w.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	attempts := w.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	b := backoff.WithContext(backoff.WithMaxRetries(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond), backoff.WithMaxInterval(time.Second)), uint64(attempts-1)), ctx)
	err = backoff.Retry(func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
		if err != nil {
			return backoff.Permanent(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return nil
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			return fmt.Errorf("webhook answered %d", resp.StatusCode)
		}
		return backoff.Permanent(fmt.Errorf("webhook answered %d", resp.StatusCode))
	}, b)
	if err != nil && w.Logger != nil {
		w.Logger.ErrorContext(ctx, "handover webhook failed", "error", err)
	}
	return err
}
