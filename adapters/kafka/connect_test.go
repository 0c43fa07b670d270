package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/kafkatest"
)

// TestNewUnreachable: New with a context without deadline, against a
// listener that accepts TCP connections but never answers, an unresolvable
// host and a closed port, fails with an error naming the address within
// ConnectTimeout instead of hanging. Catches a New whose first requests are
// bounded only by its caller's context (the silent listener held it for
// 40 s, franz-go's request retries), and an error that names the host but
// not the address.
func TestNewUnreachable(t *testing.T) {
	t.Parallel()
	for name, addr := range kafkatest.DeadAddrs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := boundedCall(t, func() error {
				_, err := New(context.Background(), Config{Brokers: []string{addr}, Topic: "t", Group: "g", Logger: testLogger()})
				return err
			})
			require.ErrorIs(t, err, ErrTopicCreation)
			require.ErrorContains(t, err, addr, "the error names the address")
		})
	}
}

// boundedCall runs f and returns its error, failing t when f has not
// returned after twice ConnectTimeout (it hangs).
func boundedCall(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	hang := time.NewTimer(2 * ConnectTimeout)
	defer hang.Stop()
	select {
	case err := <-done:
		return err
	case <-hang.C:
		t.Fatalf("no answer after %s: it hangs", 2*ConnectTimeout)
		return nil
	}
}
