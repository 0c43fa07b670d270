package adapters_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/internal/kafkatest"
)

// TestOpenKafkaUnreachable: Open of a kafka:// URL, with a context without
// deadline, against a listener that accepts TCP connections but never
// answers, an unresolvable host and a closed port, fails with an error
// naming the address within kafka.ConnectTimeout instead of hanging.
// Catches an Open whose connection check is bounded only by its caller's
// context, or whose error does not name the address.
func TestOpenKafkaUnreachable(t *testing.T) {
	t.Parallel()
	for name, addr := range kafkatest.DeadAddrs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			done := make(chan error, 1)
			go func() {
				b, err := adapters.Open(context.Background(), "kafka://"+addr)
				if err == nil {
					_ = b.Close()
				}
				done <- err
			}()
			hang := time.NewTimer(2 * kafka.ConnectTimeout)
			defer hang.Stop()
			select {
			case err := <-done:
				require.ErrorContains(t, err, "no Kafka broker answers at "+addr)
			case <-hang.C:
				t.Fatalf("no answer after %s: Open hangs", 2*kafka.ConnectTimeout)
			}
		})
	}
}
