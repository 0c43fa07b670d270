// Package backoff retries a call a few times with exponential backoff.
package backoff

import (
	"context"
	"time"
)

// Do calls fn up to attempts times, waiting base, 2*base, ... between calls.
func Do(ctx context.Context, attempts int, base time.Duration, fn func() error) error {
	var err error
	for i := 0; i < attempts; i++ {
		if err = fn(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(base << i):
		}
	}
	return err
}
